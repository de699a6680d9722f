"""The settings of uploads, validation, the scoring pipeline and the judge fleet, read from the
environment (README: Settings); config.settings takes them all."""

from config.env import env_float, env_int, env_list, env_str, parse_base_urls

SUBMISSION_MAX_UPLOAD_BYTES = env_int("SUBMISSION_MAX_UPLOAD_BYTES", 4 * 1024**3, minimum=1)
SUBMISSION_MAX_FILES = env_int("SUBMISSION_MAX_FILES", 10_000, minimum=1)
SUBMISSION_MAX_UNPACKED_BYTES = env_int("SUBMISSION_MAX_UNPACKED_BYTES", 8 * 1024**3, minimum=1)
SUBMISSION_MAX_AUDIO_SECONDS = env_int("SUBMISSION_MAX_AUDIO_SECONDS", 300, minimum=1)
# Each output file: 128 MiB holds 300 s of 48 kHz stereo even as 32-bit float (115 MB).
SUBMISSION_MAX_OUTPUT_BYTES = env_int("SUBMISSION_MAX_OUTPUT_BYTES", 128 * 1024**2, minimum=1)
SUBMISSION_MAX_SAMPLE_RATE = env_int("SUBMISSION_MAX_SAMPLE_RATE", 192_000, minimum=1)
SUBMISSION_MAX_CHANNELS = env_int("SUBMISSION_MAX_CHANNELS", 8, minimum=1)
# A predictions file that is one JSON document is read whole by the web process; JSONL is
# read a line at a time, up to SUBMISSION_MAX_UPLOAD_BYTES.
SUBMISSION_MAX_PREDICTIONS_BYTES = env_int("SUBMISSION_MAX_PREDICTIONS_BYTES", 64 * 1024**2,
                                           minimum=1)
# Faults of one kind that a validation report (page, API answer, email) lists; the rest are
# counted.
# Benchmark kinds kept outside scoring/kinds/ (module paths, each exporting a KINDS tuple),
# registered at start-up beside the ones found there: a kind under development, or a test's.
BENCHMARK_KINDS_EXTRA = env_list("BENCHMARK_KINDS_EXTRA", "")
SUBMISSION_REPORT_MAX_PER_KIND = env_int("SUBMISSION_REPORT_MAX_PER_KIND", 50, minimum=1)
# Zip bombs: the outputs' unpacked over compressed bytes, once they unpack to more than the
# floor; real audio deflates by under 2:1 (submissions/validation.py says why 20 and 64 MiB).
SUBMISSION_MAX_COMPRESSION_RATIO = env_int("SUBMISSION_MAX_COMPRESSION_RATIO", 20, minimum=1)
SUBMISSION_COMPRESSION_FLOOR_BYTES = env_int("SUBMISSION_COMPRESSION_FLOOR_BYTES",
                                             64 * 1024**2, minimum=0)
# A validating worker touches its submission every SUBMISSION_VALIDATION_HEARTBEAT_SECONDS;
# one silent for SUBMISSION_VALIDATION_STALE_SECONDS died, and an upload left that long without
# a worker lost its message (a broker restarted without persistence): both are queued again.
SUBMISSION_VALIDATION_HEARTBEAT_SECONDS = env_int("SUBMISSION_VALIDATION_HEARTBEAT_SECONDS", 10,
                                                  minimum=1)
SUBMISSION_VALIDATION_STALE_SECONDS = env_int("SUBMISSION_VALIDATION_STALE_SECONDS", 120,
                                              minimum=2)
# Validation that breaks on our side (a database, the disk, a bug) is retried this many times,
# SUBMISSION_VALIDATION_RETRY_SECONDS later, then 3 and 9 times that (10, 30, 90 s...), before
# the submission is failed (its files kept). A failed submission, or its failed run, is then
# retried by the sweeper SUBMISSION_RETRY_AFTER_SECONDS after it failed (then 3 and 9 times
# that), at most SUBMISSION_RETRY_TIMES times; staff may retry it at any time.
SUBMISSION_VALIDATION_RETRIES = env_int("SUBMISSION_VALIDATION_RETRIES", 3, minimum=0)
SUBMISSION_VALIDATION_RETRY_SECONDS = env_int("SUBMISSION_VALIDATION_RETRY_SECONDS", 10,
                                              minimum=0)
# Spectrogram images (scoring.spectrogram_store): drawing that breaks on our side is retried
# this many times, SPECTROGRAM_RETRY_SECONDS later, then 3 and 9 times that; the pages then
# go on saying "spectrogram being drawn", and the error is in the worker's log.
# The e-mails of a challenge's reveal that fail on our side (the mail server) are sent again
# this many times, CHALLENGE_EMAIL_RETRY_SECONDS later, then 3 and 9 times that; each
# participant is mailed once (challenges.models.RevealNotice).
CHALLENGE_EMAIL_RETRIES = env_int("CHALLENGE_EMAIL_RETRIES", 4, minimum=0)
CHALLENGE_EMAIL_RETRY_SECONDS = env_int("CHALLENGE_EMAIL_RETRY_SECONDS", 60, minimum=0)
SPECTROGRAM_RETRIES = env_int("SPECTROGRAM_RETRIES", 2, minimum=0)
SPECTROGRAM_RETRY_SECONDS = env_int("SPECTROGRAM_RETRY_SECONDS", 30, minimum=0)
SUBMISSION_RETRY_AFTER_SECONDS = env_int("SUBMISSION_RETRY_AFTER_SECONDS", 600, minimum=0)
SUBMISSION_RETRY_TIMES = env_int("SUBMISSION_RETRY_TIMES", 3, minimum=0)
SUBMISSIONS_PER_DAY = env_int("SUBMISSIONS_PER_DAY", 5, minimum=0)
SUBMISSIONS_IN_FLIGHT = env_int("SUBMISSIONS_IN_FLIGHT", 2, minimum=0)

