"""MMAE (Massive Multitask Audio Editing) as a benchmark kind.

The rules themselves (metadata, the judge query, reply parsing, votes, metrics, slices) are in
`rules` and the upload format in `predictions`, plain Python that follows
../shared/mmae/SPEC.md; this class is the door through which the platform uses them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from scoring.kinds.base import (
    Dimension,
    ItemRows,
    Job,
    Kind,
    Media,
    Metric,
    OutputFormat,
    PanelQuestion,
    ReferenceRow,
    RunData,
    Section,
    file_sha256,
    mean_score,
    nan_if_none,
)
from scoring.kinds.files import resolve_audio
from scoring.kinds.mmae import metrics as mmae_metrics
from scoring.kinds.mmae import rules as mmae
from scoring.kinds.mmae.predictions import NAMES, parse_predictions

SPEC_FIGURES = ("n", "IFR", "CR", "EMR")  # taxonomy.json's figures, in SPEC section 6 order
PER_SAMPLE = ("id", "IFR", "CR", "EM", "n_if", "n_cr", "rubric_scores", "missing", "complexity",
              "modality", "granularity", "operations")  # per_sample.json's, likewise
RESULT_KEYS = ("category", "choices", "correct_letter", "choice", "correct", "reason")
VERDICT_KEYS = ("correct_letter", "correct")  # Answer.verdict's: the rest are Answer's columns
ROW_KEYS = ("IFR", "CR", "EM", "rubric_scores", "agree", "judged")  # ItemResult.values


def _read_predictions(text, *, name: str, known_ids: set[str], per_kind: int) -> dict[str, str]:
    return {p.sample_id: p.audio_path
            for p in parse_predictions(text, name=name, known_ids=known_ids, per_kind=per_kind)}


def _output_digest(root: str, output: str) -> str:
    return file_sha256(resolve_audio(Path(root), output))


def _check_output(root, output: str) -> str | None:
    from scoring.kinds import audio_header  # only here: the other kinds' outputs are text

    return audio_header.check_audio(resolve_audio(Path(root), output))


def _check_upload(path: Path, limits) -> str | None:
    from scoring.kinds import audio

    return audio.audio_problem(path, limits)


def _fields(value, *, query: mmae.Query) -> dict:
    letter, reason = value if value is not None else (None, None)
    return {"choices": list(query.choices), "choice": letter, "reason": reason, "score": None,
            "verdict": {"correct_letter": query.correct_letter,
                        "correct": letter is not None and letter == query.correct_letter}}


class MMAE(Kind):
    name = mmae.KIND
    slug = "mmae"
    meta_file = "MMAE-meta.json"
    title = "MMAE (Massive Multitask Audio Editing)"
    rounds = mmae.ROUNDS
    sends_inputs = True
    calibration_baselines = True
    prompts = (mmae.SYSTEM_PROMPT, mmae.QUERY_TEMPLATE)
    outputs = OutputFormat(
        files=True, read=_read_predictions, digest=_output_digest, check=_check_output,
        names=NAMES, entries=parse_predictions, check_file=_check_upload,
        help="predictions.json (the official format) or submission.jsonl, plus a .zip or "
             ".tar.gz of the edited WAV/FLAC files, or one archive holding both")
    metrics = (  # in the ranking's order, as every page lists them
        Metric("EMR", "EMR", "Exact-match rate: the share of samples that pass every one of "
               "their rubrics (percent)"),
        Metric("IFR", "IFR", "Instruction-following rate: the mean, over samples, of the "
               "share of a sample's instruction-following rubrics passed (percent)"),
        Metric("CR", "CR", "Consistency rate: the mean, over samples, of the share of a "
               "sample's consistency rubrics passed (percent)"),
    )
    judge_figures = (
        Metric("agreement", "vote agreement", "Share of the rubrics whose votes chose the same "
               "option in every round: how consistent the judge is, not a score of the model "
               "(percent)"),
    )
    ranking = ("EMR", "IFR", "CR")
    hub_dataset = "BoJack/MMAE"  # the real audio (SPEC.md)
    ranking_text = "Ranked by EMR, then IFR, then CR"
    dimensions = (
        Dimension("complexity", "complexity"),
        Dimension("complexity_group", "complexity group", ("single", "multiple")),
        Dimension("modality", "modality"),
        Dimension("granularity", "granularity"),
        Dimension("operation", "operation"),
    )
    main_dimension = "modality"
    item_noun = "sample"
    # A sample's IFR and CR in 0-1 (null without such rubrics), EM 0 or 1, its rubrics' votes.
    item_fields = (("IFR", "float"), ("CR", "float"), ("EM", "int"),
                   ("rubric_scores", "list<int>"))
    criteria_noun = "rubric"
    failed_filter = "only samples with a failed rubric"
    failed_queries = "counted as wrong votes"
    chart_axes = ("IFR", "EMR")
    files = ("results.jsonl", "per_sample.json", "taxonomy.json")
    pairwise = ("Exact match (EM)", "Mean rubric score")
    explorer_template = "leaderboard/_mmae_sample.html"
    explorer_detail_template = "leaderboard/_mmae_rubrics.html"
    versus_template = "leaderboard/_mmae_versus.html"
    has_panel = True
    panel_how = ("Listen to the audio the system made (and to its inputs where the question "
                 "names them), then answer the question about it as the judge is asked it.")

    # --- metadata ------------------------------------------------------------------------

    def simulated_reply(self, body: dict, config) -> tuple[str, list] | None:
        from scoring.kinds.mmae import simulated  # the simulator's server: only it needs this

        return simulated.reply(body, config)

    def load(self, path) -> list[mmae.Sample]:
        return mmae.load_meta(path)

    def to_rows(self, sample: mmae.Sample) -> ItemRows:
        return ItemRows(
            key=sample.id, dimensions=sample.dimensions(),
            content={"messages": sample.messages, "tags": sample.tags},
            media=list(sample.input_audio),
            criteria=[{"index": r.index, "category": r.category, "question": r.question,
                       "spec": {"right": r.right_choice, "wrong": list(r.wrong_choices)}}
                      for r in sample.rubrics])

    def from_rows(self, rows: ItemRows) -> mmae.Sample:
        dims = rows.dimensions
        return mmae.Sample(
            id=rows.key, complexity=dims["complexity"], modality=dims["modality"],
            granularity=tuple(dims["granularity"]),
            operations=tuple((op["granularity"], op["operation"]) for op in dims["operations"]),
            messages=rows.content["messages"], tags=rows.content.get("tags", []),
            rubrics=tuple(mmae.Rubric(index=c["index"], category=c["category"],
                                      question=c["question"], right_choice=c["spec"]["right"],
                                      wrong_choices=tuple(c["spec"]["wrong"]))
                          for c in rows.criteria),
            input_audio=tuple(rows.media))

    def buckets(self, dimension: str, dims: dict) -> list[str]:
        return mmae_metrics.buckets(dimension, dims)

    def item_text(self, rows: ItemRows) -> tuple[str, ...]:
        """The text of each user turn (a multi-round sample has several), in order."""
        turns = []
        for message in rows.content.get("messages") or []:
            if not isinstance(message, dict) or message.get("role", "user") != "user":
                continue
            text = "\n".join(part["text"] for part in mmae.content_parts(message)
                             if part.get("type") == "text" and isinstance(part.get("text"), str))
            if text:
                turns.append(text)
        return tuple(turns)

    # --- the listening panel ---------------------------------------------------------------

    def panel_question(self, rows: ItemRows, index: int, output: str | None) -> PanelQuestion:
        """The rubric's question and options, and the audio it names, as the judge hears
        them (SPEC section 3)."""
        sample = self.from_rows(rows)
        rubric = next(r for r in sample.rubrics if r.index == index)
        return PanelQuestion(instruction=sample.instruction, question=rubric.question,
                             options=(rubric.right_choice, *rubric.wrong_choices),
                             audio=tuple(rubric.labels),
                             notes=mmae.reference_readings(rubric.question))

    def panel_verdict(self, values: dict, index: int) -> bool | None:
        """The rubric's score: the majority of the judge's votes chose its right option."""
        return bool(values["rubric_scores"][index])

    def panel_axis(self, category: str) -> str | None:
        """IFR_s averages a sample's Instruction Following rubrics, CR_s the others (SPEC 4)."""
        return "IFR" if category == mmae.IF_CATEGORY else "CR"

    def panel_stratum(self, dims: dict) -> str:
        """Modality x complexity."""
        return f"{dims.get('modality', '')} / {dims.get('complexity', '')}"

    # --- judging ---------------------------------------------------------------------------

    def jobs(self, items: Sequence[mmae.Sample], outputs: dict[str, str], *, rounds: int,
             seed: int, options: dict, output_path: Callable[[str], str],
             input_path: Callable[[str], str]) -> list[Job]:
        jobs = []
        for sample in items:
            if sample.id not in outputs:
                continue
            output = Media(output_path(outputs[sample.id]))
            inputs = {f"input{n}": Media(input_path(path))
                      for n, path in enumerate(sample.input_audio, start=1)}
            audio = {"output": output, **inputs}.__getitem__
            for rubric in sample.rubrics:
                for round_ in range(rounds):
                    query = mmae.make_query(sample, rubric, round_, seed=seed)
                    jobs.append(Job(
                        item=sample.id, criterion=rubric.index, round=round_,
                        messages=mmae.query_messages(sample, rubric, query, audio=audio),
                        parse=functools.partial(mmae.parse_reply, n_choices=len(query.choices)),
                        fields=functools.partial(_fields, query=query)))
        return jobs

    def job_count(self, items: Sequence[mmae.Sample], outputs: dict[str, str], *,
                  rounds: int, options: dict) -> int:
        return sum(len(sample.rubrics) for sample in items if sample.id in outputs) * rounds

    # --- aggregation -----------------------------------------------------------------------

    def item_result(self, sample: mmae.Sample, output: str | None,
                    answers: dict[tuple[int, int], dict]) -> dict:
        """SPEC section 6's per-sample row, and how many of its rubrics the judge answered
        the same way in every round ("agree", of "judged")."""
        if output is None:
            return {**mmae_metrics.sample_result(sample, None), "agree": 0, "judged": 0}
        votes: dict[int, list[dict]] = {}
        for (criterion, _round), answer in sorted(answers.items()):
            votes.setdefault(criterion, []).append(answer)
        row = mmae_metrics.sample_result(sample, [
            mmae_metrics.rubric_score([a["verdict"]["correct"] for a in votes[r.index]])
            for r in sample.rubrics])
        return {**row, "agree": sum(1 for r in sample.rubrics if _agree(votes[r.index])),
                "judged": len(sample.rubrics)}

    def item_columns(self, row: dict) -> dict:
        return {"values": {k: row[k] for k in ROW_KEYS}, "passed": bool(row["EM"]),
                "score": mean_score(row["rubric_scores"])}

    def stored_row(self, rows: ItemRows, columns: dict) -> dict:
        n_if = sum(1 for c in rows.criteria if c["category"] == mmae.IF_CATEGORY)
        values = columns["values"]
        # floats again: a JSON column may give 1.0 back as 1 (PostgreSQL's jsonb of a float8)
        return {"id": rows.key, "IFR": _float(values["IFR"]), "CR": _float(values["CR"]),
                "EM": values["EM"], "n_if": n_if, "n_cr": len(rows.criteria) - n_if,
                "rubric_scores": values["rubric_scores"], "missing": columns["missing"],
                # rebuilt in SPEC order: a JSON column may give its keys back in another
                **self.from_rows(rows).dimensions()}

    def summarize(self, rows: Sequence[dict]) -> dict:
        """taxonomy.json's figures, and on every slice the judge's vote agreement."""
        result = mmae_metrics.taxonomy(rows)
        result["overall"].update(_agreement(rows))
        for dimension in mmae_metrics.DIMENSIONS:
            groups: dict[str, list[dict]] = {}
            for row in rows:
                for bucket in mmae_metrics.buckets(dimension, row):
                    groups.setdefault(bucket, []).append(row)
            for bucket, figures in result[dimension].items():
                figures.update(_agreement(groups[bucket]))
        return result

    vector_names = ("IFR", "CR", "EM", "missing")

    def item_vector(self, row: dict) -> tuple[float, ...]:
        return (nan_if_none(row["IFR"]), nan_if_none(row["CR"]), float(row["EM"]),
                float(row["missing"]))

    def replicate_figures(self, weights, values: dict, dims: list[dict]) -> dict:
        """IFR and CR: means over the drawn samples that have such rubrics; EMR: the share
        of drawn samples passing every rubric."""
        from scoring.kinds import resample  # numpy: imported here so `score` starts sooner
        return {"IFR": 100 * resample.mean(weights, values["IFR"]),
                "CR": 100 * resample.mean(weights, values["CR"]),
                "EMR": 100 * resample.mean(weights, values["EM"])}

    def intervals(self, rows: Sequence[dict], *, seed: int, resamples: int = 1000) -> dict:
        return mmae_metrics.taxonomy_intervals(rows, seed=seed, resamples=resamples)

    def synthetic_row(self, sample: mmae.Sample, rng, skill: float) -> dict:
        """Each rubric passes with the skill's chance; consistency comes easier."""
        chances = (skill, min(1.0, 0.25 + skill))
        return {**mmae_metrics.sample_result(sample, [
            int(rng.random() < chances[not r.is_instruction_following]) for r in sample.rubrics]),
            "agree": 0, "judged": 0}

    # --- results files -----------------------------------------------------------------------

    def file_chunks(self, name: str, data: RunData) -> Iterable[str]:
        if name == "results.jsonl":
            return self._results_lines(data)
        if name == "per_sample.json":
            rows = [{k: row[k] for k in PER_SAMPLE} for _, row, _ in data.items()]
            return [json.dumps(rows, indent=1, ensure_ascii=False)]
        if name == "taxonomy.json":
            return [json.dumps(_spec_figures(data.slices()), indent=1, ensure_ascii=False)]
        raise ValueError(f"{self.name} has no results file {name!r}")

    def _results_lines(self, data: RunData) -> Iterable[str]:
        """results.jsonl: one line per query, in benchmark order (SPEC section 6)."""
        for rows, _, answers in data.items():
            categories = {c["index"]: c["category"] for c in rows.criteria}
            for (criterion, round_), answer in sorted(answers.items()):
                line = {"id": rows.key, "rubric_index": criterion, "round": round_,
                        "category": categories[criterion],
                        **{k: answer["verdict"][k] if k in VERDICT_KEYS else answer[k]
                           for k in RESULT_KEYS if k != "category"},
                        **{k: answer[k] for k in ("raw", "error", "endpoint", "attempts",
                                                  "latency_ms")}}
                yield json.dumps(line, ensure_ascii=False) + "\n"

    # --- published results ----------------------------------------------------------------

    def parse_reference(self, data, path) -> list[ReferenceRow]:
        """paper_results.json: the paper's Table 2 rows and the challenge baselines."""
        if not isinstance(data, dict) or not isinstance(data.get("models", []), list):
            raise ValueError(f"{path}: expected an object with a 'models' list")
        entries = [(f"models[{i}]", e) for i, e in enumerate(data.get("models", []))]
        entries += [(f"challenge_baselines[{i}]", e)
                    for i, e in enumerate(data.get("challenge_baselines", []))]
        rows = []
        for where, entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
                raise ValueError(f"{path}: {where}: needs a 'model' name")
            scope, n = _scope(entry)
            rows.append(ReferenceRow(
                model=entry["model"], note=str(entry.get("note", "")), scope=scope,
                n_samples=n, figures=_reference_figures(entry, f"{path}: {where} "
                                                               f"({entry['model']})")))
        return rows

    # --- the explorer --------------------------------------------------------------------

    def explorer_item(self, rows: ItemRows, result: dict | None, answers: list[dict],
                      output: str | None) -> dict:
        votes: dict[int, list[dict]] = {}
        for answer in answers:
            votes.setdefault(answer["criterion"], []).append(answer)
        scores = result["rubric_scores"] if result else [None] * len(rows.criteria)
        rubrics = [_rubric(c, score, votes.get(c["index"], []))
                   for c, score in zip(rows.criteria, scores, strict=False)]
        dims = rows.dimensions

        def passed(rubric_list):
            return sum(1 for r in rubric_list if r["score"] == 1)

        following = [r for r in rubrics if r["instruction_following"]]
        consistency = [r for r in rubrics if not r["instruction_following"]]
        return {
            "complexity": dims.get("complexity"), "modality": dims.get("modality"),
            "operations": mmae_metrics.buckets("operation", dims), "turns": self.item_text(rows),
            "inputs": [f"input{n}" for n in range(1, len(rows.media) + 1)],
            "has_output": output is not None, "scored": result is not None,
            "IFR": result and result["IFR"], "CR": result and result["CR"],
            "EM": result and result["EM"], "rubrics": rubrics,
            "n_passed": passed(rubrics),
            "n_failed": sum(1 for r in rubrics if r["score"] == 0),
            "n_if": len(following), "if_passed": passed(following),
            "n_cr": len(consistency), "cr_passed": passed(consistency),
        }

    def item_difference(self, a: dict, b: dict) -> tuple[float, ...]:
        """Whether one is an exact match and the other not, then how many rubrics the two
        score differently (a rubric unknown on either side is no difference), then how far
        apart their mean rubric scores are."""
        rubrics = sum(1 for x, y in zip(a["values"]["rubric_scores"],
                                        b["values"]["rubric_scores"], strict=False)
                      if x is not None and y is not None and x != y)
        em = float(a["passed"] is not None and b["passed"] is not None
                   and a["passed"] != b["passed"])
        scored = a["score"] is not None and b["score"] is not None
        return em, float(rubrics), abs(a["score"] - b["score"]) if scored else 0.0

    def failed(self, columns: dict) -> bool:
        """At least one rubric scored 0 (a missing output scores 0 on every one)."""
        return 0 in columns["values"]["rubric_scores"]

    # --- documentation -----------------------------------------------------------------------

    def how_scoring_works(self) -> list[Section]:
        return [
            Section("What is asked", (
                "Each of the benchmark's samples is an instruction to edit one or more input "
                "audio clips, with rubrics: multiple-choice questions about the edited output. "
                "A rubric is either about instruction following (was the edit made?) or about "
                "consistency (was everything else left alone?).",
                "The judge (a Qwen3-Omni model served by vLLM) hears the audio that a rubric "
                "names (the output, and the inputs it compares against) and answers the "
                "question with one letter. The prompts are those of the MMAE paper's "
                "Appendix C, verbatim; the choices are shuffled independently for every "
                "query by a seeded generator, so a run can be reproduced.",
            )),
            Section("Votes", (
                "Every rubric is asked three times, each time with its own shuffle of the "
                "choices. It passes when at least two of the three answers are right (a "
                "majority vote). A query whose reply cannot be read is retried; one that "
                "still has no valid answer counts as a wrong vote and is listed as failed.",
            )),
            Section("Metrics", (
                "IFR (instruction-following rate): for each sample, the share of its "
                "instruction-following rubrics that pass; IFR is the mean of these shares "
                "over the samples, in percent.",
                "CR (consistency rate): the same over consistency rubrics. A sample without "
                "consistency rubrics is left out of CR only.",
                "EMR (exact-match rate): the share of samples whose every rubric passes, in "
                "percent. It is the strictest figure: one failed rubric fails the sample.",
                "Every sample weighs the same. A sample with no output (no prediction, or a "
                "file that is missing or unreadable) is never sent to the judge: it scores 0 "
                "on every rubric and stays in every denominator, and the submission is "
                "marked partial with its coverage.",
            )),
            Section("Slices", (
                "Every figure is also computed on each bucket of five dimensions: "
                "complexity (the difficulty tier: single, multi-part, multi-instruction, "
                "multi-audio, multi-round, multi-hop), complexity group (single against the "
                "five multiple tiers), modality, granularity (local, global or mixed) and "
                "operation (a sample counts once in each distinct edit operation it has).",
            )),
            Section("Ranking", (
                "Rows are ranked by EMR, then IFR, then CR, all descending (the MMAE "
                "challenge's rule). Figures are compared exactly (to 1e-9), so rows equal on "
                "all three share a rank.",
            )),
        ]


