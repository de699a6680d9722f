"""AIR-Bench as ../shared/airbench/SPEC.md defines it: metadata, predictions, the official letter
extraction, the alignment and chat judge prompts, reply parsing and aggregation.

Plain Python with no Django import, shared by the import command, the workers and the tests.
Two tracks, two benchmark kinds: the foundation track (single-choice questions, scored by a
rule, optionally aligned by the judge) and the chat track (open questions, judged twice with
the answers' positions swapped).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from config import jsontext
from scoring.kinds.files import (
    MAX_PER_KIND,
    MetaError,
    PredictionError,
    Problems,
    ReplyError,
    keys_instead,
    read_json,
    show,
)

FOUNDATION = "airbench-foundation"


CHAT = "airbench-chat"


LETTERS = "ABCD"


DOMAINS = ("speech", "sound", "music")


# task_name (the real keys, misspellings included) -> (domain, display name), in the order of
# the published table (../shared/airbench/task_map.json).
TASKS: dict[str, tuple[str, str]] = {
    "Speech_Grounding": ("speech", "Speech grounding"),
    "Spoken_Language_Identification": ("speech", "Spoken language identification"),
    "Speaker_Gender_Recognition": ("speech", "Speaker gender recognition"),
    "Speaker_Emotion_Recontion": ("speech", "Emotion recognition"),
    "Speaker_Age_Prediction": ("speech", "Speaker age prediction"),
    "Speech_Entity_Reconition": ("speech", "Speech entity recognition"),
    "Speaker_Intent_Classification": ("speech", "Intent classification"),
    "Speaker_Number_Verification": ("speech", "Speaker number verification"),
    "Synthesized_Voice_Detection": ("speech", "Synthesized voice detection"),
    "Audio_Grounding": ("sound", "Audio grounding"),
    "vocal_sound_classification": ("sound", "Vocal sound classification"),
    "Acoustic_Scene_Classification": ("sound", "Acoustic scene classification"),
    "Sound_AQA": ("sound", "Sound question answering"),
    "Music_Instruments_Classfication": ("music", "Music instruments classification"),
    "Music_Genre_Recognition": ("music", "Music genre classification"),
    "Music_Midi_Pitch_Analysis": ("music", "Music note analysis-pitch"),
    "Music_Midi_Velocity_Analysis": ("music", "Music note analysis-velocity"),
    "Music_AQA": ("music", "Music question answering"),
    "Music_Mood_Recognition": ("music", "Music emotion detection"),
}


TASK_ORDER = [display for _, display in TASKS.values()]


CHAT_CATEGORIES: dict[str, str] = {
    "speech_QA": "speech", "speech_dialogue_QA": "speech",
    "sound_QA": "sound", "sound_generation_QA": "sound",
    "music_QA": "music", "music_generation_analysis_QA": "music",
    "speech_and_sound_QA": "speech_and_sound",
    "speech_and_music_QA": "speech_and_music",
}


MIXED = "mixed_audio"


MIXED_OF = ("speech_and_sound", "speech_and_music")


CATEGORY_ORDER = ("speech", "sound", "music", *MIXED_OF, MIXED)


AVERAGE_OF = ("speech", "sound", "music", MIXED)


CHAT_TASK_ORDER = list(CHAT_CATEGORIES)


# Official align_in_foundation.py, verbatim (SPEC "Optional alignment").
ALIGN_TEMPLATE = (
    'There is a question "{question}", and one response is "{response}". Among the following '
    "choices, which option best matches this response? You may only response with the letter "
    "of the option. If the letter of an option has already appeared in the Answer, then simply "
    "return that letter. If there are no matching options, then choose one at random. The "
    "following lines are the options."
)


ALIGN_CLOSING = ("\nTo reiterate, the response you provide to me must be a single letter, either "
                 "A, B, C, or D.")


# Official score_chat.py, verbatim (SPEC "Judge prompt").
CHAT_TEMPLATE = """\
You are a helpful and precise assistant for checking the quality of the answer.
[Detailed Audio Description]
XAudioX
[Question]
XQuestionX
[The Start of Assistant 1s Answer]
XAssistant1X
[The End of Assistant 1s Answer]
[The Start of Assistant 2s Answer]
XAssistant2X
[The End of Assistant 2s Answer]
[System]
We would like to request your feedback on the performance of two AI assistants in response to the user question and audio description displayed above. AI assistants are provided with detailed audio descriptions and questions.
Please rate the helpfulness, relevance, accuracy, and comprehensiveness of their responses. Each assistant receives an overall score on a scale of 1 to 10, where a higher score indicates better overall performance. Please output a single line containing only two values indicating the scores for Assistant 1 and 2, respectively. The two scores are separated by a space."""  # noqa: E501


PASSES = ("A", "B")  # round 0: reference first; round 1: swapped


CHAT_ROUNDS = 2


MAX_CHAT_SCORE = 10


# The listening panel: a rater reads the question, the reference answer and the system's answer
# and says whether the answer is right (the first option); the judge says so when the mean of
# its two passes' scores is above the middle of its 1-10 scale.
CHAT_PANEL_QUESTION = "Is the system's answer right, against the reference answer?"
CHAT_PANEL_OPTIONS = ("Right: it answers the question as the reference answer does",
                      "Wrong: it misses or contradicts the reference answer")
CHAT_RIGHT_ABOVE = (1 + MAX_CHAT_SCORE) / 2


@dataclass(frozen=True)
class FoundationItem:
    uniq_id: str
    path: str
    question: str
    choices: tuple[str, ...]  # 2 or 4 option texts, A first
    answer_gt: str
    task_name: str
    dataset_name: str

    @property
    def domain(self) -> str:
        return TASKS[self.task_name][0]

    @property
    def task(self) -> str:
        return TASKS[self.task_name][1]

    @property
    def correct_letter(self) -> str:
        """The letter of the first choice whose text equals answer_gt (the official rule)."""
        return LETTERS[self.choices.index(self.answer_gt)]

    @property
    def media(self) -> str:
        return audio_path("Foundation", self.task_name, self.dataset_name, self.path)

    def dimensions(self) -> dict:
        return {"domain": self.domain, "task": self.task, "task_name": self.task_name,
                "dataset": self.dataset_name}


@dataclass(frozen=True)
class ChatItem:
    uniq_id: str
    path: str
    question: str
    answer_gt: str
    meta_info: str
    task_name: str
    dataset_name: str

    @property
    def category(self) -> str:
        return CHAT_CATEGORIES[self.task_name]

    @property
    def media(self) -> str:
        return audio_path("Chat", self.task_name, self.dataset_name, self.path)

    def dimensions(self) -> dict:
        return {"category": self.category, "task": self.task_name, "dataset": self.dataset_name}


def audio_path(track: str, task_name: str, dataset_name: str, path: str) -> str:
    """{track}/{task_name}_{dataset_name}/{path}; Audio_Grounding's files are FLAC on disk."""
    if track == "Foundation" and task_name == "Audio_Grounding" and path.endswith("wav"):
        path = path[:-3] + "flac"
    return f"{track}/{task_name}_{dataset_name}/{path}"