# Scoring pipeline: items per batch (one Celery task), and how long a claimed batch may go
# without a heartbeat before the sweeper hands it to another worker.
SCORING_BATCH_ITEMS = env_int("SCORING_BATCH_ITEMS", 40, minimum=1)
SCORING_HEARTBEAT_SECONDS = env_int("SCORING_HEARTBEAT_SECONDS", 10, minimum=1)
SCORING_STALE_SECONDS = env_int("SCORING_STALE_SECONDS", 90, minimum=2)
# A pending batch queued this long ago and never claimed lost its message (a broker restarted
# without persistence): it is sent again. A duplicate is harmless (claims are conditional).
SCORING_REQUEUE_SECONDS = env_int("SCORING_REQUEUE_SECONDS", 120, minimum=2)
SCORING_FLEET_RETRY_SECONDS = env_int("SCORING_FLEET_RETRY_SECONDS", 30, minimum=1)
SCORING_MAX_CLAIMS = env_int("SCORING_MAX_CLAIMS", 5, minimum=1)
# A batch's task checks this often whether its run is still active: a cancel stops the
# queries in flight within about this long.
SCORING_STOP_CHECK_SECONDS = env_float("SCORING_STOP_CHECK_SECONDS", 1.0, minimum=0.1)
# A batch's answers are stored as they come, at most this often (progress counts them).
SCORING_PROGRESS_SECONDS = env_float("SCORING_PROGRESS_SECONDS", 1.0, minimum=0.0)
# An aggregation that breaks is retried this many times, SCORING_AGGREGATE_RETRY_SECONDS
# later, then 3 and 9 times that, before its run is failed.
SCORING_AGGREGATE_RETRIES = env_int("SCORING_AGGREGATE_RETRIES", 3, minimum=0)
SCORING_AGGREGATE_RETRY_SECONDS = env_int("SCORING_AGGREGATE_RETRY_SECONDS", 10, minimum=0)
# A batch's task claims the run's next batches ahead, into the same query loop, for at most
# this many seconds from its start (0: never), so that no judge slot idles between batches
# while tasks stay far shorter than the broker's visibility timeout.
SCORING_CLAIM_AHEAD_SECONDS = env_int("SCORING_CLAIM_AHEAD_SECONDS", 300, minimum=0)
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
# Before a run's queries go out, each endpoint is asked whether it serves the judge config's
# model, at most once in this many seconds per worker process (judge.fleet.JudgeFleet.check).
JUDGE_CHECK_SECONDS = env_int("JUDGE_CHECK_SECONDS", 30, minimum=0)
# A reply that cannot be parsed is asked again at most this many times at temperature 0: the
# same reply again is the judge's own (a wrong vote), another one a misbehaving judge (lost).
JUDGE_UNPARSEABLE_RETRIES = env_int("JUDGE_UNPARSEABLE_RETRIES", 1, minimum=1)
# A run with more than this share of its queries refused by the judge (HTTP 400: an audio
# its encoder cache cannot take, say) is not published: it fails on our side.
SCORING_MAX_REFUSED_SHARE = env_float("SCORING_MAX_REFUSED_SHARE", 0.01, minimum=0.0,
                                      maximum=1.0)
# A judge query lost on our side (a transport error, timeout or 5xx on its last attempt, or
# unreadable replies that change when asked again) is never a vote: it is asked again later in
# the batch's query loop. A run that lost more than this share of its queries (each loss
# counted) fails on our side instead of being published.
SCORING_MAX_LOST_SHARE = env_float("SCORING_MAX_LOST_SHARE", 0.02, minimum=0.0, maximum=1.0)
# With REDIS_URL, JUDGE_CONCURRENCY caps each endpoint across every worker process and machine
# (judge.leases); a killed worker's slots come back after JUDGE_LEASE_TTL seconds.
JUDGE_LEASE_TTL = env_int("JUDGE_LEASE_TTL", 30, minimum=1)
# Request bodies in flight per worker process (inlined audio): a query that would go over
# waits; one body over the whole budget goes alone.
JUDGE_MAX_INFLIGHT_BYTES = env_int("JUDGE_MAX_INFLIGHT_BYTES", 256 * 2**20, minimum=1)
# Audio a worker process remembers each endpoint holds, to name it by its uuid alone (under
# the launch script's --mm-processor-cache-gb 4 GiB); 0 sends every audio with its data, for
# judge servers started with that cache off.
JUDGE_AUDIO_CACHE_MB = env_int("JUDGE_AUDIO_CACHE_MB", 2048, minimum=0)
# The fleet page: every endpoint of every judge config is probed (GET /v1/models for health,
# GET /metrics for load) every FLEET_PROBE_SECONDS, each probe giving up after
# FLEET_PROBE_TIMEOUT; throughput, error rate and latency cover the last FLEET_STATS_MINUTES.
FLEET_PROBE_SECONDS = env_int("FLEET_PROBE_SECONDS", 30, minimum=1)
FLEET_PROBE_TIMEOUT = env_int("FLEET_PROBE_TIMEOUT", 5, minimum=1)
FLEET_STATS_MINUTES = env_int("FLEET_STATS_MINUTES", 15, minimum=1)