def _float(value) -> float | None:
    return None if value is None else float(value)


def _agree(votes: list[dict]) -> bool:
    """Every round chose the same option (choices are shuffled per round, so compare the
    chosen texts); a round without a valid answer agrees with nothing."""
    chosen = {a["choices"][mmae.LETTERS.index(a["choice"])] if a["choice"] else None
              for a in votes}
    return len(chosen) == 1 and None not in chosen


def _agreement(rows: Sequence[dict]) -> dict:
    judged = sum(row.get("judged", 0) for row in rows)
    agree = sum(row.get("agree", 0) for row in rows)
    return {"agreement": 100 * agree / judged if judged else None, "judged": judged}


def _spec_figures(slices: dict) -> dict:
    def pick(figures):
        return {k: figures.get(k) for k in SPEC_FIGURES}

    return {dimension: pick(value) if dimension == "overall"
            else {bucket: pick(figures) for bucket, figures in value.items()}
            for dimension, value in slices.items()}


def _rubric(criterion: dict, score: int | None, answers: list[dict]) -> dict:
    return {
        "index": criterion["index"], "category": criterion["category"],
        "instruction_following": criterion["category"] == mmae.IF_CATEGORY,
        "question": criterion["question"], "score": score,
        "notes": mmae.reference_readings(criterion["question"]),
        "votes": [_vote(a) for a in answers],
    }


