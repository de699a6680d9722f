#!/usr/bin/env bash
# Start the judge fleet on one GPU host: NUM_INSTANCES vLLM servers of Qwen3-Omni-30B-A3B-Instruct,
# each on its own group of GPUS_PER_INSTANCE GPUs with tensor parallelism and its own port.
#
#   MODEL_DIR=/models/Qwen3-Omni-30B-A3B-Instruct ./launch_qwen3_omni.sh
#
# vLLM serves the thinker only (text out), which is all the judge needs. Start-up checks that
# `vllm --version` is VLLM_VERSION and that MODEL_DIR holds the Instruct variant. Once every
# server answers GET /health, each gets one smoke request (a chat completion with a 1 s 16 kHz
# WAV and a short text) that must answer 200; then the script prints the URLs for the scorer
# (`--base_urls "..."`) and for the settings (`JUDGE_BASE_URLS=...`) and stays up. A server that
# exits after that is restarted after RESTART_BACKOFF seconds, doubling on each exit up to
# RESTART_BACKOFF_MAX, its previous log kept as .1, .2, ...; the others keep serving. A server
# that exits or fails its smoke request during start-up stops them all. Ctrl-C or SIGTERM stops
# them all: TERM to each server's process group, KILL after GRACE_SECONDS.
#
# Settings (environment):
#   MODEL_DIR               local directory holding the model weights (required; the Instruct
#                           variant: a Thinking or Captioner directory or config.json is refused)
#   NUM_INSTANCES=2         servers to start
#   GPUS_PER_INSTANCE=4     GPUs per server (its --tensor-parallel-size)
#   FIRST_GPU=0             first GPU id; server i gets the i-th block of consecutive ids after it
#   BASE_PORT=8001          server i listens on BASE_PORT+i
#   HOST=127.0.0.1          address the servers bind to: the loopback address by default; a
#                           private interface's address (e.g. HOST=10.0.0.5) for workers on
#                           other machines, never a public one. 0.0.0.0 binds every interface
#                           and is refused without API_KEY.
#   PUBLIC_HOST=127.0.0.1   host name the printed URLs use (the name other machines reach)
#   SERVED_MODEL_NAME=Qwen3-Omni-30B-A3B-Instruct   model name the API answers to (JUDGE_MODEL)
#   MAX_MODEL_LEN=32768  DTYPE=bfloat16  GPU_MEMORY_UTILIZATION=0.9
#   MAX_AUDIO_SECONDS=300   longest audio item (whole seconds) a server must take: sets
#                           --max-num-batched-tokens, vLLM's encoder cache, to
#                           ceil(seconds x 13 tokens x 4 / 1024) x 1024, at least 16384
#                           (judge/limits.py batched_tokens_for); vLLM refuses a longer item.
#                           Also sets VLLM_MAX_AUDIO_DECODE_DURATION_S to it (at least 600)
#                           and VLLM_MAX_AUDIO_DECODE_BYTES to that long a 48 kHz stereo
#                           float32 signal (at least 256 MiB) (judge/limits.py audio_limits_for)
#   MAX_AUDIO_FILE_MB=128   largest audio file a server must take (VLLM_MAX_AUDIO_CLIP_FILESIZE_MB,
#                           at least 25): an upload's output may be 128 MiB
#   MAX_AUDIOS=8            audios one prompt may carry (--limit-mm-per-prompt)
#   MM_CACHE_GB=4           vLLM's multimodal processor cache (--mm-processor-cache-gb): the
#                           judge client sends each audio once and names it by its uuid after
#                           (judge/fleet.py); audio the cache let go is sent again. 0 turns the
#                           cache off, and with it that saving
#   API_KEY                 when set, the servers require it as "Authorization: Bearer" on every
#                           path but GET /health and /ping: vLLM's own --api-key guards only
#                           /v1, /v2, /inference and /cohere, so /invocations (chat completions
#                           for SageMaker) would answer anyone; the guard here (--middleware)
#                           closes it and any other. It reaches vLLM in its environment
#                           (VLLM_API_KEY), never on a command line, and is never logged
#   VLLM_VERSION=0.33.0     the vLLM release this script is written for (docker/Dockerfile.judge
#                           builds the same); `vllm --version` must report it. VLLM_VERSION=0.12.0
#                           starts the previous release, for judge configs scored under it
#   ALLOW_OTHER_VLLM=0      1 starts another vLLM version anyway, with a warning
#   READY_TIMEOUT=1800      seconds to wait for every server to answer /health
#   SMOKE_TIMEOUT=300       seconds each server has to answer its smoke request
#   RESTART_BACKOFF=5       seconds before the first restart of a server that exited
#   RESTART_BACKOFF_MAX=300 longest wait between restarts; a server that served this long
#                           since its last restart starts again from RESTART_BACKOFF
#   GRACE_SECONDS=20        seconds between TERM and KILL when stopping
#   POLL_SECONDS=1          seconds between two looks at the servers (health, exits)
#   LOG_DIR=./var/vllm-logs one log file per server (qwen3-omni-PORT.log; older ones .1 .. .5)
#   VLLM_EXTRA_ARGS         extra words for `vllm serve`, split on whitespace (no quoting: write
#                           JSON values without spaces); a repeated flag overrides the one above
set -euo pipefail

