"""Small AIR-Bench metadata files for tests, in the official shapes."""

from __future__ import annotations

import json
from pathlib import Path

REFERENCE = Path(__file__).parent / "data" / "airbench_leaderboard_reference.json"


def foundation_item(uniq_id, task_name="Speech_Grounding", dataset="librispeech", *,
                    answer="b", choices=("a", "b", "c", "d")) -> dict:
    c = list(choices) + [None] * (4 - len(choices))
    return {"path": f"{uniq_id}.wav", "question": f"Question {uniq_id}?", "choice_a": c[0],
            "choice_b": c[1], "choice_c": c[2], "choice_d": c[3], "answer_gt": answer,
            "task_name": task_name, "dataset_name": dataset, "uniq_id": uniq_id}


def foundation_meta() -> list[dict]:
    """Six items: two speech tasks, one sound task, one music task (one of them binary)."""
    return [
        foundation_item(1, "Speech_Grounding", answer="b"),
        foundation_item(2, "Speech_Grounding", answer="a"),
        foundation_item(3, "Speaker_Gender_Recognition", "meld", answer="male",
                        choices=("female", "male")),
        foundation_item(4, "Sound_AQA", "avqa", answer="d"),
        foundation_item(5, "Sound_AQA", "clothoaqa", answer="c"),
        foundation_item(6, "Music_AQA", "music_avqa", answer="a"),
    ]


def chat_item(uniq_id, task_name="speech_QA", dataset="iemocap") -> dict:
    return {"meta_info": f"A description of clip {uniq_id}.", "question": f"What {uniq_id}?",
            "answer_gt": f"The reference answer {uniq_id}.", "path": f"{uniq_id}.wav",
            "task_name": task_name, "dataset_name": dataset, "uniq_id": uniq_id}


def chat_meta() -> list[dict]:
    return [
        chat_item(0, "speech_QA"), chat_item(1, "speech_dialogue_QA", "fisher"),
        chat_item(2, "sound_QA", "clotho"), chat_item(3, "music_QA", "musiccaps"),
        chat_item(4, "speech_and_sound_QA", "audiocaps_cv"),
        chat_item(5, "speech_and_music_QA", "musiccaps_cv"),
    ]


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def write_jsonl(path: Path, rows: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def by_hand(kind_name: str, items, outputs: dict, answers: dict):
    """(per-item rows, summary) as the pipeline makes them, from the kind's own rules;
    `answers` are keyed (uniq_id, round)."""
    from scoring.kinds import get_kind

    kind = get_kind(kind_name)
    rows = [kind.item_result(item, outputs.get(item.uniq_id),
                             {(0, k): a for (key, k), a in answers.items() if key == item.uniq_id})
            for item in items]
    return rows, kind.summarize(rows)
