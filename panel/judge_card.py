"""The judge card (`/b/<slug>/judge/` and its API): per judge config, how its verdicts agree
with the listening panel's (panel.agreement), its vote unanimity or position bias,
and the rubrics where judge and people disagree. Only public representatives' tasks count:
a submission made private or hidden since leaves every figure. A task still in the panel's
pool counts nowhere, nor is its verdict listed, until it leaves it (submissions.withheld, the
rule every page that shows votes follows): no rater reads here how people or the judge
answered what they are asked."""

from __future__ import annotations

from django.conf import settings

from judge import families
from leaderboard.boards import item_pages, judge_checks, state
from leaderboard.boards.selectors import judge_figures_by_config
from panel import agreement
from panel.models import PanelAnswer, PanelTask
from scoring.kinds import get_kind
from scoring.models import Benchmark, Criterion, ItemResult, JudgeConfig, ScoringRun
from submissions.models import PoolRelease, Submission

# The rubric's category is a dimension of the card besides the kind's own, unless the kind has
# one of that name (then the kind's stands for it).
CATEGORY = "category"
# Whether the rated system is of the judge's own model family (judge.families): the card gives
# the judge's agreement on such systems apart once people counted this many of their rubrics.
JUDGE_FAMILY = "judge_family"
SAME_FAMILY, OTHER_FAMILIES = "systems of the judge's family", "other systems"
MIN_FAMILY_RUBRICS = 10


def judge_card(benchmark: Benchmark) -> dict:
    """The card's body, as the API gives it: the panel, each config's figures, the
    robustness battery of the board's config and the rank agreement across configs
    (leaderboard.boards.judge_checks; the latter made once per board state, its bootstrap growing
    with the square of the rows)."""
    kind = get_kind(benchmark.kind)
    tasks, answers = rated_tasks(benchmark) if kind.has_panel else ({}, {})
    judged = verdicts(kind, tasks)
    link = item_pages.item_linker(benchmark) if tasks else None
    configs = [_config_block(benchmark, kind, entry, (tasks, answers, link),
                             judged.get(entry["config_id"], {}))
               for entry in judge_figures_by_config(benchmark)]
    configs.sort(key=lambda c: (not c["current"], c["judge_config"]))
    return {"benchmark": benchmark.slug, "panel": _panel(benchmark, kind), "configs": configs,
            "battery": judge_checks.battery(benchmark),
            "rank_agreement": state.kept(state.board_state(benchmark), "rank-agreement",
                                         lambda: judge_checks.rank_agreement(benchmark),
                                         shared=True)}


def rated_tasks(benchmark: Benchmark, *, item_key: str | None = None
                ) -> tuple[dict[int, PanelTask], dict[int, list]]:
    """Tasks of published submissions out of the panel's pool with at least one first answer
    (of one item, given its key), and those answers as (rater, right) per task; repeats only
    measure self-consistency, and a removed rater's answers are gone
    (services.panel_rater_remove)."""
    answers: dict[int, list[tuple[int, bool]]] = {}
    held = state.withheld(benchmark)
    found = PanelAnswer.objects.filter(task__benchmark=benchmark, repeat=False,
                                       task__submission__in=Submission.objects.published())
    if item_key is not None:
        found = found.filter(task__criterion__item__key=item_key)
    for task_id, rater_id, right, submission_id, item_id in found.order_by("id").values_list(
            "task_id", "rater_id", "right", "task__submission_id", "task__criterion__item_id"):
        if not held(submission_id, item_id):
            answers.setdefault(task_id, []).append((rater_id, right))
    tasks = PanelTask.objects.filter(id__in=list(answers)).select_related(
        "criterion__item", "submission__model")
    return {t.id: t for t in tasks}, answers


def verdicts(kind, tasks: dict[int, PanelTask]) -> dict[int, dict[int, bool]]:
    """judge config id -> task id -> the judge's verdict on the rubric in the submission's
    latest finished run under that config, as the kind reads it from the item's result
    (Kind.panel_verdict; none where the output was missing or the judge gave none)."""
    latest: dict[tuple[int, int], tuple] = {}  # (submission, config) -> (created, run)
    for run_id, config_id, submission_id, created in ScoringRun.objects.filter(
            submissions__id__in={t.submission_id for t in tasks.values()},
            status=ScoringRun.Status.FINISHED).values_list(
                "id", "judge_config_id", "submissions__id", "created_at"):
        key = (submission_id, config_id)
        latest[key] = max(latest.get(key, (created, run_id)), (created, run_id))
    run_of = {key: run_id for key, (_, run_id) in latest.items()}
    results = {(run, item): values for run, item, values in ItemResult.objects.filter(
        run_id__in=set(run_of.values()), missing=False,
        item_id__in={t.criterion.item_id for t in tasks.values()})
        .values_list("run_id", "item_id", "values")}
    by_submission: dict[int, list[PanelTask]] = {}
    for task in tasks.values():
        by_submission.setdefault(task.submission_id, []).append(task)
    verdicts: dict[int, dict[int, bool]] = {}
    for (submission_id, config_id), run_id in run_of.items():
        for task in by_submission.get(submission_id, []):
            values = results.get((run_id, task.criterion.item_id))
            verdict = None if values is None else kind.panel_verdict(values,
                                                                     task.criterion.index)
            if verdict is not None:
                verdicts.setdefault(config_id, {})[task.id] = verdict
    return verdicts