PROG=$(basename "$0")

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 2; }

MODEL_DIR=${MODEL_DIR:-}
NUM_INSTANCES=${NUM_INSTANCES:-2}
GPUS_PER_INSTANCE=${GPUS_PER_INSTANCE:-4}
FIRST_GPU=${FIRST_GPU:-0}
BASE_PORT=${BASE_PORT:-8001}
HOST=${HOST:-127.0.0.1}
PUBLIC_HOST=${PUBLIC_HOST:-127.0.0.1}
SERVED_MODEL_NAME=${SERVED_MODEL_NAME:-Qwen3-Omni-30B-A3B-Instruct}
MAX_MODEL_LEN=${MAX_MODEL_LEN:-32768}
DTYPE=${DTYPE:-bfloat16}
GPU_MEMORY_UTILIZATION=${GPU_MEMORY_UTILIZATION:-0.9}
MAX_AUDIO_SECONDS=${MAX_AUDIO_SECONDS:-300}
MAX_AUDIOS=${MAX_AUDIOS:-8}
MM_CACHE_GB=${MM_CACHE_GB:-4}
MAX_AUDIO_FILE_MB=${MAX_AUDIO_FILE_MB:-128}
API_KEY=${API_KEY:-}
VLLM_VERSION=${VLLM_VERSION:-0.33.0}
ALLOW_OTHER_VLLM=${ALLOW_OTHER_VLLM:-0}
READY_TIMEOUT=${READY_TIMEOUT:-1800}
SMOKE_TIMEOUT=${SMOKE_TIMEOUT:-300}
RESTART_BACKOFF=${RESTART_BACKOFF:-5}
RESTART_BACKOFF_MAX=${RESTART_BACKOFF_MAX:-300}
GRACE_SECONDS=${GRACE_SECONDS:-20}
POLL_SECONDS=${POLL_SECONDS:-1}
LOG_DIR=${LOG_DIR:-./var/vllm-logs}
VLLM_EXTRA_ARGS=${VLLM_EXTRA_ARGS:-}

# --- checks -------------------------------------------------------------------------------------

