"""AIR-Bench's chat track as a benchmark kind: open questions, each judged twice with the
answers' positions swapped;
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
from scoring.kinds.base import (
    Dimension,
    ItemRows,
    Job,
    Metric,
    PanelQuestion,
    ReferenceRow,
    Section,
    mean_score,
    nan_if_none,
)

CHAT_COLUMNS = {"Speech": "speech", "Sound": "sound", "Music": "music",
                "Mixed Audio": "mixed_audio", "Average": None}


def _fields(pair, *, round_: int) -> dict:
    return {"choices": [], "choice": None, "reason": None,
            "score": None if pair is None else airbench.model_score(pair, round_),
            "verdict": {} if pair is None else {"scores": list(pair)}}


class Chat(AirBench):
    name = airbench.CHAT
    slug = "air-bench-chat"
    meta_file = "Chat_meta.json"
    item_fields = (("score_A", "float"), ("score_B", "float"), ("failed_A", "bool"),
                   ("failed_B", "bool"))
    title = "AIR-Bench chat (open questions, judged with position swap)"
    rounds = airbench.CHAT_ROUNDS
    prompts = (airbench.CHAT_TEMPLATE,)
    metrics = (
        Metric("score", "score (strict)", "The judge's score (1 to 10): the mean of the two "
               "passes, averaged over speech, sound, music and mixed audio; an unanswered "
               "item scores 0"),
        Metric("score_answered", "score (answered)", "The same over the answered items only, "
               "as the official cal_score.py computes the published figure"),
        Metric("pass_A", "pass A", "The judge's mean score with the reference answer shown "
               "first"),
        Metric("pass_B", "pass B", "The judge's mean score with the reference answer shown "
               "second"),
        Metric("failed", "failed replies", "Judge replies that were not two scores (left out "
               "of the means)", count=True),
    )
    judge_figures = (
        Metric("position_bias", "position bias", "The judge's mean score of the model's answer "
               "in pass A minus in pass B, over the items judged in both: above 0 the judge "
               "favours an answer shown second, below 0 one shown first; not a score of the "
               "model"),
    )
    ranking = ("score",)
    hub_dataset = "qyang1021/AIR-Bench-Dataset"
    ranking_text = ("Ranked by the strict score (an unanswered item scores 0): the average of "
                    "speech, sound, music and mixed audio, each the mean of its two passes "
                    "(reference first, then swapped); scores 1 to 10")
    published = {"score": "score_answered"}
    dimensions = (Dimension("category", "category", airbench.CATEGORY_ORDER),
                  Dimension("task", "task", tuple(airbench.CHAT_TASK_ORDER)))
    chart_axes = ("pass_A", "pass_B")
    scale = 10.0
    pairwise = (None, "Mean score of the two passes")
    failed_filter = "only items with an unreadable judge reply"
    has_panel = True
    panel_how = ("Read the question the system was asked, the reference answer and the system's "
                 "answer, then say whether the answer is right, as the judge scores it against "
                 "the reference.")

    def load(self, path) -> list[airbench.ChatItem]:
        return airbench.load_chat(path)

    def to_rows(self, item: airbench.ChatItem) -> ItemRows:
        return ItemRows(
            key=item.uniq_id, dimensions=item.dimensions(),
            content={"question": item.question, "answer_gt": item.answer_gt,
                     "meta_info": item.meta_info, "path": item.path},
            media=[item.media],
            criteria=[{"index": 0, "category": item.task_name, "question": item.question,
                       "spec": {"reference": item.answer_gt}}])

    def from_rows(self, rows: ItemRows) -> airbench.ChatItem:
        return airbench.ChatItem(
            uniq_id=rows.key, path=rows.content["path"], question=rows.content["question"],
            answer_gt=rows.content["answer_gt"], meta_info=rows.content["meta_info"],
            task_name=rows.dimensions["task"], dataset_name=rows.dimensions["dataset"])

    def jobs(self, items: Sequence[airbench.ChatItem], outputs: dict[str, str], *,
             rounds: int, seed: int, options: dict, output_path: Callable[[str], str],
             input_path: Callable[[str], str]) -> list[Job]:
        """Both passes of every item with a response."""
        jobs = []
        for item in items:
            response = outputs.get(item.uniq_id)
            if response is None:
                continue
            for round_ in range(airbench.CHAT_ROUNDS):
                jobs.append(Job(
                    item=item.uniq_id, criterion=0, round=round_,
                    messages=user_message(airbench.chat_pass_prompt(item, response, round_)),
                    parse=airbench.parse_chat_reply,
                    fields=functools.partial(_fields, round_=round_)))
        return jobs

    def job_count(self, items: Sequence[airbench.ChatItem], outputs: dict[str, str], *,
                  rounds: int, options: dict) -> int:
        return sum(item.uniq_id in outputs for item in items) * airbench.CHAT_ROUNDS

    def item_result(self, item: airbench.ChatItem, output: str | None,
                    answers: dict[tuple[int, int], dict]) -> dict:
        scores = [(answers.get((0, k)) or {}).get("score") for k in range(airbench.CHAT_ROUNDS)]
        return airbench_metrics.chat_row(item, *scores, missing=output is None)

    def panel_question(self, rows: ItemRows, index: int, output: str | None) -> PanelQuestion:
        """The reference answer against the system's, as text; nothing to hear (the judge
        hears nothing either)."""
        item = self.from_rows(rows)
        return PanelQuestion(
            instruction=item.question, question=airbench.CHAT_PANEL_QUESTION,
            options=airbench.CHAT_PANEL_OPTIONS,
            texts=(("reference answer", item.answer_gt), ("the system's answer", output or "")))

    def panel_verdict(self, values: dict, index: int) -> bool | None:
        return airbench_metrics.chat_right(values)

    def score_columns(self, row: dict) -> dict:
        """No pass or fail; the mean of its two passes' scores (of those not failed)."""
        return {"passed": None, "score": mean_score([row["score_A"], row["score_B"]])}

    def summarize(self, rows: Sequence[dict]) -> dict:
        return airbench_metrics.chat_summary(rows)

    def buckets(self, dimension: str, dims: dict) -> list[str]:
        """An item of a mixed category is also in mixed audio, their mean."""
        found = [dims[dimension]]
        if dimension == "category" and dims["category"] in airbench.MIXED_OF:
            found.append(airbench.MIXED)
        return found

    vector_names = ("A", "B", "missing")

    def item_vector(self, row: dict) -> tuple[float, ...]:
        return nan_if_none(row["score_A"]), nan_if_none(row["score_B"]), float(row["missing"])

    def replicate_figures(self, weights, values: dict, dims: list[dict]) -> dict:
        """Per category the mean of each pass over its drawn items (answered ones only for
        score (answered)), mixed audio the mean of its two categories, overall the mean of
        speech, sound, music and mixed audio (as chat_summary)."""
        import numpy as np

        from scoring.kinds import resample  # numpy: imported here so `score` starts sooner
        unanswered = values["missing"] == 1
        categories = {}
        for category, at in resample.groups(dims, "category").items():
            drawn = weights[:, at]
            a, b = values["A"][at], values["B"][at]
            out = unanswered[at]
            pass_a, pass_b = resample.mean(drawn, a), resample.mean(drawn, b)
            categories[category] = {
                "pass_A": pass_a, "pass_B": pass_b, "score": (pass_a + pass_b) / 2,
                "score_answered": (resample.mean(drawn, np.where(out, np.nan, a))
                                   + resample.mean(drawn, np.where(out, np.nan, b))) / 2}
        mixed = [categories[c] for c in airbench.MIXED_OF if c in categories]
        if mixed:
            categories[airbench.MIXED] = {k: resample.mean_of([m[k] for m in mixed])
                                          for k in mixed[0]}
        parts = [categories[c] for c in airbench.AVERAGE_OF if c in categories]
        return {k: resample.mean_of([p[k] for p in parts]) for k in parts[0]}

    def synthetic_row(self, item: airbench.ChatItem, rng, skill: float) -> dict:
        """Scores around 1 + 9 x skill in each pass."""
        def score():
            return float(min(10, max(1, round(rng.gauss(1 + 9 * skill, 1.5)))))

        return airbench_metrics.chat_row(item, score(), score())

    def result_line(self, row: dict, round_: int, answer: dict | None,
                    judged: dict | None) -> dict:
        name = airbench.PASSES[round_]
        return {"pass": name, "round": round_, "score": row.get(f"score_{name}"),
                "failed": row.get(f"failed_{name}"), "judge": judged}

    def explorer_item(self, rows, result, answers, output) -> dict:
        item = super().explorer_item(rows, result, answers, output)
        item["chat"] = True
        for judgment, answer in zip(item["judgments"], answers, strict=True):
            judgment["label"] = f"pass {airbench.PASSES[answer['round']]}"
        return item

    def failed(self, columns: dict) -> bool:
        """A judge reply of either pass could not be read."""
        values = columns["values"]
        return bool(values.get("failed_A") or values.get("failed_B"))

    def parse_reference(self, data, path) -> list[ReferenceRow]:
        """The chat table: per category and the average."""
        columns, rows = reference_table(data, "chat", path)
        unknown = [c for c in columns if c not in CHAT_COLUMNS]
        if unknown:
            raise ValueError(f"{path}: chat columns {unknown} are not {list(CHAT_COLUMNS)}")
        scope = f"published, judged by {data.get('judge_model', 'the authors')}"
        parsed = []
        for model, values in rows.items():
            numbers = [reference_number(v, f"{path}: chat {model!r}") for v in values]
            figures = [(*reference_slice(CHAT_COLUMNS[c], "category"), {"score_answered": v})
                       for c, v in zip(columns, numbers, strict=True)]
            parsed.append(ReferenceRow(
                model=model, note=_average_note(dict(zip(columns, numbers, strict=True))),
                scope=scope, n_samples=None, figures=figures))
        return parsed

    def how_scoring_works(self) -> list[Section]:
        return [
            Section("What is asked", (
                "Each item is an open question about an audio clip. The judge never hears "
                "the audio: it reads a detailed description of it (meta_info), the question, "
                "the reference answer and the model's answer, with the official "
                "score_chat.py prompt, and gives each answer a score from 1 to 10.",
                "Every item is judged twice: pass A shows the reference answer first and the "
                "model's second; pass B swaps them, so that a judge's liking for a position "
                "cancels out. A reply is read as the official cal_score.py reads it: two "
                "integers separated by a space, neither above 10; anything else is a failed "
                "pass, left out of that pass's mean and counted.",
            )),
            Section("Metrics", (
                "pass A and pass B: the mean of the model's scores in each pass.",
                "score (strict): a category's score is the mean of its two passes; mixed "
                "audio is the mean of speech-and-sound and speech-and-music; the overall score "
                "is the mean of speech, sound, music and mixed audio. An item without a "
                "response is never sent to the judge and scores 0 in both passes. The board "
                "ranks by this figure, so that leaving items out never helps.",
                "score (answered): the same over the answered items only, as the official "
                "cal_score.py computes it (it never sees an unanswered item); published tables "
                "give this figure.",
                "failed replies: judge replies that could not be read.",
            )),
            Section("Slices", ("Figures are also given per category and per task.",)),
            Section("Ranking", (
                f"{self.ranking_text}. Figures are compared exactly (to 1e-9), so equal rows "
                "share a rank.",
            )),
        ]


def _average_note(row: dict) -> str:
    """A published average that is not the mean of its row's four columns is said so."""
    parts = [row.get(c) for c in ("Speech", "Sound", "Music", "Mixed Audio")]
    average = row.get("Average")
    if average is None or any(p is None for p in parts):
        return ""
    mean = sum(parts) / len(parts)
    if abs(round(mean, 2) - average) > 0.011:
        return (f"the published average {average:.2f} is not the mean of its four columns "
                f"({mean:.2f})")
    return ""