def _uniq_id(raw: dict, problems: list[str]) -> str | None:
    value = raw.get("uniq_id")
    if isinstance(value, bool) or not isinstance(value, (int, str)) or str(value).strip() == "":
        problems.append(f"field 'uniq_id' must be an integer or a non-empty string, got "
                        f"{show(value)}")
        return None
    return str(value)


def _text(raw: dict, key: str, problems: list[str], *, empty_ok: bool = False) -> str | None:
    value = raw.get(key)
    if not isinstance(value, str) or (not empty_ok and not value.strip()):
        problems.append(f"field '{key}' must be a non-empty string, got {show(value)}")
        return None
    return value


def _parse_array(data, source: str, parse_one) -> list:
    """Check every entry with `parse_one(raw, problems)`; raise MetaError naming each fault by
    file, index and uniq_id."""
    if not isinstance(data, list):
        raise MetaError([f"{source}: the top level must be a JSON array of items"])
    if not data:
        raise MetaError([f"{source}: the file holds no items"])
    problems: list[str] = []
    items = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(data, start=1):
        item_problems: list[str] = []
        item = parse_one(raw, item_problems)
        where = f"{source}: item {index}"
        if isinstance(raw, dict) and isinstance(raw.get("uniq_id"), (int, str)):
            where += f" (uniq_id {raw['uniq_id']})"
        problems.extend(f"{where}: {p}" for p in item_problems)
        if item is None:
            continue
        if item.uniq_id in seen:
            problems.append(f"{where}: duplicate uniq_id, first used by item {seen[item.uniq_id]}")
        seen.setdefault(item.uniq_id, index)
        items.append(item)
    if problems:
        raise MetaError(problems)
    return items