# require_int NAME MIN [MAX]: NAME holds a whole number within bounds; normalised to base 10.
require_int() {
  local name=$1 min=$2 max=${3:-} value=${!1}
  [[ $value =~ ^[0-9]{1,9}$ ]] || die "$name=${value@Q} is not a whole number"
  value=$((10#$value))
  ((value >= min)) || die "$name=$value is below the minimum $min"
  [[ -z $max ]] || ((value <= max)) || die "$name=$value is above the maximum $max"
  printf -v "$name" '%d' "$value"
}

[[ -n $MODEL_DIR ]] || die "MODEL_DIR is not set: point it at the local directory of the \
Qwen3-Omni-30B-A3B-Instruct weights (e.g. MODEL_DIR=/models/Qwen3-Omni-30B-A3B-Instruct)"
[[ -d $MODEL_DIR ]] || die "MODEL_DIR=${MODEL_DIR@Q} is not a directory"
require_int NUM_INSTANCES 1
require_int GPUS_PER_INSTANCE 1
require_int FIRST_GPU 0
require_int BASE_PORT 1 65535
require_int MAX_MODEL_LEN 1
require_int MAX_AUDIO_SECONDS 1
require_int MAX_AUDIOS 1
require_int MM_CACHE_GB 0
require_int MAX_AUDIO_FILE_MB 1
require_int READY_TIMEOUT 1
require_int SMOKE_TIMEOUT 1
require_int RESTART_BACKOFF 1
require_int RESTART_BACKOFF_MAX 1
require_int GRACE_SECONDS 0
[[ $POLL_SECONDS =~ ^([1-9][0-9]{0,3}(\.[0-9]+)?|0?\.[0-9]*[1-9][0-9]*)$ ]] ||
  die "POLL_SECONDS=${POLL_SECONDS@Q} is not a number of seconds above 0"
((BASE_PORT + NUM_INSTANCES - 1 <= 65535)) ||
  die "BASE_PORT=$BASE_PORT with NUM_INSTANCES=$NUM_INSTANCES runs past port 65535"
[[ $GPU_MEMORY_UTILIZATION =~ ^(0?\.[0-9]*[1-9][0-9]*|1(\.0*)?)$ ]] ||
  die "GPU_MEMORY_UTILIZATION=${GPU_MEMORY_UTILIZATION@Q} is not a fraction in (0, 1]"
((RESTART_BACKOFF <= RESTART_BACKOFF_MAX)) ||
  die "RESTART_BACKOFF=$RESTART_BACKOFF is above RESTART_BACKOFF_MAX=$RESTART_BACKOFF_MAX"
[[ $ALLOW_OTHER_VLLM =~ ^[01]$ ]] || die "ALLOW_OTHER_VLLM=${ALLOW_OTHER_VLLM@Q} is neither 0 nor 1"
for name in HOST PUBLIC_HOST SERVED_MODEL_NAME DTYPE LOG_DIR VLLM_VERSION; do
  [[ -n ${!name} ]] || die "$name is empty"
done
read -r -a EXTRA_ARGS <<<"$VLLM_EXTRA_ARGS"

# Qwen3-Omni's audio encoder spends 13 tokens per second of 16 kHz audio and vLLM refuses an audio
# item larger than its encoder cache, which is --max-num-batched-tokens (by default 2048 on GPUs
# under 70 GiB: ~157 s). judge/limits.py batched_tokens_for computes the same number.
BATCHED_TOKENS=$(((MAX_AUDIO_SECONDS * 13 * 4 + 1023) / 1024 * 1024))
((BATCHED_TOKENS >= 16384)) || BATCHED_TOKENS=16384
# vLLM's audio limits (judge/limits.py audio_limits_for): never under vLLM 0.33's defaults.
AUDIO_FILE_MB=$((MAX_AUDIO_FILE_MB > 25 ? MAX_AUDIO_FILE_MB : 25))
AUDIO_DECODE_SECONDS=$((MAX_AUDIO_SECONDS > 600 ? MAX_AUDIO_SECONDS : 600))
AUDIO_DECODE_BYTES=$((MAX_AUDIO_SECONDS * 48000 * 2 * 4))
((AUDIO_DECODE_BYTES >= 268435456)) || AUDIO_DECODE_BYTES=268435456

case $HOST in
  0.0.0.0 | :: | '[::]')
    [[ -n $API_KEY ]] || die "HOST=$HOST binds every interface, but API_KEY is not set: anyone \
who reaches this host could use the model. Bind the loopback address (the default) or a private \
interface's address, or set API_KEY"
    ;;
esac

command -v vllm >/dev/null || die "vllm is not on PATH (install vLLM or activate its environment)"
command -v curl >/dev/null || die "curl is not on PATH"
command -v python3 >/dev/null || die "python3 is not on PATH (it writes the smoke request's WAV)"

# Only the Instruct variant is supported: Thinking reasons aloud before its verdict and Captioner
# only describes audio. The directory's name and config.json, when there is one, must not name them.
model_name=$(basename -- "$(cd -- "$MODEL_DIR" && pwd -P)")
if [[ ${model_name,,} =~ (thinking|captioner) ]]; then
  die "MODEL_DIR=${MODEL_DIR@Q} is the ${BASH_REMATCH[1]^} variant; only Qwen3-Omni-30B-A3B-Instruct \
is supported"
fi
if [[ -f $MODEL_DIR/config.json ]]; then
  variant=$(python3 - "$MODEL_DIR/config.json" <<'PY'
import json, re, sys

def strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, str):
        yield value

try:
    with open(sys.argv[1], encoding="utf-8") as f:
        config = json.load(f)
except (OSError, ValueError) as error:
    print(f"unreadable: {error}")
    sys.exit()
if not isinstance(config, dict):
    print("unreadable: not a JSON object")
    sys.exit()
if config.get("model_type", "qwen3_omni_moe") != "qwen3_omni_moe":
    print(f"model_type {config['model_type']!r}, not Qwen3-Omni's qwen3_omni_moe")
    sys.exit()
for text in strings(config):
    if match := re.search(r"thinking|captioner", text, re.I):
        print(f"the {match[0].capitalize()} variant ({text!r})")
        break
PY
  ) || die "cannot read $MODEL_DIR/config.json with python3"
  [[ -z $variant ]] || die "$MODEL_DIR/config.json names $variant; only \
Qwen3-Omni-30B-A3B-Instruct is supported"
fi

