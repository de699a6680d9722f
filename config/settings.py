"""Settings, all read from the environment (see README's Settings table).

The embedded default needs nothing but Python: SQLite and media under var/, and a Celery broker
on kombu's filesystem transport. Production sets DATABASE_URL, REDIS_URL and friends.
"""

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_list, env_str, parse_base_urls

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var"))).resolve()

DEBUG = env_bool("DEBUG", False)
# The fallback key only suits a local machine; docker/compose.yml sets a real one.
SECRET_KEY = env_str("SECRET_KEY", "insecure-local-key-set-SECRET_KEY-in-production")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
PORT = env_int("PORT", 8000, minimum=1, maximum=65535)

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
    "judge",
    "scoring",
    "submissions",
    "leaderboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
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


def _database(url: str) -> dict:
    try:
        config = dj_database_url.parse(url, conn_max_age=60)
    except Exception as exc:  # dj-database-url raises several types for bad URLs
        raise ImproperlyConfigured(f"DATABASE_URL={url!r} cannot be used: {exc}") from None
    if config.get("ENGINE") == "django.db.backends.sqlite3":
        Path(config["NAME"]).parent.mkdir(parents=True, exist_ok=True)
        config["CONN_MAX_AGE"] = 0
        config["OPTIONS"] = {"timeout": 30}
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
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns about a missing folder
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media"))).resolve()
MEDIA_URL = "/media/"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "submissions:list"
LOGOUT_REDIRECT_URL = "leaderboard:home"
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "leaderboard@localhost")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "submissions.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "UNAUTHENTICATED_RESPONSE_STATUS": 401,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "config.api.errors_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Audio Leaderboard API",
    "DESCRIPTION": "Boards (read, public) and submissions (token: `Authorization: Token KEY`).",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
}

# Uploads: anything above FILE_UPLOAD_MAX_MEMORY_SIZE streams to a temporary file.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
FILE_UPLOAD_TEMP_DIR = None
SUBMISSION_MAX_UPLOAD_BYTES = env_int("SUBMISSION_MAX_UPLOAD_BYTES", 4 * 1024**3, minimum=1)
SUBMISSION_MAX_FILES = env_int("SUBMISSION_MAX_FILES", 10_000, minimum=1)
SUBMISSION_MAX_UNPACKED_BYTES = env_int("SUBMISSION_MAX_UNPACKED_BYTES", 8 * 1024**3, minimum=1)
SUBMISSION_MAX_AUDIO_SECONDS = env_int("SUBMISSION_MAX_AUDIO_SECONDS", 300, minimum=1)
SUBMISSION_VALIDATION_STALE_SECONDS = env_int("SUBMISSION_VALIDATION_STALE_SECONDS", 1800,
                                              minimum=2)
SUBMISSIONS_PER_DAY = env_int("SUBMISSIONS_PER_DAY", 5, minimum=0)
SUBMISSIONS_IN_FLIGHT = env_int("SUBMISSIONS_IN_FLIGHT", 2, minimum=0)

# Scoring pipeline: items per batch (one Celery task), and how long a claimed batch may go
# without a heartbeat before the sweeper hands it to another worker.
SCORING_BATCH_ITEMS = env_int("SCORING_BATCH_ITEMS", 40, minimum=1)
SCORING_HEARTBEAT_SECONDS = env_int("SCORING_HEARTBEAT_SECONDS", 10, minimum=1)
SCORING_STALE_SECONDS = env_int("SCORING_STALE_SECONDS", 90, minimum=2)
SCORING_REQUEUE_SECONDS = env_int("SCORING_REQUEUE_SECONDS", 3600, minimum=2)
SCORING_FLEET_RETRY_SECONDS = env_int("SCORING_FLEET_RETRY_SECONDS", 30, minimum=1)
SCORING_MAX_CLAIMS = env_int("SCORING_MAX_CLAIMS", 5, minimum=1)
SCORING_SEED = env_int("SCORING_SEED", 0)

# The default judge fleet: comma-separated OpenAI-compatible base URLs (vLLM servers).
JUDGE_BASE_URLS = parse_base_urls(env_str("JUDGE_BASE_URLS", "http://127.0.0.1:8001"))
JUDGE_MODEL = env_str("JUDGE_MODEL", "Qwen3-Omni-30B-A3B-Instruct")
JUDGE_API_KEY = env_str("JUDGE_API_KEY", "")
JUDGE_CONCURRENCY = env_int("JUDGE_CONCURRENCY", 32, minimum=1)
JUDGE_TIMEOUT = env_int("JUDGE_TIMEOUT", 120, minimum=1)
JUDGE_MAX_ATTEMPTS = env_int("JUDGE_MAX_ATTEMPTS", 5, minimum=1)
# How long a batch waits for a judge when every endpoint is down before it is handed back.
JUDGE_DOWN_WAIT = env_int("JUDGE_DOWN_WAIT", 300, minimum=1)

REDIS_URL = env_str("REDIS_URL", "")

# Boards are cached per state (leaderboard.selectors.board_stamp): in Redis when there is one,
# so every web process shares them; else in each process's memory.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": REDIS_URL} if REDIS_URL else
    {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "boards"},
}

# Celery: Redis in production; kombu's filesystem transport (no server) by default.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL or "filesystem://")
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
    else {"visibility_timeout": 3600}
)
if CELERY_BROKER_URL.startswith("filesystem"):
    (CELERY_BROKER_DIR / "queue").mkdir(parents=True, exist_ok=True)
    (CELERY_BROKER_DIR / "processed").mkdir(parents=True, exist_ok=True)
    (CELERY_BROKER_DIR / "control").mkdir(parents=True, exist_ok=True)
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BEAT_SCHEDULE = {
    "sweep-stale-scoring-work": {
        "task": "scoring.tasks.sweep",
        "schedule": env_int("SCORING_SWEEP_SECONDS", 30, minimum=1),
    },
    "retry-lost-validations": {
        "task": "submissions.tasks.sweep_validations",
        "schedule": 300,
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