def _foundation_item(raw, problems: list[str]) -> FoundationItem | None:
    if not isinstance(raw, dict):
        problems.append(f"must be a JSON object, got {show(raw)}")
        return None
    uniq_id = _uniq_id(raw, problems)
    texts = {k: _text(raw, k, problems) for k in ("path", "question", "answer_gt", "task_name",
                                                   "dataset_name")}
    choices = [_text(raw, key, problems, empty_ok=True) for key in ("choice_a", "choice_b")]
    optional = [raw.get("choice_c"), raw.get("choice_d")]
    if optional[0] is None and optional[1] is not None:
        problems.append("field 'choice_d' is given but 'choice_c' is not")
    for key, value in zip(("choice_c", "choice_d"), optional, strict=True):
        if value is not None and not isinstance(value, str):
            problems.append(f"field '{key}' must be a string or null, got {show(value)}")
    choices += [v for v in optional if isinstance(v, str)]
    task_name = texts["task_name"]
    if task_name is not None and task_name not in TASKS:
        problems.append(f"field 'task_name' {task_name!r} is not an AIR-Bench foundation task")
    if problems:
        return None
    if texts["answer_gt"] not in choices:
        problems.append(f"field 'answer_gt' {show(texts['answer_gt'])} equals none of the "
                        f"choices {show(choices)}")
        return None
    return FoundationItem(uniq_id=uniq_id, path=texts["path"], question=texts["question"],
                          choices=tuple(choices), answer_gt=texts["answer_gt"],
                          task_name=task_name, dataset_name=texts["dataset_name"])


def _chat_item(raw, problems: list[str]) -> ChatItem | None:
    if not isinstance(raw, dict):
        problems.append(f"must be a JSON object, got {show(raw)}")
        return None
    uniq_id = _uniq_id(raw, problems)
    texts = {k: _text(raw, k, problems) for k in ("path", "question", "answer_gt", "meta_info",
                                                   "task_name", "dataset_name")}
    task_name = texts["task_name"]
    if task_name is not None and task_name not in CHAT_CATEGORIES:
        problems.append(f"field 'task_name' {task_name!r} is not an AIR-Bench chat task")
    if problems:
        return None
    return ChatItem(uniq_id=uniq_id, path=texts["path"], question=texts["question"],
                    answer_gt=texts["answer_gt"], meta_info=texts["meta_info"],
                    task_name=task_name, dataset_name=texts["dataset_name"])


def parse_foundation(data, *, source: str = "Foundation_meta.json") -> list[FoundationItem]:
    return _parse_array(data, source, _foundation_item)


def parse_chat(data, *, source: str = "Chat_meta.json") -> list[ChatItem]:
    return _parse_array(data, source, _chat_item)


def load_foundation(path) -> list[FoundationItem]:
    return parse_foundation(read_json(path), source=str(path))


def load_chat(path) -> list[ChatItem]:
    return parse_chat(read_json(path), source=str(path))


@dataclass(frozen=True)
class Response:
    uniq_id: str
    response: str
    where: str  # "line 3"


