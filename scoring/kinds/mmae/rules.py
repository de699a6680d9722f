"""MMAE as SPEC.md defines it: metadata, the judge query, reply parsing, votes, metrics, slices.

Plain Python with no Django import, shared by the `score` command, the Celery workers and the
tests. Section numbers in comments refer to ../shared/mmae/SPEC.md.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from scoring.kinds.files import MetaError, ReplyError, read_json, show

KIND = "mmae"


ROUNDS = 3


IF_CATEGORY = "Instruction Following"


LETTERS = string.ascii_uppercase


# Paper Appendix C, verbatim (judge_system_prompt.txt without its final newline).
SYSTEM_PROMPT = """\
You are an audio analysis assistant. Your task is to answer user questions strictly based on the factual content of the provided audio clips. Carefully listen to and analyze the audio before answering.
Audio reference notation:
- A bare reference like <audio output> or <audio input1> refers to the full duration of that audio clip.
- A reference with [start:end] denotes a time slice of that clip (e.g. <audio output[0.0s:3s]> means the segment from 0.0s to 3.0s).
- An omitted start means the beginning of the clip (e.g. <audio input1[:2.0s]> means from the beginning up to 2.0s).
- An omitted end means the end of the clip (e.g. <audio output[1.5s:]> means from 1.5s to the end).
- A negative value counts backward from the end (e.g. <audio input2[-2.5s:]> means the last 2.5 seconds of that clip).
- The slicing semantics follow Python-style [start:end] conventions.
Guidelines:
- Base your answers only on information that is clearly present or can be directly inferred from the audio.
- Do NOT make up details that are not supported by the audio.
- If the audio does not contain enough information to answer the question, say so explicitly.
- When relevant, reference specific parts of the audio (e.g., events, sounds, speech content, timing).
- Be concise, clear, and accurate.
- If the audio contains speech, you may transcribe or summarize relevant portions to support your answer.
- If the audio is noisy, ambiguous, or unclear, acknowledge the uncertainty.
Your goal is to provide reliable, evidence-based answers grounded in the audio content only."""  # noqa: E501


# Section 3, verbatim.
QUERY_TEMPLATE = """\
Based on the objective content of the uploaded audio, answer the following multiple-choice question. First carefully perceive, analyze, and reason about the audio content, then choose exactly one option from the list. Return only JSON with keys "reason" and "choice". Put the reason first and the final choice last. The choice value must be a single uppercase letter identifying the option.

Question: {question}

Choices: {choices}"""  # noqa: E501


LABEL_RE = re.compile(r"<audio (output|input(\d+))(\[[^\]<>]*\])?>")


COMPLEXITY_SINGLE = "single"


@dataclass(frozen=True)
class Rubric:
    index: int
    category: str
    question: str
    right_choice: str
    wrong_choices: tuple[str, ...]

    @property
    def is_instruction_following(self) -> bool:
        return self.category == IF_CATEGORY

    @property
    def labels(self) -> list[str]:
        return question_labels(self.question)


@dataclass(frozen=True)
class Sample:
    id: str
    complexity: str
    modality: str
    granularity: tuple[str, ...]
    operations: tuple[tuple[str, str], ...]
    messages: list = field(compare=False, hash=False)
    tags: list = field(compare=False, hash=False)
    rubrics: tuple[Rubric, ...]
    input_audio: tuple[str, ...]

    @property
    def instruction(self) -> str:
        """The user's text turns joined, for display and search."""
        return "\n".join(
            part["text"]
            for message in self.messages
            for part in content_parts(message)
            if part.get("type") == "text" and isinstance(part.get("text"), str)
        )

    def dimensions(self) -> dict:
        return {
            "complexity": self.complexity,
            "modality": self.modality,
            "granularity": list(self.granularity),
            "operations": [{"granularity": g, "operation": o} for g, o in self.operations],
        }


def question_labels(question: str) -> list[str]:
    """Audio labels a question names, in order of first appearance; `output` when none."""
    labels: list[str] = []
    for match in LABEL_RE.finditer(question):
        if match.group(1) not in labels:
            labels.append(match.group(1))
    return labels or ["output"]