# One vLLM release, the one docker/Dockerfile.judge builds, so a host runs what was tested.
found=$(vllm --version 2>/dev/null | tail -n 1) || true
found=${found##* }
if [[ ${found#v} != "${VLLM_VERSION#v}" && ${found#v} != "${VLLM_VERSION#v}"+* ]]; then
  if ((ALLOW_OTHER_VLLM)); then
    log "warning: vllm --version says ${found:-nothing}, not $VLLM_VERSION; going on (ALLOW_OTHER_VLLM=1)"
  else
    die "vllm --version says ${found:-nothing}, but this script is written for vLLM $VLLM_VERSION \
(pip install 'vllm[audio]==${VLLM_VERSION#v}'); ALLOW_OTHER_VLLM=1 starts it anyway"
  fi
fi

GPUS_NEEDED=$((FIRST_GPU + NUM_INSTANCES * GPUS_PER_INSTANCE))
if command -v nvidia-smi >/dev/null; then
  listing=$(nvidia-smi -L) || die "nvidia-smi -L failed; is the NVIDIA driver loaded?"
  gpu_count=$(grep -c '^GPU ' <<<"$listing" || true)
  ((gpu_count >= GPUS_NEEDED)) || die "$NUM_INSTANCES instance(s) x $GPUS_PER_INSTANCE GPU(s) \
from GPU $FIRST_GPU need GPU ids 0..$((GPUS_NEEDED - 1)), but nvidia-smi lists $gpu_count GPU(s)"
fi

# Readiness is probed on the loopback address when the servers bind every interface.
case $HOST in
  0.0.0.0 | :: | '[::]') PROBE_HOST=127.0.0.1 ;;
  *:*) PROBE_HOST="[$HOST]" ;;
  *) PROBE_HOST=$HOST ;;
esac

# The script's own requests read the key from a file, so it shows in no process listing.
WORK=$(mktemp -d) || die "cannot create a temporary directory"
trap 'rm -rf -- "$WORK"' EXIT
CURL_AUTH=()
if [[ -n $API_KEY ]]; then
  (umask 077 && printf 'Authorization: Bearer %s\n' "$API_KEY" >"$WORK/auth")
  CURL_AUTH=(-H "@$WORK/auth")
fi

# The guard every server loads with API_KEY set (vllm serve --middleware): the key on every
# request but GET/HEAD /health and /ping, the probes a load balancer makes. vLLM's own check
# (VLLM_API_KEY) stays too, for the paths it guards.
mkdir -p "$WORK/guard"
cat >"$WORK/guard/mmae_judge_guard.py" <<'GUARD'
"""ASGI middleware: with VLLM_API_KEY set, every request but GET or HEAD /health and /ping
must carry it as "Authorization: Bearer KEY"; others get 401 (a WebSocket is closed)."""
import hashlib
import hmac
import json
import os

OPEN_PATHS = ("/health", "/ping")


class KeyEverywhere:
    def __init__(self, app):
        self.app = app
        key = os.environ.get("VLLM_API_KEY", "")
        self.digest = hashlib.sha256(key.encode()).digest() if key else None

    def _authorized(self, scope):
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                return scheme.lower() == "bearer" and hmac.compare_digest(
                    hashlib.sha256(token.strip().encode()).digest(), self.digest)
        return False

    async def __call__(self, scope, receive, send):
        if self.digest is None or scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        path = scope["path"][len(scope.get("root_path", "")):] \
            if scope["path"].startswith(scope.get("root_path", "")) else scope["path"]
        if (scope["type"] == "http" and scope.get("method") in ("GET", "HEAD")
                and path.rstrip("/") in OPEN_PATHS) or self._authorized(scope):
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"error": "Unauthorized"}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": body})
GUARD

