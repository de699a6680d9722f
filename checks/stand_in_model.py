"""Write a stand-in Qwen3-Omni-30B-A3B-Instruct model directory: the transformers config and
processor (feature extractor, image and video processors, a tiny tokenizer holding Qwen's special
tokens at the ids the config names, the chat template), and no weights. Nothing is downloaded.

Enough for `vllm launch render` (vLLM's GPU-less server: request model, chat parsing, audio
loading, Qwen3-Omni's processor and the prompt-length check); not for generation. Run with the
Python of vLLM's own environment (its transformers and tokenizers):

    python checks/stand_in_model.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# Qwen3-Omni-30B-A3B-Instruct's special tokens and their ids (its tokenizer_config.json).
SPECIAL_TOKENS = {
    "<|endoftext|>": 151643,
    "<|im_start|>": 151644,
    "<|im_end|>": 151645,
    "<|object_ref_start|>": 151646,
    "<|object_ref_end|>": 151647,
    "<|box_start|>": 151648,
    "<|box_end|>": 151649,
    "<|quad_start|>": 151650,
    "<|quad_end|>": 151651,
    "<|vision_start|>": 151652,
    "<|vision_end|>": 151653,
    "<|vision_pad|>": 151654,
    "<|image_pad|>": 151655,
    "<|video_pad|>": 151656,
    "<|audio_start|>": 151669,
    "<|audio_end|>": 151670,
    "<tts_pad>": 151671,
    "<tts_text_bos>": 151672,
    "<tts_text_eod>": 151673,
    "<tts_text_bos_single>": 151674,
    "<|audio_pad|>": 151675,
}
VOCAB_SIZE = 152064  # the thinker's embedding rows
# Role words get ids of their own, as in Qwen's vocabulary (user is 872 there).
ROLE_TOKENS = {"system": 8948, "user": 872, "assistant": 77091}

# The tokenizer's attributes Qwen3OmniMoeProcessor reads (tokenizer.audio_token, ...).
EXTRA_TOKEN_ATTRS = {
    "image_token": "<|image_pad|>",
    "audio_token": "<|audio_pad|>",
    "video_token": "<|video_pad|>",
    "vision_bos_token": "<|vision_start|>",
    "vision_eos_token": "<|vision_end|>",
    "audio_bos_token": "<|audio_start|>",
    "audio_eos_token": "<|audio_end|>",
}

# Qwen3-Omni's chat template in the form vLLM renders it with the "openai" content format: a
# system message first when given, then each message's parts in order, an audio part as
# <|audio_start|><|audio_pad|><|audio_end|> where it stands among the texts.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string %}"
    "{{- message['content'] }}"
    "{%- else %}"
    "{%- for content in message['content'] %}"
    "{%- if content['type'] == 'audio' or 'audio' in content or 'audio_url' in content %}"
    "{{- '<|audio_start|><|audio_pad|><|audio_end|>' }}"
    "{%- elif content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{{- '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{%- elif content['type'] == 'video' or 'video' in content %}"
    "{{- '<|vision_start|><|video_pad|><|vision_end|>' }}"
    "{%- elif content['type'] == 'text' %}"
    "{{- content['text'] }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)


def build_tokenizer():
    """A WordLevel tokenizer: every byte-sized word a token, padded with dummy entries so
    Qwen's special tokens and role words sit at their real ids."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    fixed = {**SPECIAL_TOKENS, **ROLE_TOKENS}
    taken = set(fixed.values())
    vocab = dict(fixed)
    words = ["[UNK]", *(chr(c) for c in range(33, 127)), "\n", " "]
    free = (i for i in range(VOCAB_SIZE) if i not in taken)
    for word in words:
        vocab.setdefault(word, next(free))
    for i in free:
        if i >= max(taken):
            break
        vocab[f"<dummy_{i}>"] = i
    model = models.WordLevel(vocab=vocab, unk_token="[UNK]")
    tok = Tokenizer(model)
    tok.normalizer = normalizers.NFKC()
    # Words of letters or digits are one token each when known ("user"), else unknown;
    # punctuation and whitespace split apart. A rough count, enough for lengths to matter.
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(),
    ])
    tok.decoder = decoders.WordPiece()
    tok.add_special_tokens(list(SPECIAL_TOKENS))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="[UNK]",
        extra_special_tokens=EXTRA_TOKEN_ATTRS,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    for token, wanted in SPECIAL_TOKENS.items():
        ids = tokenizer.encode(token, add_special_tokens=False)
        if ids != [wanted]:
            raise SystemExit(f"stand-in tokenizer: {token} encodes to {ids}, not [{wanted}]")
    return tokenizer


def build_config():
    from transformers import Qwen3OmniMoeConfig

    ids = SPECIAL_TOKENS
    thinker = {
        "audio_token_id": ids["<|audio_pad|>"],
        "audio_start_token_id": ids["<|audio_start|>"],
        "audio_end_token_id": ids["<|audio_end|>"],
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
        "user_token_id": ROLE_TOKENS["user"],
        "position_id_per_seconds": 13,
        "text_config": {"vocab_size": VOCAB_SIZE, "max_position_embeddings": 65536},
    }
    config = Qwen3OmniMoeConfig(
        thinker_config=thinker,
        enable_audio_output=False,
        im_start_token_id=ids["<|im_start|>"],
        im_end_token_id=ids["<|im_end|>"],
        tts_pad_token_id=ids["<tts_pad>"],
        tts_bos_token_id=ids["<tts_text_bos>"],
        tts_eos_token_id=ids["<tts_text_eod>"],
        system_token_id=ROLE_TOKENS["system"],
        user_token_id=ROLE_TOKENS["user"],
        assistant_token_id=ROLE_TOKENS["assistant"],
    )
    config.architectures = ["Qwen3OmniMoeForConditionalGeneration"]
    return config


def build_processor(tokenizer):
    from transformers import (
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
        Qwen3OmniMoeProcessor,
        WhisperFeatureExtractor,
    )

    # Qwen3-Omni's preprocessor_config.json: 128 mel bins of 16 kHz audio, up to 300 s a chunk.
    feature_extractor = WhisperFeatureExtractor(
        feature_size=128, sampling_rate=16000, hop_length=160, chunk_length=300, n_fft=400,
        padding_value=0.0, dither=0.0, return_attention_mask=True,
    )
    return Qwen3OmniMoeProcessor(
        image_processor=Qwen2VLImageProcessor(patch_size=16, merge_size=2,
                                              temporal_patch_size=2),
        video_processor=Qwen2VLVideoProcessor(patch_size=16, merge_size=2,
                                              temporal_patch_size=2),
        feature_extractor=feature_extractor,
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
    )


def write(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer()
    build_config().save_pretrained(out)
    build_processor(tokenizer).save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "chat_template.jinja").write_text(CHAT_TEMPLATE, encoding="utf-8")
    (out / "generation_config.json").write_text(json.dumps(
        {"eos_token_id": [SPECIAL_TOKENS["<|im_end|>"], SPECIAL_TOKENS["<|endoftext|>"]],
         "pad_token_id": SPECIAL_TOKENS["<|endoftext|>"]}), encoding="utf-8")
    (out / "STAND-IN").write_text("A stand-in of Qwen3-Omni-30B-A3B-Instruct without weights, "
                                  "written by checks/stand_in_model.py for vllm launch render.\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    write(Path(sys.argv[1]))