_SLICE_RE = re.compile(r"\[\s*(-?\d+(?:\.\d+)?)?s?\s*:\s*(-?\d+(?:\.\d+)?)?s?\s*\]")


def _seconds(value: str) -> str:
    return f"{float(value):g} s"


def _bound(value: str, edge: str) -> str:
    """One end of a slice in words: a negative value counts back from the end."""
    if value.startswith("-"):
        return f"{_seconds(value[1:])} before its end"
    return _seconds(value) if value else edge


def reference_readings(question: str) -> tuple[str, ...]:
    """Each time slice a question names (`<audio output[-1.0s:]>`), once, in words, as the
    judge's system prompt explains the notation to the judge: Python-style [start:end] in
    seconds, an omitted end the clip's own, a negative value counted back from the end. A bare
    reference or a slice written otherwise gets none."""
    readings: list[str] = []
    for match in LABEL_RE.finditer(question):
        if match.group(3) is None or not (found := _SLICE_RE.fullmatch(match.group(3))):
            continue
        start, end = found.group(1) or "", found.group(2) or ""
        label = match.group(1)
        if start.startswith("-") and not end:
            words = f"the last {_seconds(start[1:])} of {label}"
        elif not start and not end:
            words = f"all of {label}"
        else:
            words = (f"{label} from {_bound(start, 'its start')} "
                     f"to {_bound(end, 'its end')}")
        reading = f"{match.group(0)}: {words}"
        if reading not in readings:
            readings.append(reading)
    return tuple(readings)


def content_parts(message: dict) -> list[dict]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [part for part in content or [] if isinstance(part, dict)]


def audio_url_of(part: dict) -> str | None:
    """The path of an audio content part, in either spelling seen in ChatML files."""
    url = part.get("audio_url")
    if isinstance(url, dict):
        url = url.get("url")
    return url if isinstance(url, str) and url else None


def parse_meta(data, *, source: str = "MMAE-meta.json") -> list[Sample]:
    """Check and convert a loaded metadata array; raise MetaError naming every fault."""
    if not isinstance(data, list):
        raise MetaError([f"{source}: the top level must be a JSON array of samples"])
    problems: list[str] = []
    samples: list[Sample] = []
    seen: dict[str, int] = {}
    for position, raw in enumerate(data, start=1):
        sample_problems: list[str] = []
        sample = _parse_sample(raw, sample_problems)
        where = f"{source}: sample {position}"
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            where += f" (id {raw['id']})"
        problems.extend(f"{where}: {p}" for p in sample_problems)
        if sample is None:
            continue
        if sample.id in seen:
            problems.append(f"{where}: duplicate id, first used by sample {seen[sample.id]}")
        seen.setdefault(sample.id, position)
        samples.append(sample)
    if not data:
        problems.append(f"{source}: the file holds no samples")
    if problems:
        raise MetaError(problems)
    return samples


def load_meta(path) -> list[Sample]:
    """Read and check MMAE-meta.json; syntax errors name the line and column."""
    return parse_meta(read_json(path), source=str(path))


def _str_field(raw: dict, key: str, problems: list[str]) -> str | None:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        problems.append(f"field '{key}' must be a non-empty string, got {show(value)}")
        return None
    return value