# http_status URL: the HTTP status of a GET (000 when nothing answers).
http_status() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 ${CURL_AUTH[@]+"${CURL_AUTH[@]}"} "$1" || true
}

# The smoke request: a chat completion with 1 s of a 440 Hz tone as a 16 kHz WAV between two
# texts, as the judge sends audio (a server without vLLM's audio extras answers it with a 500).
python3 - "$WORK/smoke.json" "$SERVED_MODEL_NAME" <<'PY' || die "python3 could not write the smoke request"
import base64, io, json, math, struct, sys, wave

rate = 16000
buffer = io.BytesIO()
with wave.open(buffer, "wb") as audio:
    audio.setnchannels(1)
    audio.setsampwidth(2)
    audio.setframerate(rate)
    audio.writeframes(b"".join(
        struct.pack("<h", round(8000 * math.sin(2 * math.pi * 440 * n / rate))) for n in range(rate)
    ))
url = "data:audio/wav;base64," + base64.b64encode(buffer.getvalue()).decode()
content = [
    {"type": "text", "text": "Audio 1:"},
    {"type": "audio_url", "audio_url": {"url": url}},
    {"type": "text", "text": "Is audio 1 speech, music or a tone? Answer in one word."},
]
with open(sys.argv[1], "w", encoding="utf-8") as f:
    json.dump({"model": sys.argv[2], "messages": [{"role": "user", "content": content}],
               "max_tokens": 8, "temperature": 0}, f)
PY

for ((i = 0; i < NUM_INSTANCES; i++)); do
  port=$((BASE_PORT + i))
  rc=0
  curl -s -o /dev/null --max-time 2 "http://$PROBE_HOST:$port/" || rc=$?
  # curl's 7 is "could not connect": the port is free. Anything else means someone listens.
  ((rc == 7)) || die "port $port on $PROBE_HOST is already in use (an older server?)"
done

mkdir -p "$LOG_DIR" || die "cannot create LOG_DIR=${LOG_DIR@Q}"

# --- starting and stopping ----------------------------------------------------------------------

PIDS=()    # each server's pid, which is also its process group id (setsid)
PORTS=()
GPU_SETS=()
LOGS=()
STOPPING=0
CURL_PID=  # the smoke request under way, if any

