"""AIR-Bench's foundation track as a benchmark kind: single-choice questions read by the
official rule, optionally aligned by the judge;
the rules are in `rules` and `metrics`."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from scoring.kinds.airbench import metrics as airbench_metrics
from scoring.kinds.airbench import rules as airbench
from scoring.kinds.airbench.base import (
    AirBench,
    reference_number,
    reference_slice,
    reference_table,
    user_message,
)
from scoring.kinds.base import Dimension, ItemRows, Job, Metric, ReferenceRow, Section

DOMAIN_COLUMNS = {"Speech": "speech", "Sound": "sound", "Music": "music", "Average": None}


def _fields(letter, *, item: airbench.FoundationItem) -> dict:
    return {"choices": list(item.choices), "choice": letter, "reason": None, "score": None,
            "verdict": {"correct_letter": item.correct_letter,
                        "correct": letter == item.correct_letter}}


class Foundation(AirBench):
    name = airbench.FOUNDATION
    slug = "air-bench-foundation"
    meta_file = "Foundation_meta.json"
    item_fields = (("letter", "string"), ("source", "string"), ("parsed", "bool"),
                   ("correct", "bool"))
    title = "AIR-Bench foundation (single-choice audio understanding)"
    rounds = 1
    prompts = (airbench.ALIGN_TEMPLATE, airbench.ALIGN_CLOSING)
    options = ("align",)
    metrics = (
        Metric("acc_strict", "acc (strict)", "Correct answers of all items, in percent: an "
               "unreadable or missing answer counts as wrong"),
        Metric("acc", "acc (parsed)", "Correct answers of the items whose answer could be "
               "read, in percent: the figure the official script publishes"),
        Metric("unparsed", "unparsed", "Items whose answer neither the rule nor the judge "
               "could read", count=True),
    )
    ranking = ("acc_strict", "acc")
    hub_dataset = "qyang1021/AIR-Bench-Dataset"
    published = {"acc_strict": "acc"}
    ranking_text = ("Ranked by strict accuracy (correct of all items), then accuracy over the "
                    "items whose answer could be read (the published figure)")
    dimensions = (Dimension("domain", "domain", airbench.DOMAINS),
                  Dimension("task", "task", tuple(airbench.TASK_ORDER)))
    chart_axes = ("acc", "acc_strict")
    pairwise = ("Correct answer", None)
    failed_filter = "only items answered wrong or not read"

    def load(self, path) -> list[airbench.FoundationItem]:
        return airbench.load_foundation(path)

    def to_rows(self, item: airbench.FoundationItem) -> ItemRows:
        return ItemRows(
            key=item.uniq_id, dimensions=item.dimensions(),
            content={"question": item.question, "choices": list(item.choices),
                     "answer_gt": item.answer_gt, "path": item.path},
            media=[item.media],
            criteria=[{"index": 0, "category": item.task_name, "question": item.question,
                       "spec": {"right": item.answer_gt,
                                "wrong": [c for c in item.choices if c != item.answer_gt]}}])

    def from_rows(self, rows: ItemRows) -> airbench.FoundationItem:
        return airbench.FoundationItem(
            uniq_id=rows.key, path=rows.content["path"], question=rows.content["question"],
            choices=tuple(rows.content["choices"]), answer_gt=rows.content["answer_gt"],
            task_name=rows.dimensions["task_name"], dataset_name=rows.dimensions["dataset"])

    def jobs(self, items: Sequence[airbench.FoundationItem], outputs: dict[str, str], *,
             rounds: int, seed: int, options: dict, output_path: Callable[[str], str],
             input_path: Callable[[str], str]) -> list[Job]:
        """Alignment queries, one per response the rule cannot read; none unless asked."""
        if not options.get("align"):
            return []
        jobs = []
        for item in items:
            response = outputs.get(item.uniq_id)
            if response is None or airbench.extract_letter(response) is not None:
                continue
            jobs.append(Job(
                item=item.uniq_id, criterion=0, round=0,
                messages=user_message(airbench.alignment_prompt(item.question, response,
                                                                item.choices)),
                parse=functools.partial(airbench.parse_alignment, n_choices=len(item.choices)),
                fields=functools.partial(_fields, item=item)))
        return jobs

    def job_count(self, items: Sequence[airbench.FoundationItem], outputs: dict[str, str], *,
                  rounds: int, options: dict) -> int:
        if not options.get("align"):
            return 0
        return sum(outputs.get(item.uniq_id) is not None
                   and airbench.extract_letter(outputs[item.uniq_id]) is None for item in items)

    def item_result(self, item: airbench.FoundationItem, output: str | None,
                    answers: dict[tuple[int, int], dict]) -> dict:
        aligned = (answers.get((0, 0)) or {}).get("choice")
        return airbench_metrics.foundation_row(item, output, aligned)

    def score_columns(self, row: dict) -> dict:
        return {"passed": bool(row["correct"]), "score": float(row["correct"])}

    def summarize(self, rows: Sequence[dict]) -> dict:
        return airbench_metrics.foundation_summary(rows)

    vector_names = ("correct", "parsed", "missing")

    def item_vector(self, row: dict) -> tuple[float, ...]:
        return float(row["correct"]), float(row["parsed"]), float(row["missing"])

    def replicate_figures(self, weights, values: dict, dims: list[dict]) -> dict:
        """Per task over its drawn items, a domain the mean of its tasks, overall the mean of
        the domains (as foundation_summary)."""
        import numpy as np

        from scoring.kinds import resample  # numpy: imported here so `score` starts sooner
        strict, parsed = {}, {}
        for task, at in resample.groups(dims, "task").items():
            drawn = weights[:, at]
            correct = values["correct"][at]
            strict[task] = 100 * resample.ratio(drawn, correct, np.ones_like(correct))
            parsed[task] = 100 * resample.ratio(drawn, correct, values["parsed"][at])
        domain_of = {item["task"]: item["domain"] for item in dims}
        figures = {}
        for metric, by_task in (("acc_strict", strict), ("acc", parsed)):
            domains = [resample.mean_of([v for t, v in by_task.items() if domain_of[t] == d])
                       for d in airbench.DOMAINS if d in domain_of.values()]
            figures[metric] = resample.mean_of(domains)
        return figures

    def synthetic_row(self, item: airbench.FoundationItem, rng, skill: float) -> dict:
        """The right letter with the skill's chance, else any letter, now and then none."""
        letters = airbench.LETTERS[:len(item.choices)]
        letter = item.correct_letter if rng.random() < skill else rng.choice(letters)
        return airbench_metrics.foundation_row(item, letter if rng.random() > 0.03 else "unsure")

    def result_line(self, row: dict, round_: int, answer: dict | None,
                    judged: dict | None) -> dict:
        """The rule's letter, and the judge's alignment where it was asked."""
        line = {k: row.get(k) for k in ("letter", "source", "correct_letter", "parsed",
                                         "correct")}
        line["alignment"] = judged and {**judged, "choice": answer["choice"]}
        return line

    def explorer_item(self, rows, result, answers, output) -> dict:
        item = super().explorer_item(rows, result, answers, output)
        item["foundation"] = True  # the template shows the letter read and its source
        for judgment in item["judgments"]:
            judgment["label"] = "alignment"
        return item

    def failed(self, columns: dict) -> bool:
        """Answered wrong, unparsed or missing."""
        return not columns["values"].get("correct", True)

    def parse_reference(self, data, path) -> list[ReferenceRow]:
        """The per-task and per-domain tables (percent of parsed items: the official
        script's accuracy)."""
        task_models, task_rows = reference_table(data, "foundation_per_task_percent", path)
        domain_columns, domain_rows = reference_table(data, "foundation_per_domain_percent",
                                                      path)
        unknown = [t for t in task_rows if t not in airbench.TASK_ORDER and t != "Average"]
        if unknown or [c for c in domain_columns if c not in DOMAIN_COLUMNS]:
            raise ValueError(f"{path}: unknown tasks or domain columns: "
                             f"{unknown or domain_columns}")
        figures: dict[str, list] = {}
        for i, model in enumerate(task_models):
            figures[model] = [("task", task, {"acc": reference_number(values[i],
                                                                      f"{path}: {task!r}")})
                              for task, values in task_rows.items() if task != "Average"]
        for model, values in domain_rows.items():
            figures.setdefault(model, []).extend(
                (*reference_slice(DOMAIN_COLUMNS[c], "domain"),
                 {"acc": reference_number(v, f"{path}: {model!r}")})
                for c, v in zip(domain_columns, values, strict=True))
        return [ReferenceRow(model=model, note="", n_samples=None, figures=rows,
                             scope="published; accuracy over the items answered")
                for model, rows in figures.items()]

    def how_scoring_works(self) -> list[Section]:
        return [
            Section("What is asked", (
                "Each item is a single-choice question about an audio clip, with two or four "
                "options. The model answers in free text; its answer is read by the official "
                "rule of AIR-Bench's score_foundation.py: strip the response and drop its "
                "newlines; if its first character is A-D that is the answer, else if its "
                "second-to-last character is A-D that is the answer, else the item is "
                "unparsed.",
                "An author may ask for alignment: a response that the rule cannot read is "
                "then sent to the judge with the official align_in_foundation.py prompt, "
                "which maps it to an option letter.",
            )),
            Section("Metrics", (
                "acc (strict): correct answers of all items. An unparsed or missing answer "
                "counts as wrong. This is the figure the board ranks by.",
                "acc (parsed): correct answers of the items whose answer could be read. It is "
                "the figure the official script reports (it leaves unparsed items out of the "
                "denominator) and the one published tables show.",
                "unparsed: items whose answer neither the rule nor the judge could read.",
                "A task's figure is over its items (both dataset folders pooled); a domain's "
                "is the unweighted mean of its tasks; the overall figure is the mean of the "
                "three domains (speech, sound, music), as in every published row.",
            )),
            Section("Slices", (
                "Figures are also given per domain and per task.",
            )),
            Section("Ranking", (
                f"{self.ranking_text}. Figures are compared exactly (to 1e-9), so rows "
                "equal on both share a rank.",
            )),
        ]
