#!/usr/bin/env bash
# Start the judge fleet on one GPU host: NUM_INSTANCES vLLM servers of Qwen3-Omni-30B-A3B-Instruct,
# each on its own group of GPUS_PER_INSTANCE GPUs with tensor parallelism and its own port.
#
#   MODEL_DIR=/models/Qwen3-Omni-30B-A3B-Instruct ./launch_qwen3_omni.sh
#
# vLLM serves the thinker only (text out), which is all the judge needs. Once every server answers
# GET /v1/models, the script prints the URLs for the scorer (`--base_urls "..."`) and for the
# settings (`JUDGE_BASE_URLS=...`), then stays up. Ctrl-C, SIGTERM or the exit of any server stops
# them all: TERM to each server's process group, KILL after GRACE_SECONDS.
#
# Settings (environment):
#   MODEL_DIR               local directory holding the model weights (required)
#   NUM_INSTANCES=2         servers to start
#   GPUS_PER_INSTANCE=4     GPUs per server (its --tensor-parallel-size)
#   FIRST_GPU=0             first GPU id; server i gets the i-th block of consecutive ids after it
#   BASE_PORT=8001          server i listens on BASE_PORT+i
#   HOST=0.0.0.0            address the servers bind to
#   PUBLIC_HOST=127.0.0.1   host name the printed URLs use (the name other machines reach)
#   SERVED_MODEL_NAME=Qwen3-Omni-30B-A3B-Instruct   model name the API answers to (JUDGE_MODEL)
#   MAX_MODEL_LEN=32768  DTYPE=bfloat16  GPU_MEMORY_UTILIZATION=0.9
#   READY_TIMEOUT=1800      seconds to wait for every server to answer
#   GRACE_SECONDS=20        seconds between TERM and KILL when stopping
#   LOG_DIR=./var/vllm-logs one log file per server
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
HOST=${HOST:-0.0.0.0}
PUBLIC_HOST=${PUBLIC_HOST:-127.0.0.1}
SERVED_MODEL_NAME=${SERVED_MODEL_NAME:-Qwen3-Omni-30B-A3B-Instruct}
MAX_MODEL_LEN=${MAX_MODEL_LEN:-32768}
DTYPE=${DTYPE:-bfloat16}
GPU_MEMORY_UTILIZATION=${GPU_MEMORY_UTILIZATION:-0.9}
READY_TIMEOUT=${READY_TIMEOUT:-1800}
GRACE_SECONDS=${GRACE_SECONDS:-20}
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
require_int READY_TIMEOUT 1
require_int GRACE_SECONDS 0
((BASE_PORT + NUM_INSTANCES - 1 <= 65535)) ||
  die "BASE_PORT=$BASE_PORT with NUM_INSTANCES=$NUM_INSTANCES runs past port 65535"
[[ $GPU_MEMORY_UTILIZATION =~ ^(0?\.[0-9]*[1-9][0-9]*|1(\.0*)?)$ ]] ||
  die "GPU_MEMORY_UTILIZATION=${GPU_MEMORY_UTILIZATION@Q} is not a fraction in (0, 1]"
for name in HOST PUBLIC_HOST SERVED_MODEL_NAME DTYPE LOG_DIR; do
  [[ -n ${!name} ]] || die "$name is empty"
done
read -r -a EXTRA_ARGS <<<"$VLLM_EXTRA_ARGS"

command -v vllm >/dev/null || die "vllm is not on PATH (install vLLM or activate its environment)"
command -v curl >/dev/null || die "curl is not on PATH"

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

# http_status URL: the HTTP status of a GET (000 when nothing answers).
http_status() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$1" || true; }

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

describe() { echo "instance $1 (port ${PORTS[$1]}, GPUs ${GPU_SETS[$1]})"; }

# group_alive PID: any process is left in the process group PID leads (vLLM's workers included).
group_alive() { kill -0 -- "-$1" 2>/dev/null; }

stop_all() {
  ((STOPPING)) && return 0
  STOPPING=1
  trap '' INT TERM
  ((${#PIDS[@]})) || return 0
  log "stopping ${#PIDS[@]} server(s)"
  local pid left deadline=$((SECONDS + GRACE_SECONDS)) killed=0
  for pid in "${PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  while :; do
    left=()
    for pid in "${PIDS[@]}"; do
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
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
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

trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'stop_all || true' EXIT

for ((i = 0; i < NUM_INSTANCES; i++)); do
  port=$((BASE_PORT + i))
  first=$((FIRST_GPU + i * GPUS_PER_INSTANCE))
  gpus=$first
  for ((g = first + 1; g < first + GPUS_PER_INSTANCE; g++)); do gpus+=",$g"; done
  logfile="$LOG_DIR/qwen3-omni-$port.log"
  cmd=(
    vllm serve "$MODEL_DIR"
    --host "$HOST"
    --port "$port"
    --served-model-name "$SERVED_MODEL_NAME"
    --tensor-parallel-size "$GPUS_PER_INSTANCE"
    --dtype "$DTYPE"
    --max-model-len "$MAX_MODEL_LEN"
    --gpu-memory-utilization "$GPU_MEMORY_UTILIZATION"
    --limit-mm-per-prompt '{"audio": 8}'
    ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}
  )
  printf '# %s CUDA_VISIBLE_DEVICES=%s %s\n' "$(date -u +%FT%TZ)" "$gpus" "${cmd[*]@Q}" >"$logfile"
  # setsid makes the server lead its own process group, so stopping reaches its workers too;
  # it runs in its own session, so a Ctrl-C reaches this script alone, which then stops it.
  CUDA_VISIBLE_DEVICES=$gpus setsid "${cmd[@]}" >>"$logfile" 2>&1 </dev/null &
  PIDS+=("$!")
  PORTS+=("$port")
  GPU_SETS+=("$gpus")
  LOGS+=("$logfile")
  log "started $(describe "$i"), pid $!, log $logfile"
done

# --- waiting for readiness ----------------------------------------------------------------------

log "waiting up to ${READY_TIMEOUT}s for every server to answer GET /v1/models"
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
    if [[ $(http_status "http://$PROBE_HOST:${PORTS[$i]}/v1/models") == 200 ]]; then
      ready[i]=1
      remaining=$((remaining - 1))
      log "$(describe "$i") is ready"
    fi
  done
  ((remaining)) || break
  if ((SECONDS >= deadline)); then
    for ((i = 0; i < NUM_INSTANCES; i++)); do
      ((ready[i])) || fail "$i" "did not answer within READY_TIMEOUT=${READY_TIMEOUT}s"
    done
  fi
  sleep 2 &
  wait $! || true
done

urls=()
for port in "${PORTS[@]}"; do urls+=("http://$PUBLIC_HOST:$port"); done
joined=$(IFS=,; echo "${urls[*]}")
printf '%s\n' "--base_urls \"$joined\"" "JUDGE_BASE_URLS=$joined"
log "all ${NUM_INSTANCES} server(s) ready; Ctrl-C stops them"

# --- serving: stop everything when any server ends ----------------------------------------------

while :; do
  for ((i = 0; i < NUM_INSTANCES; i++)); do
    if ! kill -0 "${PIDS[$i]}" 2>/dev/null; then
      reap "$i"
      fail "$i" "exited with code $CODE"
    fi
  done
  sleep 2 &
  wait $! || true
done