describe() { echo "instance $1 (port ${PORTS[$1]}, GPUs ${GPU_SETS[$1]})"; }

# group_alive PID: any process is left in the process group PID leads (vLLM's workers included).
group_alive() { kill -0 -- "-$1" 2>/dev/null; }

# stop_groups PID...: TERM to each process group, KILL to those left after GRACE_SECONDS; fails
# when some survive even that.
stop_groups() {
  local pid left deadline=$((SECONDS + GRACE_SECONDS)) killed=0
  for pid in "$@"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  while :; do
    left=()
    for pid in "$@"; do
      if group_alive "$pid"; then left+=("$pid"); fi
    done
    ((${#left[@]})) || break
    if ((!killed && SECONDS >= deadline)); then
      log "process group(s) ${left[*]} still running after ${GRACE_SECONDS}s; sending KILL"
      for pid in "${left[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
      killed=1
      deadline=$((SECONDS + 10))
    elif ((killed && SECONDS >= deadline)); then
      log "process group(s) ${left[*]} survived KILL"
      return 1
    fi
    sleep 0.2
  done
  for pid in "$@"; do wait "$pid" 2>/dev/null || true; done
}

stop_all() {
  ((STOPPING)) && return 0
  STOPPING=1
  trap '' INT TERM
  [[ -z $CURL_PID ]] || kill "$CURL_PID" 2>/dev/null || true
  ((${#PIDS[@]})) || return 0
  log "stopping ${#PIDS[@]} server(s)"
  stop_groups "${PIDS[@]}" || return 1
  log "all servers stopped"
}

on_signal() {
  log "received SIG$1"
  stop_all || true
  exit "$2"
}

# fail INDEX MESSAGE: report a server that cannot serve, with its log's tail, and stop them all.
fail() {
  log "error: $(describe "$1") $2; last lines of ${LOGS[$1]}:"
  tail -n 40 "${LOGS[$1]}" >&2 || true
  stop_all || true
  exit 1
}

# reap INDEX: collect the exit status of a server that has ended into CODE (not in a subshell:
# only this shell can wait for its children).
reap() {
  CODE=0
  wait "${PIDS[$1]}" 2>/dev/null || CODE=$?
}

# rotate FILE: keep the previous FILE as FILE.1, and so on up to FILE.5.
rotate() {
  local n
  [[ -e $1 ]] || return 0
  for ((n = 4; n >= 1; n--)); do
    [[ ! -e $1.$n ]] || mv -f -- "$1.$n" "$1.$((n + 1))"
  done
  mv -f -- "$1" "$1.1"
}

# start INDEX: start server INDEX on its port and GPUs, its output in its log.
start() {
  local i=$1 guard=()
  # --chat-template-content-format openai: vLLM's detector may pick "string", which moves every
  # audio ahead of the text and so parts our labels from their audio. --generation-config vllm:
  # sampling defaults are vLLM's, not those of the model's generation_config.json.
  local cmd=(
    vllm serve "$MODEL_DIR"
    --host "$HOST"
    --port "${PORTS[$i]}"
    --served-model-name "$SERVED_MODEL_NAME"
    --tensor-parallel-size "$GPUS_PER_INSTANCE"
    --dtype "$DTYPE"
    --max-model-len "$MAX_MODEL_LEN"
    --gpu-memory-utilization "$GPU_MEMORY_UTILIZATION"
    --max-num-batched-tokens "$BATCHED_TOKENS"
    --limit-mm-per-prompt "{\"audio\": $MAX_AUDIOS}"
    --mm-processor-cache-gb "$MM_CACHE_GB"
    --chat-template-content-format openai
    --generation-config vllm
  )
  [[ -z $API_KEY ]] || guard=(--middleware mmae_judge_guard.KeyEverywhere)
  local shown=("${cmd[@]}" ${guard[@]+"${guard[@]}"} ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"})
  local limits=(
    VLLM_MAX_AUDIO_CLIP_FILESIZE_MB="$AUDIO_FILE_MB"
    VLLM_MAX_AUDIO_DECODE_DURATION_S="$AUDIO_DECODE_SECONDS"
    VLLM_MAX_AUDIO_DECODE_BYTES="$AUDIO_DECODE_BYTES"
  )
  rotate "${LOGS[$i]}"
  printf '# %s CUDA_VISIBLE_DEVICES=%s %s %s\n' "$(date -u +%FT%TZ)" "${GPU_SETS[$i]}" \
    "${limits[*]}" "${shown[*]@Q}" >"${LOGS[$i]}"
  # setsid makes the server lead its own process group, so stopping reaches its workers too;
  # it runs in its own session, so a Ctrl-C reaches this script alone, which then stops it.
  # The key travels in the environment only (a command line shows in every process listing).
  (
    [[ -z $API_KEY ]] || export VLLM_API_KEY=$API_KEY
    exec env CUDA_VISIBLE_DEVICES="${GPU_SETS[$i]}" "${limits[@]}" \
      PYTHONPATH="$WORK/guard${PYTHONPATH:+:$PYTHONPATH}" setsid "${cmd[@]}" \
      ${guard[@]+"${guard[@]}"} ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}
  ) >>"${LOGS[$i]}" 2>&1 </dev/null &
  PIDS[i]=$!
}

# smoke INDEX: one chat completion with audio, which must answer 200, else everything stops.
smoke() {
  local status out="$WORK/smoke-$1.out" body
  curl -s -o "$out" -w '%{http_code}' --max-time "$SMOKE_TIMEOUT" ${CURL_AUTH[@]+"${CURL_AUTH[@]}"} \
    -H 'Content-Type: application/json' --data-binary "@$WORK/smoke.json" \
    "http://$PROBE_HOST:${PORTS[$1]}/v1/chat/completions" >"$WORK/smoke-$1.status" &
  CURL_PID=$!
  wait "$CURL_PID" || true  # in the background, so a signal is handled at once
  CURL_PID=
  status=$(<"$WORK/smoke-$1.status")
  [[ $status == 200 ]] && return 0
  body=$(head -c 400 "$out" 2>/dev/null | tr -s '\n' ' ') || true
  if [[ $status == 000 ]]; then
    body="no answer within SMOKE_TIMEOUT=${SMOKE_TIMEOUT}s"
  fi
  fail "$1" "answered its smoke request (1 s of 16 kHz audio and a text) with HTTP $status: \
${body:-an empty body}"
}

trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'stop_all || true; rm -rf -- "$WORK"' EXIT

for ((i = 0; i < NUM_INSTANCES; i++)); do
  port=$((BASE_PORT + i))
  first=$((FIRST_GPU + i * GPUS_PER_INSTANCE))
  gpus=$first
  for ((g = first + 1; g < first + GPUS_PER_INSTANCE; g++)); do gpus+=",$g"; done
  PORTS+=("$port")
  GPU_SETS+=("$gpus")
  LOGS+=("$LOG_DIR/qwen3-omni-$port.log")
  start "$i"
  log "started $(describe "$i"), pid ${PIDS[$i]}, log ${LOGS[$i]}"
done

# --- waiting for readiness ----------------------------------------------------------------------

log "audio limits: files up to ${AUDIO_FILE_MB} MiB, ${AUDIO_DECODE_SECONDS} s and \
$((AUDIO_DECODE_BYTES / 1048576)) MiB decoded; items up to $((BATCHED_TOKENS / 13)) s (encoder \
cache ${BATCHED_TOKENS} tokens), ${MAX_AUDIOS} per prompt; ${MM_CACHE_GB} GiB of processed \
audio kept for requests that name it by its uuid"
log "waiting up to ${READY_TIMEOUT}s for every server to answer GET /health"
deadline=$((SECONDS + READY_TIMEOUT))
ready=()
for ((i = 0; i < NUM_INSTANCES; i++)); do ready+=(0); done
remaining=$NUM_INSTANCES
while ((remaining)); do
  for ((i = 0; i < NUM_INSTANCES; i++)); do
    ((ready[i])) && continue
    if ! kill -0 "${PIDS[$i]}" 2>/dev/null; then
      reap "$i"
      fail "$i" "exited with code $CODE before it was ready"
    fi
    if [[ $(http_status "http://$PROBE_HOST:${PORTS[$i]}/health") == 200 ]]; then
      smoke "$i"
      ready[i]=1
      remaining=$((remaining - 1))
      log "$(describe "$i") is ready: it answered a request with audio"
    fi
  done
  ((remaining)) || break
  if ((SECONDS >= deadline)); then
    for ((i = 0; i < NUM_INSTANCES; i++)); do
      ((ready[i])) || fail "$i" "did not answer within READY_TIMEOUT=${READY_TIMEOUT}s"
    done
  fi
  sleep "$POLL_SECONDS" &
  wait $! || true
done

urls=()
for port in "${PORTS[@]}"; do urls+=("http://$PUBLIC_HOST:$port"); done
joined=$(IFS=,; echo "${urls[*]}")
printf '%s\n' "--base_urls \"$joined\"" "JUDGE_BASE_URLS=$joined"
log "all ${NUM_INSTANCES} server(s) ready; Ctrl-C stops them"

# --- serving: a server that ends is restarted with backoff, the others keep serving -------------

DELAY=()       # seconds before the next restart of each server
RESTART_AT=()  # when (SECONDS) a server that ended starts again; 0 while it runs
UP=()          # 1 once a server answers /health
SINCE=()       # when it started (UP 0) or first answered (UP 1)
for ((i = 0; i < NUM_INSTANCES; i++)); do
  DELAY+=("$RESTART_BACKOFF")
  RESTART_AT+=(0)
  UP+=(1)
  SINCE+=("$SECONDS")
done

# ended INDEX: a server has exited (its status in CODE); its workers go too, and it is restarted
# after its delay, which doubles up to RESTART_BACKOFF_MAX unless it had served that long.
ended() {
  local i=$1
  if ((UP[i] && SECONDS - SINCE[i] >= RESTART_BACKOFF_MAX)); then DELAY[i]=$RESTART_BACKOFF; fi
  stop_groups "${PIDS[$i]}" || true
  log "$(describe "$i") exited with code $CODE; restarting it in ${DELAY[i]}s (its log is kept \
as ${LOGS[$i]}.1); the other servers keep serving"
  RESTART_AT[i]=$((SECONDS + DELAY[i]))
  DELAY[i]=$((DELAY[i] * 2 < RESTART_BACKOFF_MAX ? DELAY[i] * 2 : RESTART_BACKOFF_MAX))
}

while :; do
  for ((i = 0; i < NUM_INSTANCES; i++)); do
    if ((RESTART_AT[i])); then
      ((SECONDS >= RESTART_AT[i])) || continue
      RESTART_AT[i]=0
      UP[i]=0
      SINCE[i]=$SECONDS
      start "$i"
      log "restarted $(describe "$i"), pid ${PIDS[$i]}, log ${LOGS[$i]}"
    elif ! kill -0 "${PIDS[$i]}" 2>/dev/null; then
      reap "$i"
      ended "$i"
    elif ((!UP[i])); then
      if [[ $(http_status "http://$PROBE_HOST:${PORTS[$i]}/health") == 200 ]]; then
        UP[i]=1
        SINCE[i]=$SECONDS
        log "$(describe "$i") is serving again"
      elif ((SECONDS - SINCE[i] >= READY_TIMEOUT)); then
        log "$(describe "$i") did not answer within READY_TIMEOUT=${READY_TIMEOUT}s; stopping it"
        stop_groups "${PIDS[$i]}" || true
      fi
    fi
  done
  sleep "$POLL_SECONDS" &
  wait $! || true
done
