"""A benchmark kind that exists only in the tests, and a judge for it.

The toy kind asks one question per item; an author uploads a JSONL of text answers
(`{"id", "answer"}` a line); the judge reads the question and the answer and replies one word,
"yes" (the answer is right) or "no". It reaches the platform through the Kind protocol only, so
that any page or step assuming MMAE or AIR-Bench shows up in tests/scoring/kinds/test_toy_kind.py.

Its judge is a small OpenAI-compatible server (`ToyJudge`): the judge simulator knows MMAE's and
AIR-Bench's prompts only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from config import jsontext
from scoring.kinds.base import (
    Dimension,
    ItemRows,
    Job,
    Kind,
    Metric,
    OutputFormat,
    RunData,
    Section,
    text_sha256,
)
from scoring.kinds.files import PredictionError

NAME = "toy-yesno"
PROMPT = ("Is the answer to this question right? Reply with one word: yes or no.\n"
          "Question: {question}\nAnswer: {answer}")
TOPICS = ("animals", "plants")
WORDS = ("yes", "no")


class ToyFileError(ValueError):
    """A toy metadata file that cannot be imported; `problems` names each fault."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class ToyItem:
    id: str
    question: str
    topic: str


def load_items(path) -> list[ToyItem]:
    """A JSON list of {"id", "question", "topic"}; every fault named by item number and id."""
    try:
        data = jsontext.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ToyFileError([f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}"]) from None
    if not isinstance(data, list):
        raise ToyFileError([f"{path}: expected a JSON list of items"])
    problems, items, seen = [], [], set()
    for number, raw in enumerate(data, start=1):
        key = raw.get("id") if isinstance(raw, dict) else None
        if not isinstance(key, str) or not key:
            problems.append(f"{path}: item {number}: needs a non-empty string 'id'")
            continue
        where = f"{path}: item {number} (id {key})"
        if key in seen:
            problems.append(f"{where}: duplicate id")
        elif not isinstance(raw.get("question"), str) or not raw["question"].strip():
            problems.append(f"{where}: 'question' must be non-empty text")
        elif raw.get("topic") not in TOPICS:
            problems.append(f"{where}: 'topic' must be one of {', '.join(TOPICS)}, "
                            f"got {raw.get('topic')!r}")
        else:
            items.append(ToyItem(key, raw["question"], raw["topic"]))
        seen.add(key)
    if problems:
        raise ToyFileError(problems)
    return items


def read_answers(text, *, name: str, known_ids: set[str], per_kind: int) -> dict[str, str]:
    """item id -> answer from a JSONL of {"id", "answer"}; PredictionError names every fault
    by line and id."""
    problems: list[str] = []
    answers: dict[str, str] = {}
    first: dict[str, int] = {}
    for number, line in jsontext.lines(text):
        try:
            value = jsontext.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{name} line {number}: invalid JSON at column {exc.colno}: "
                            f"{exc.msg}")
            continue
        key = value.get("id") if isinstance(value, dict) else None
        if key not in known_ids:
            problems.append(f"{name} line {number}: unknown id {key!r}")
            continue
        where = f"{name} line {number} (id {key})"
        if key in first:
            problems.append(f"{where}: duplicate id, first on line {first[key]}")
        elif not isinstance(value.get("answer"), str):
            problems.append(f"{where}: 'answer' must be text, got {value.get('answer')!r}")
        else:
            first[key] = number
            answers[key] = value["answer"]
    if not answers and not problems:
        problems.append(f"{name}: the file holds no answers")
    if problems:
        raise PredictionError(problems)
    return answers


def read_word(text: str) -> str:
    """The judge's verdict; anything but one of WORDS is unreadable (and retried)."""
    word = text.strip().strip(".!").lower()
    if word not in WORDS:
        raise ValueError(f"expected yes or no, got {text[:40]!r}")
    return word


def verdict_fields(word: str | None) -> dict:
    return {"choices": list(WORDS), "choice": None, "reason": None, "score": None,
            "verdict": {"yes": word == "yes"}}


def _figures(rows: list[dict]) -> dict:
    n = len(rows)
    return {"n": n,
            "yes_share": 100 * sum(r["yes"] for r in rows) / n if n else None,
            "answered_share": 100 * sum(not r["missing"] for r in rows) / n if n else None,
            "refusals": sum(r["refused"] for r in rows)}


