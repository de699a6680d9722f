"""What a vLLM server of Qwen3-Omni accepts, as launch_qwen3_omni.sh starts it.

One place for the numbers the launch script, the judge simulator, the judge configs and
upload validation share (tests/test_launch_qwen3_omni.py checks the script agrees):

- Qwen3-Omni's audio encoder spends 13 tokens per second of 16 kHz audio, and vLLM refuses
  one audio item whose tokens exceed its encoder cache, which is `--max-num-batched-tokens`
  (vLLM's default: 2048 on an A100 or a GPU under 70 GiB, 8192 on an H100/H200). So the
  longest audio a server takes is max_num_batched_tokens / 13 seconds.
- `--limit-mm-per-prompt '{"audio": N}'` caps the audios of one prompt: more is a 400.
- vLLM refuses audio of 10 ms or less (160 samples once resampled to 16 kHz): Qwen3-Omni's
  processor fails on it.
- vLLM 0.33 refuses, before decoding, an audio file over VLLM_MAX_AUDIO_CLIP_FILESIZE_MB
  (default 25, `data:` URLs included), and while decoding one longer than
  VLLM_MAX_AUDIO_DECODE_DURATION_S (600) or whose float32 samples (frames x channels x 4 bytes)
  pass VLLM_MAX_AUDIO_DECODE_BYTES (256 MiB). The launch script sets all three from its
  MAX_AUDIO_SECONDS and MAX_AUDIO_FILE_MB (audio_limits_for below), never under vLLM's own.
"""

from __future__ import annotations

import math

# The vLLM release launch_qwen3_omni.sh and docker/Dockerfile.judge pin (its VLLM_VERSION;
# tests/test_launch_qwen3_omni.py checks they agree): new judge configs are labelled with it.
VLLM_VERSION = "0.33.0"
TOKENS_PER_AUDIO_SECOND = 13
# The longest output an upload may have (SUBMISSION_MAX_AUDIO_SECONDS' default), and the
# room the launch script leaves above it.
DEFAULT_MAX_AUDIO_SECONDS = 300
HEADROOM = 4
MIN_BATCHED_TOKENS = 16384
DEFAULT_MAX_AUDIOS = 8  # --limit-mm-per-prompt's audio count in launch_qwen3_omni.sh
MIN_AUDIO_SECONDS = 0.01


def batched_tokens_for(max_audio_seconds: float) -> int:
    """--max-num-batched-tokens for a server that must take audio items this long: their
    tokens with HEADROOM, rounded up to a multiple of 1024, and never under 16384."""
    tokens = math.ceil(max_audio_seconds * TOKENS_PER_AUDIO_SECOND * HEADROOM / 1024) * 1024
    return max(MIN_BATCHED_TOKENS, tokens)


def longest_audio_seconds(max_num_batched_tokens: int) -> float:
    """The longest audio item a server with this encoder cache accepts."""
    return max_num_batched_tokens / TOKENS_PER_AUDIO_SECOND


DEFAULT_BATCHED_TOKENS = batched_tokens_for(DEFAULT_MAX_AUDIO_SECONDS)

MiB = 1024 ** 2
# vLLM 0.33's defaults (vllm/envs.py), the floor of what the launch script sets.
VLLM_FILE_MB = 25
VLLM_DECODE_SECONDS = 600
VLLM_DECODE_BYTES = 256 * MiB
# MAX_AUDIO_FILE_MB's default: any output an upload may have (SUBMISSION_MAX_OUTPUT_BYTES'
# default, 128 MiB) is one file the judge must take.
DEFAULT_MAX_AUDIO_FILE_MB = 128
# The decoded budget covers MAX_AUDIO_SECONDS of 48 kHz stereo, the usual output format.
DECODE_RATE = 48_000
DECODE_CHANNELS = 2


def audio_limits_for(max_audio_seconds: int, max_audio_file_mb: int) -> dict[str, int]:
    """The environment launch_qwen3_omni.sh gives each vLLM server for these settings."""
    decoded = max_audio_seconds * DECODE_RATE * DECODE_CHANNELS * 4
    return {
        "VLLM_MAX_AUDIO_CLIP_FILESIZE_MB": max(VLLM_FILE_MB, max_audio_file_mb),
        "VLLM_MAX_AUDIO_DECODE_DURATION_S": max(VLLM_DECODE_SECONDS, max_audio_seconds),
        "VLLM_MAX_AUDIO_DECODE_BYTES": max(VLLM_DECODE_BYTES, decoded),
    }


# What the launch script gives its servers by default (MAX_AUDIO_SECONDS, MAX_AUDIO_FILE_MB,
# MAX_MODEL_LEN): the judge simulator's defaults.
DEFAULT_AUDIO_LIMITS = audio_limits_for(DEFAULT_MAX_AUDIO_SECONDS, DEFAULT_MAX_AUDIO_FILE_MB)
DEFAULT_MAX_MODEL_LEN = 32768
# vLLM's resampling rate for Qwen3-Omni's feature extractor: audio of at most
# MIN_AUDIO_SECONDS (160 samples at 16 kHz) is refused by its processor.
FEATURE_RATE = 16_000
# Below this temperature vLLM samples greedily (vllm/sampling_params.py _SAMPLING_EPS), and
# then refuses n > 1.
SAMPLING_EPS = 1e-5


def audio_tokens(frames: int, samplerate: int) -> int:
    """The tokens Qwen3-Omni's audio encoder gives `frames` samples at `samplerate` (about 13 a
    second), as vLLM 0.33 counts them: resampled to 16 kHz (rounded up), a mel frame per 160
    samples (rounded up), 13 tokens per 100 frames and the rest through the encoder's two
    stride-2 convolutions (transformers' Qwen3-Omni _get_feat_extract_output_lengths)."""
    samples = -(-frames * FEATURE_RATE // samplerate)
    mel = -(-samples // 160)
    rest = (mel % 100 - 1) // 2 + 1
    return ((rest - 1) // 2 + 1 - 1) // 2 + 1 + mel // 100 * TOKENS_PER_AUDIO_SECOND