def rated_rubric(kind, task: PanelTask, judge: bool, answers: list,
                 judge_model: str = "") -> agreement.Rated:
    dims = task.criterion.item.dimensions
    # A kind's own dimension named CATEGORY comes second: it stands for the rubric's.
    buckets = {CATEGORY: [task.criterion.category],
               **{d: kind.buckets(d, dims) for d in kind.dimension_keys}}
    if judge_model:
        buckets[JUDGE_FAMILY] = [SAME_FAMILY if families.same_family(
            task.submission.model.base_family, judge_model) else OTHER_FAMILIES]
    return agreement.Rated(judge=judge, rights=tuple(r for _, r in answers),
                           raters=tuple(rater for rater, _ in answers), buckets=buckets,
                           item=task.criterion.item.key)


def _config_block(benchmark, kind, entry, panel, verdicts) -> dict:
    tasks, answers, link = panel
    # In task order: the bootstrap's draws then depend on nothing but the data and the seed.
    judge_model = JudgeConfig.objects.filter(id=entry["config_id"]).values_list(
        "judge_model", flat=True).first() or ""
    rated = {pk: rated_rubric(kind, tasks[pk], judge, answers[pk], judge_model)
             for pk, judge in sorted(verdicts.items())}
    current = entry["config_id"] == benchmark.judge_config_id
    block = {"judge_config": entry["config"], "current": current,
             "simulated": entry["simulated"], "runs": entry["runs"],
             "vote_unanimity": entry["values"].get("agreement"),
             "position_bias": entry["values"].get("position_bias"),
             "human": None, "replace_test": None, "calibrated": {}, "disagreements": [],
             "judge_family": None}
    if kind.has_panel:
        seed = _seed(entry["config_id"])
        same = agreement.counted([r for r in rated.values()
                                  if r.buckets.get(JUDGE_FAMILY) == [SAME_FAMILY]])
        # The judge's family: a dimension of the human figures once enough is counted.
        block["judge_family"] = {"family": families.LABELS.get(
            families.family_of(judge_model), ""), "rubrics": len(same),
            "needed": MIN_FAMILY_RUBRICS, "apart": len(same) >= MIN_FAMILY_RUBRICS}
        block["human"] = agreement.human(
            list(rated.values()), seed=seed, dimensions=dimensions(kind) + (
                (JUDGE_FAMILY,) if block["judge_family"]["apart"] else ()))
        block["replace_test"] = agreement.alternative_annotator_test(list(rated.values()))
        block["calibrated"] = _calibrated(benchmark, kind, entry["config_id"], tasks, rated)
        block["disagreements"] = [_disagreement(tasks[pk], r, link)
                                  for pk, r in sorted(rated.items()) if agreement.disagrees(r)]
    return block


def _calibrated(benchmark, kind, config_id: int, tasks: dict, rated: dict) -> dict:
    """Per rubric category: the share of rubrics the judge passed in the latest finished runs
    under this config of the submissions people rated, corrected by their answers
    (agreement.prediction_powered; the labelled rubrics are the counted ones)."""
    submissions = {t.submission_id for t in tasks.values()}
    runs = {}
    for run_id, submission_id, created in ScoringRun.objects.filter(
            submissions__id__in=submissions, judge_config_id=config_id,
            status=ScoringRun.Status.FINISHED).values_list("id", "submissions__id",
                                                           "created_at"):
        runs[submission_id] = max(runs.get(submission_id, (created, run_id)), (created, run_id))
    rubrics: dict[int, list[tuple[int, str]]] = {}  # item id -> (index, category)
    for item, index, category in Criterion.objects.filter(item__benchmark=benchmark) \
            .values_list("item_id", "index", "category"):
        rubrics.setdefault(item, []).append((index, category))
    judged: dict[str, list[bool]] = {}
    for item_id, values in ItemResult.objects.filter(
            run_id__in=[run for _, run in runs.values()], missing=False) \
            .values_list("item_id", "values"):
        for index, category in rubrics.get(item_id, []):
            verdict = kind.panel_verdict(values, index)
            if verdict is not None:
                judged.setdefault(category, []).append(verdict)
    labelled: dict[str, list[tuple[bool, bool]]] = {}
    for pk, rubric in rated.items():
        if agreement.is_counted(rubric):
            labelled.setdefault(tasks[pk].criterion.category, []).append(
                (agreement.human_verdict(rubric.rights), rubric.judge))
    return {category: agreement.prediction_powered(judged[category],
                                                    labelled.get(category, []))
            for category in sorted(judged)}