class Toy(Kind):
    name = NAME
    title = "Toy yes/no questions"
    rounds = 1
    prompts = (PROMPT,)
    outputs = OutputFormat(files=False, read=read_answers, digest=text_sha256,
                           help='a JSONL of {"id", "answer"} lines')
    metrics = (
        Metric("yes_share", "share judged right", "Items whose answer the judge called right, "
               "of all items (percent)"),
        Metric("answered_share", "share answered", "Items with an answer (percent)"),
        Metric("refusals", "unreadable verdicts", "Answers the judge gave no yes or no for",
               count=True),
    )
    ranking = ("yes_share", "answered_share")
    ranking_text = "Ranked by the share judged right, then the share answered"
    dimensions = (Dimension("topic", "question topic", TOPICS),)
    item_noun = "question"
    failed_filter = "only questions not judged right"
    failed_queries = "counted as unreadable verdicts"
    chart_axes = ("answered_share", "yes_share")
    files = ("toy_verdicts.jsonl", "toy_scores.json")
    pairwise = ("Judged right", None)

    def load(self, path) -> list[ToyItem]:
        return load_items(path)

    def to_rows(self, item: ToyItem) -> ItemRows:
        return ItemRows(key=item.id, dimensions={"topic": item.topic},
                        content={"question": item.question}, media=[],
                        criteria=[{"index": 0, "category": "verdict", "question": item.question,
                                   "spec": {}}])

    def from_rows(self, rows: ItemRows) -> ToyItem:
        return ToyItem(rows.key, rows.content["question"], rows.dimensions["topic"])

    def jobs(self, items: Sequence[ToyItem], outputs: dict[str, str], *, rounds: int,
             seed: int, options: dict, output_path: Callable[[str], str],
             input_path: Callable[[str], str]) -> list[Job]:
        return [Job(item=item.id, criterion=0, round=round_, parse=read_word,
                    fields=verdict_fields,
                    messages=[{"role": "user", "content": PROMPT.format(
                        question=item.question, answer=outputs[item.id])}])
                for item in items if item.id in outputs for round_ in range(rounds)]

    def item_result(self, item: ToyItem, output: str | None,
                    answers: dict[tuple[int, int], dict]) -> dict:
        answer = answers.get((0, 0))
        refused = output is not None and (answer is None or answer["error"] is not None)
        return {"id": item.id, "topic": item.topic, "missing": output is None,
                "yes": bool(answer and not refused and answer["verdict"]["yes"]),
                "refused": refused}

    def item_columns(self, row: dict) -> dict:
        return {"values": row, "passed": row["yes"], "score": float(row["yes"])}

    def summarize(self, rows: Sequence[dict]) -> dict:
        return {"overall": _figures(list(rows)),
                "topic": {topic: _figures([r for r in rows if r["topic"] == topic])
                          for topic in TOPICS if any(r["topic"] == topic for r in rows)}}

    vector_names = ("yes", "missing")

    def item_vector(self, row: dict) -> tuple[float, ...]:
        return float(row["yes"]), float(row["missing"])

    def replicate_figures(self, weights, values: dict, dims: list[dict]) -> dict:
        drawn = weights.sum(axis=1, keepdims=True)
        return {"yes_share": 100 * (weights @ values["yes"]) / drawn,
                "answered_share": 100 * (weights @ (1 - values["missing"])) / drawn}

    def synthetic_row(self, item: ToyItem, rng, skill: float) -> dict:
        return {"id": item.id, "topic": item.topic, "missing": False,
                "yes": rng.random() < skill, "refused": False}

    def file_chunks(self, name: str, data: RunData) -> Iterable[str]:
        if name == "toy_verdicts.jsonl":
            return (json.dumps({"id": rows.key, "answer": data.outputs.get(rows.key),
                                **(row or {}), "raw": (answers.get((0, 0)) or {}).get("raw")})
                    + "\n" for rows, row, answers in data.items())
        if name == "toy_scores.json":
            return [json.dumps({**data.meta, **data.slices()}, indent=1)]
        raise ValueError(f"{self.name} has no results file {name!r}")

    def explorer_item(self, rows: ItemRows, result: dict | None, answers: list[dict],
                      output: str | None) -> dict:
        item = super().explorer_item(rows, result, answers, output)
        item["outcome"] = None if result is None else (
            "no answer" if result["missing"] else "no verdict" if result["refused"]
            else "judged right" if result["yes"] else "judged wrong")
        for judgment, answer in zip(item["judgments"], answers, strict=True):
            judgment["label"] = "verdict"
            judgment["choice"] = None if answer["error"] else WORDS[not answer["verdict"]["yes"]]
        return item

    def failed(self, columns: dict) -> bool:
        """Not judged right: wrong, without a verdict, or unanswered."""
        return not columns["values"].get("yes")

    def how_scoring_works(self) -> list[Section]:
        return [Section("What is asked", (
            "The judge reads each question and its answer and replies yes or no.",))]


class ToyJudge:
    """An OpenAI-compatible judge on a free loopback port, in a thread: `reply(prompt)` gives
    the word it answers. Every prompt asked is kept in `asked`."""

    def __init__(self, reply: Callable[[str], str]):
        self.asked: list[str] = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path != "/v1/models":
                    return self._send(404, {"error": "not found"})
                self._send(200, {"object": "list", "data": [{"id": "toy-judge",
                                                             "object": "model"}]})

            def do_POST(self):
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": "not found"})
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                prompt = body["messages"][-1]["content"]
                judge.asked.append(prompt)
                self._send(200, {"id": f"toy-{len(judge.asked)}", "object": "chat.completion",
                                 "model": body["model"], "choices": [{
                                     "index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant",
                                                 "content": reply(prompt)}}]})

            def _send(self, status: int, payload: dict):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # the test output stays quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
