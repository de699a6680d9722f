"""What AIR-Bench's two tracks share as benchmark kinds: text responses in a JSONL file, the
results files, the explorer and the published tables. The rules are in `rules` and `metrics`."""

from __future__ import annotations

import abc
import json
from collections.abc import Iterable

from scoring.kinds.airbench import rules as airbench
from scoring.kinds.base import ItemRows, Kind, OutputFormat, RunData, text_sha256

JUDGE_FIELDS = ("raw", "error", "endpoint", "attempts", "latency_ms")


def _read_responses(text, *, name: str, known_ids: set[str], per_kind: int) -> dict[str, str]:
    responses = airbench.parse_responses(text, name=name, known_ids=known_ids,
                                         per_kind=per_kind)
    return {r.uniq_id: r.response for r in responses}


TEXT_RESPONSES = OutputFormat(
    files=False, read=_read_responses, digest=text_sha256,
    help='a predictions file (JSONL: one {"uniq_id", "response"} object a line, as the '
         "official inference scripts write it)")


def user_message(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


class AirBench(Kind):
    """A track of AIR-Bench: text responses, judged (or read by rule) per item."""

    outputs = TEXT_RESPONSES
    files = ("scores.json", "results.jsonl")

    def simulated_reply(self, body: dict, config) -> tuple[str, list] | None:
        from scoring.kinds.airbench import simulated  # the simulator's server: only it needs this

        return simulated.reply(body, config)

    def item_columns(self, row: dict) -> dict:
        return {"values": row, **self.score_columns(row)}

    @abc.abstractmethod
    def score_columns(self, row: dict) -> dict:
        """ItemResult's passed and score of a per-item row."""

    # --- results files -------------------------------------------------------------------

    def file_chunks(self, name: str, data: RunData) -> Iterable[str]:
        if name == "scores.json":
            return [json.dumps(self._scores(data), indent=1, ensure_ascii=False)]
        if name == "results.jsonl":
            return self._results_lines(data)
        raise ValueError(f"{self.name} has no results file {name!r}")

    def _scores(self, data: RunData) -> dict:
        """scores.json: the run's facts and every slice's figures, buckets in the kind's
        order."""
        result = dict(data.meta)
        for dimension, value in data.slices().items():
            result[dimension] = value if dimension == "overall" else {
                b: value[b] for b in sorted(value, key=lambda b, d=dimension:
                                            self.bucket_key(d, b))}
        return result

    def _results_lines(self, data: RunData) -> Iterable[str]:
        """One line per item and judge round, in benchmark order, missing items included."""
        for rows, row, answers in data.items():
            for round_ in range(self.rounds):
                answer = answers.get((0, round_))
                judged = {k: answer[k] for k in JUDGE_FIELDS} if answer else None
                line = {"uniq_id": rows.key, **rows.dimensions,
                        "response": data.outputs.get(rows.key),
                        "missing": rows.key not in data.outputs,
                        **self.result_line(row or {}, round_, answer, judged)}
                yield json.dumps(line, ensure_ascii=False) + "\n"

    def result_line(self, row: dict, round_: int, answer: dict | None,
                    judged: dict | None) -> dict:
        """What a line of results.jsonl says of an item's outcome in one round."""
        return {}

    # --- the explorer --------------------------------------------------------------------

    def explorer_item(self, rows: ItemRows, result: dict | None, answers: list[dict],
                      output: str | None) -> dict:
        item = super().explorer_item(rows, result, answers, output)
        content = rows.content
        item.update({
            "tags": [v for k, v in rows.dimensions.items() if k != "task_name"],
            "answer_gt": content.get("answer_gt"), "meta_info": content.get("meta_info"),
            "choices": [(airbench.LETTERS[i], c, c == content.get("answer_gt"))
                        for i, c in enumerate(content.get("choices", []))],
        })
        return item


def reference_table(data: dict, key: str, path) -> tuple[list[str], dict[str, list]]:
    """A published table's columns and rows, checked."""
    table = data.get(key) if isinstance(data, dict) else None
    if not isinstance(table, dict) or not isinstance(table.get("columns"), list) \
            or not isinstance(table.get("rows"), dict):
        raise ValueError(f"{path}: '{key}' must be an object with 'columns' and 'rows'")
    for name, values in table["rows"].items():
        if not isinstance(values, list) or len(values) != len(table["columns"]):
            raise ValueError(f"{path}: {key} row {name!r} needs {len(table['columns'])} "
                             "values")
    return table["columns"], table["rows"]


def reference_number(value, where: str) -> float | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ValueError(f"{where}: expected a number or null, got {value!r}")
    return value


def reference_slice(bucket: str | None, dimension: str) -> tuple[str, str]:
    return ("overall", "") if bucket is None else (dimension, bucket)