def dimensions(kind) -> tuple[str, ...]:
    """The dimensions the card's human figures are given by: the rubric's category (CATEGORY),
    then the kind's own."""
    own = kind.dimension_keys
    return own if CATEGORY in own else (CATEGORY, *own)


def dimension_label(kind, dimension: str) -> str:
    if dimension == JUDGE_FAMILY:
        return "system's model family"
    return kind.dimension_label(dimension) if dimension in kind.dimension_keys \
        else "rubric category"


def _seed(config_id: int) -> int:
    """Intervals are seeded by the judge config's seed, as the board's are by its run's."""
    return JudgeConfig.objects.filter(id=config_id).values_list("seed", flat=True).first() or 0


def panel_verdict(rubric: agreement.Rated) -> dict:
    """The panel's verdict on one rubric as the card and the item page say it."""
    return {"human": agreement.human_verdict(rubric.rights),
            "counted": agreement.is_counted(rubric), "right_answers": sum(rubric.rights),
            "answers": len(rubric.rights)}


def _disagreement(task: PanelTask, rubric: agreement.Rated, link) -> dict:
    item = task.criterion.item
    verdict = panel_verdict(rubric)
    return {"task": task.id, "submission": task.submission_id,
            "model": task.submission.model.name, "item": item.key,
            "rubric": task.criterion.index, "category": task.criterion.category,
            "question": task.criterion.question, "human": verdict["human"],
            "judge": rubric.judge, "right_answers": verdict["right_answers"],
            "answers": verdict["answers"],
            "url": link(item.key, task.submission_id, task.criterion.index)}


def _panel(benchmark, kind) -> dict:
    """The panel as a whole: its size and the raters' self-consistency (repeats)."""
    guards = {"raters_per_task": settings.PANEL_RATERS_PER_TASK,
              "min_listen_seconds": settings.PANEL_MIN_LISTEN_SECONDS,
              "spread_seconds": settings.PANEL_SPREAD_SECONDS,
              "release_seconds": settings.PANEL_RELEASE_SECONDS}
    if not kind.has_panel:
        return {"open": False, "tasks": 0, "answers": 0, "raters": 0, "repeats": 0,
                "self_consistency": None, "pool_items": 0, "released": 0, **guards}
    rows = rater_rows(benchmark)
    pairs = [pair for row in rows for pair in row["pairs"]]
    return {"open": True,
            "tasks": PanelTask.objects.filter(benchmark=benchmark).count(),
            "answers": sum(row["answers"] for row in rows),
            "raters": len(rows), "repeats": len(pairs),
            "self_consistency": agreement.self_consistency(pairs),
            "pool_items": len(state.withheld(benchmark).pool),
            "released": PoolRelease.objects.filter(
                item__benchmark=benchmark,
                submission__in=Submission.objects.published()).count(), **guards}


def rater_rows(benchmark: Benchmark | None = None) -> list[dict]:
    """Each rater's answers, repeats and self-consistency (the chosen option's text, first
    answer against the repeat), on one benchmark or all; for the card and the staff page."""
    answers = PanelAnswer.objects.all() if benchmark is None \
        else PanelAnswer.objects.filter(task__benchmark=benchmark)
    by_rater: dict[int, dict] = {}
    for rater_id, username, task_id, repeat, chosen in answers.order_by("id").values_list(
            "rater_id", "rater__username", "task_id", "repeat", "chosen"):
        row = by_rater.setdefault(rater_id, {"rater": rater_id, "username": username,
                                             "answers": 0, "first": {}, "second": {}})
        row["answers"] += 1
        row["second" if repeat else "first"][task_id] = chosen
    for row in by_rater.values():
        row["pairs"] = [(row["first"][t], c) for t, c in row["second"].items()
                        if t in row["first"]]
        row["self_consistency"] = agreement.self_consistency(row["pairs"])
    return sorted(by_rater.values(), key=lambda r: r["username"])