def _parse_sample(raw, problems: list[str]) -> Sample | None:
    if not isinstance(raw, dict):
        problems.append(f"must be a JSON object, got {show(raw)}")
        return None
    sample_id = _str_field(raw, "id", problems)
    complexity = _str_field(raw, "complexity", problems)
    modality = _str_field(raw, "modality", problems)
    granularity = raw.get("granularity")
    if (
        not isinstance(granularity, list)
        or not granularity
        or not all(isinstance(g, str) and g for g in granularity)
    ):
        problems.append(f"field 'granularity' must be a non-empty list of strings, got "
                        f"{show(granularity)}")
        granularity = []
    operations = _parse_operations(raw.get("operations"), problems)
    messages = raw.get("messages")
    input_audio = _parse_messages(messages, problems)
    tags = raw.get("tags", [])
    if not isinstance(tags, list):
        problems.append(f"field 'tags' must be a list, got {show(tags)}")
    rubrics = _parse_rubrics(raw.get("rubrics"), len(input_audio), problems)
    if problems:
        return None
    return Sample(
        id=sample_id,
        complexity=complexity,
        modality=modality,
        granularity=tuple(granularity),
        operations=operations,
        messages=messages,
        tags=tags,
        rubrics=rubrics,
        input_audio=tuple(input_audio),
    )


def _parse_operations(operations, problems: list[str]) -> tuple[tuple[str, str], ...]:
    if not isinstance(operations, list) or not operations:
        problems.append(f"field 'operations' must be a non-empty list, got {show(operations)}")
        return ()
    parsed = []
    for i, op in enumerate(operations):
        if (
            not isinstance(op, dict)
            or not isinstance(op.get("granularity"), str)
            or not isinstance(op.get("operation"), str)
            or not op["granularity"]
            or not op["operation"]
        ):
            problems.append(
                f"field 'operations[{i}]' must be {{\"granularity\": str, \"operation\": str}}, "
                f"got {show(op)}"
            )
            continue
        parsed.append((op["granularity"], op["operation"]))
    return tuple(parsed)


def _parse_messages(messages, problems: list[str]) -> list[str]:
    """Check the user turns; return the input audio paths in order of appearance."""
    if not isinstance(messages, list) or not messages:
        problems.append(f"field 'messages' must be a non-empty list, got {show(messages)}")
        return []
    audio: list[str] = []
    for m, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            problems.append(f"field 'messages[{m}]' must be an object with a 'role'")
            continue
        content = message.get("content")
        if not isinstance(content, (list, str)):
            problems.append(f"field 'messages[{m}].content' must be a list or a string")
            continue
        for p, part in enumerate(content_parts(message)):
            if part.get("type") == "audio":
                url = audio_url_of(part)
                if url is None:
                    problems.append(f"field 'messages[{m}].content[{p}].audio_url' is missing")
                else:
                    audio.append(url)
    if not audio:
        problems.append("field 'messages' holds no audio item")
    return audio


def _parse_rubrics(rubrics, n_inputs: int, problems: list[str]) -> tuple[Rubric, ...]:
    if not isinstance(rubrics, list) or not rubrics:
        problems.append(f"field 'rubrics' must be a non-empty list, got {show(rubrics)}")
        return ()
    parsed = []
    for i, raw in enumerate(rubrics):
        where = f"field 'rubrics[{i}]"
        if not isinstance(raw, dict):
            problems.append(f"{where}' must be an object, got {show(raw)}")
            continue
        texts = {}
        for key in ("category", "question", "right_choice"):
            value = raw.get(key)
            if not isinstance(value, str) or not value.strip():
                problems.append(f"{where}.{key}' must be a non-empty string, got {show(value)}")
            texts[key] = value
        wrong = raw.get("wrong_choices")
        if (
            not isinstance(wrong, list)
            or not wrong
            or not all(isinstance(w, str) and w.strip() for w in wrong)
        ):
            problems.append(f"{where}.wrong_choices' must be a non-empty list of strings, got "
                            f"{show(wrong)}")
            continue
        if len(wrong) + 1 > len(LETTERS):
            problems.append(f"{where}.wrong_choices' has more than {len(LETTERS) - 1} entries")
            continue
        if isinstance(texts["question"], str):
            for label in question_labels(texts["question"]):
                if label != "output" and not 1 <= int(label[5:]) <= n_inputs:
                    problems.append(
                        f"{where}.question' names <audio {label}> but the sample has "
                        f"{n_inputs} input audio item(s)"
                    )
        parsed.append(
            Rubric(
                index=i,
                category=texts["category"],
                question=texts["question"],
                right_choice=texts["right_choice"],
                wrong_choices=tuple(wrong),
            )
        )
    return tuple(parsed)