def _vote(answer: dict) -> dict:
    verdict = answer["verdict"]
    return {
        "round": answer["round"],
        "choices": [{"letter": letter, "text": text,
                     "right": letter == verdict["correct_letter"],
                     "chosen": letter == answer["choice"]}
                    for letter, text in zip(mmae.LETTERS, answer["choices"], strict=False)],
        "correct_letter": verdict["correct_letter"], "choice": answer["choice"],
        "correct": verdict["correct"],
        "error": answer["error"] if answer["choice"] is None else None,
        "reason": answer["reason"],
    }


def _scope(entry: dict) -> tuple[str, int | None]:
    if "scope" in entry:
        return str(entry["scope"]), None
    n = entry.get("n_samples")
    return (f"{n:,} samples" if isinstance(n, int) else "scope not stated"), n


def _reference_figures(entry: dict, where: str) -> list[tuple[str, str, dict]]:
    """(dimension, bucket, figures) of one published row: overall and any dimension."""
    rows = []
    for dimension, value in entry.items():
        if dimension == "overall":
            rows.append(("overall", "", value))
        elif isinstance(value, dict) and all(isinstance(v, dict) for v in value.values()):
            rows.extend((dimension, bucket, figures) for bucket, figures in value.items())
    if not any(d == "overall" for d, _, _ in rows):
        raise ValueError(f"{where}: no 'overall' figures")
    checked = []
    for dimension, bucket, figures in rows:
        for metric in ("IFR", "CR", "EMR"):
            value = figures.get(metric)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{where}: {dimension}{'/' + bucket if bucket else ''} needs "
                                 f"a number for {metric}, got {value!r}")
        checked.append((dimension, bucket, {m: figures[m] for m in ("IFR", "CR", "EMR")}))
    return checked
