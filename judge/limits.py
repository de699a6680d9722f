"""What a vLLM server of Qwen3-Omni accepts, as launch_qwen3_omni.sh starts it.

One place for the numbers the launch script, the judge simulator, the judge configs and
upload validation share (tests/test_launch_qwen3_omni.py checks the script agrees):

- Qwen3-Omni's audio encoder spends 13 tokens per second of 16 kHz audio, and vLLM refuses
  one audio item whose tokens exceed its encoder cache, which is `--max-num-batched-tokens`
  (vLLM's default: 2048 on an A100 or a GPU under 70 GiB, 8192 on an H100/H200). So the
  longest audio a server takes is max_num_batched_tokens / 13 seconds.
- `--limit-mm-per-prompt '{"audio": N}'` caps the audios of one prompt: more is a 400.
- vLLM refuses audio shorter than a few frames of its feature extractor: 10 ms here.
"""

from __future__ import annotations

import math

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