def parse_responses(text, *, name: str, known_ids: set[str],
                    per_kind: int = MAX_PER_KIND) -> list[Response]:
    """A predictions JSONL (one object a line with `uniq_id` and `response`), its text or a
    text stream read a line at a time, checked against the benchmark's ids; raise
    PredictionError naming its faults by line and uniq_id, the first `per_kind` of each kind
    and how many more."""
    problems = Problems(per_kind)
    responses: list[Response] = []
    first: dict[str, str] = {}
    seen = 0
    for number, line in jsontext.lines(text):
        seen += 1
        place = f"line {number}"
        try:
            value = jsontext.loads(line)
        except json.JSONDecodeError as exc:
            problems.add("lines of invalid JSON", f"{name} {place}: invalid JSON at column "
                         f"{exc.colno}: {exc.msg}")
            continue
        if not isinstance(value, dict):
            problems.add("lines that are not objects",
                         f"{name} {place}: must be a JSON object, got {show(value)}")
            continue
        raw_id = value.get("uniq_id")
        if isinstance(raw_id, bool) or not isinstance(raw_id, (int, str)) or raw_id == "":
            problems.add("lines without a uniq_id", f"{name} {place}: 'uniq_id' must be an "
                         f"integer or a non-empty string, got {show(raw_id)}"
                         f"{keys_instead(value, 'uniq_id')}")
            continue
        uniq_id = str(raw_id)
        where = f"{name} {place} (uniq_id {uniq_id})"
        if uniq_id not in known_ids:
            problems.add("unknown uniq_ids", f"{where}: unknown uniq_id (not in the benchmark)")
            continue
        if "response" not in value:
            problems.add("lines without a response", f"{where}: no 'response' field")
            continue
        if not isinstance(value["response"], str):
            problems.add("responses that are not strings", f"{where}: 'response' must be a "
                         f"string, got {show(value['response'])}")
            continue
        if uniq_id in first:
            problems.add("duplicate uniq_ids", f"{where}: duplicate uniq_id, first on "
                         f"{first[uniq_id]}")
            continue
        first[uniq_id] = place
        responses.append(Response(uniq_id=uniq_id, response=value["response"], where=place))
    if not seen:
        raise PredictionError([f"{name}: the file holds no predictions"])
    if problems:
        raise PredictionError(problems.messages())
    return responses


def extract_letter(response: str | None) -> str | None:
    """Official score_foundation.py: strip, drop newlines; the first character if it is A-D,
    else the second-to-last if it is A-D, else None (unparsed)."""
    if not isinstance(response, str):
        return None
    text = response.strip().replace("\n", "")
    if text and text[0] in LETTERS:
        return text[0]
    if len(text) >= 2 and text[-2] in LETTERS:
        return text[-2]
    return None


def alignment_prompt(question: str, response: str, choices: Sequence[str]) -> str:
    options = "".join(f"\n{LETTERS[i]}. {choice}" for i, choice in enumerate(choices))
    return ALIGN_TEMPLATE.format(question=question, response=response) + options + ALIGN_CLOSING


def parse_alignment(text: str | None, n_choices: int) -> str:
    """The letter of an alignment reply, read with the same official rule; ReplyError when it
    has none or names an option the question does not have."""
    letter = extract_letter(text)
    if letter is None:
        raise ReplyError(f"no option letter in the reply {show(text)}")
    if LETTERS.index(letter) >= n_choices:
        raise ReplyError(f"letter {letter!r} is not among the {n_choices} options")
    return letter


def chat_prompt(*, meta_info: str, question: str, assistant1: str, assistant2: str) -> str:
    # One pass of replacements in a single regex, so a placeholder inside an answer stays.
    values = {"XAudioX": meta_info, "XQuestionX": question, "XAssistant1X": assistant1,
              "XAssistant2X": assistant2}
    return re.sub("XAudioX|XQuestionX|XAssistant1X|XAssistant2X",
                  lambda m: values[m.group(0)], CHAT_TEMPLATE)


def chat_pass_prompt(item: ChatItem, response: str, round_: int) -> str:
    """Pass A (round 0): the reference is Assistant 1; pass B (round 1): swapped."""
    first, second = (item.answer_gt, response) if round_ == 0 else (response, item.answer_gt)
    return chat_prompt(meta_info=item.meta_info, question=item.question, assistant1=first,
                       assistant2=second)


def parse_chat_reply(text: str | None) -> tuple[int, int]:
    """The two scores, read as the official cal_score.py reads them: strip, remove every
    "\\n", split on single spaces; exactly two parts, each taken by int() (so "+9 8" and "-5 4"
    are read), neither above 10. ReplyError otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise ReplyError("empty reply")
    try:
        pair = tuple(int(part) for part in text.strip().replace("\n", "").split(" "))
    except ValueError:
        pair = ()
    if len(pair) != 2:
        raise ReplyError(f"not two integers separated by a space: {show(text)}")
    if max(pair) > MAX_CHAT_SCORE:
        raise ReplyError(f"a score above {MAX_CHAT_SCORE}: {show(text)}")
    return pair


def model_score(pair: Sequence[int], round_: int) -> int:
    """The model's score in a pass: second number in pass A, first in pass B."""
    return pair[1] if round_ == 0 else pair[0]