@dataclass(frozen=True)
class Query:
    """What is asked of the judge for one (sample, rubric, round)."""

    sample_id: str
    rubric_index: int
    round: int
    choices: tuple[str, ...]
    correct_letter: str
    labels: tuple[str, ...]

    def letter_of(self, text: str) -> str:
        return LETTERS[self.choices.index(text)]


def shuffled_choices(rubric: Rubric, *, seed: int, sample_id: str, round_: int):
    """Choices in presented order and the letter of the right one, reproducible from the seed.

    The RNG is keyed by (seed, sample, rubric, round), so every query gets its own shuffle and a
    resumed run presents exactly what the interrupted one did. Positions are shuffled rather than
    texts, so a wrong choice that repeats the right one's text cannot move the answer key.
    """
    options = (rubric.right_choice, *rubric.wrong_choices)
    order = list(range(len(options)))
    random.Random(f"mmae:{seed}:{sample_id}:{rubric.index}:{round_}").shuffle(order)
    presented = tuple(options[i] for i in order)
    return presented, LETTERS[order.index(0)]


def make_query(sample: Sample, rubric: Rubric, round_: int, *, seed: int) -> Query:
    choices, correct = shuffled_choices(rubric, seed=seed, sample_id=sample.id, round_=round_)
    return Query(
        sample_id=sample.id,
        rubric_index=rubric.index,
        round=round_,
        choices=choices,
        correct_letter=correct,
        labels=tuple(rubric.labels),
    )


def query_text(question: str, choices: Sequence[str]) -> str:
    lines = "\n".join(f"{LETTERS[i]}. {choice}" for i, choice in enumerate(choices))
    return QUERY_TEMPLATE.format(question=question, choices=lines)


def query_messages(sample: Sample, rubric: Rubric, query: Query, *,
                   audio: Callable[[str], object]) -> list[dict]:
    """The chat messages of one query; `audio(label)` is what goes where the audio's URL
    goes (its base64 `data:` URI when sent)."""
    content: list[dict] = []
    for label in query.labels:
        content.append({"type": "text", "text": f"<audio {label}>: "})
        content.append({"type": "audio_url", "audio_url": {"url": audio(label)}})
    content.append({"type": "text", "text": query_text(rubric.question, query.choices)})
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": content},
    ]


def input_of(label: str, sample: Sample) -> str:
    """The input audio path that `inputN` names."""
    return sample.input_audio[int(label[5:]) - 1]


_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


_LETTER_RE = re.compile(r"^\s*\(?\s*([A-Z])\s*[\).:]?\s*$")


def _json_objects(text: str) -> Iterable[dict]:
    """JSON objects found in a reply: the whole text, fenced blocks, then any embedded one."""
    candidates = [text.strip(), *(block.strip() for block in _FENCE_RE.findall(text))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            yield value
        start = text.find("{", start + 1)


def parse_reply(text: str | None, n_choices: int) -> tuple[str, str]:
    """Return (letter, reason) from a judge reply, or raise ReplyError saying what is wrong.

    Never guesses: a reply with no JSON object holding a single in-range letter is unusable.
    """
    if not isinstance(text, str) or not text.strip():
        raise ReplyError("empty reply")
    found_object = False
    for obj in _json_objects(text):
        if "choice" not in obj:
            found_object = True
            continue
        choice = obj["choice"]
        match = _LETTER_RE.match(choice) if isinstance(choice, str) else None
        if match is None:
            raise ReplyError(f"choice {show(choice)} is not a single letter")
        letter = match.group(1)
        if LETTERS.index(letter) >= n_choices:
            raise ReplyError(f"choice {letter!r} is not among the {n_choices} options")
        reason = obj.get("reason")
        return letter, reason if isinstance(reason, str) else ""
    if found_object:
        raise ReplyError("the JSON in the reply has no 'choice' key")
    raise ReplyError("no JSON object in the reply")
