"""Rows of scored submissions built directly, as `seed_board` builds its synthetic ones: no judge
and no simulator, for the tests that read a finished run rather than make one. The tests that
really score (upload, validation, scoring, board) are in tests/submissions/test_pipeline*.py,
tests/scoring/test_runs.py and the modules that judge once per module (module_db)."""

from django.utils import timezone

from scoring.boards import board_changed
from scoring.models import Benchmark, ScoringRun, SliceResult
from submissions.models import ModelEntry, Submission
from tests.conftest import judge_config


def board_benchmark(**fields) -> Benchmark:
    """An MMAE benchmark row with no items, and its current judge config (whose endpoint
    nothing listens on: nothing is judged)."""
    benchmark = Benchmark.objects.create(**{
        "slug": "mmae", "kind": "mmae", "version": 1, "title": "MMAE", "sha256": "a" * 64,
        "source_name": "MMAE-meta.json", "audio_root": "/x", "n_items": 4, "n_criteria": 30,
        **fields})
    judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    return benchmark


def scored_submission(benchmark: Benchmark, owner, name: str, figures: dict, *,
                      public=True, status="finished", intervals=None, coverage=1.0,
                      changed=False, **model_fields) -> Submission:
    """A submission of `owner`'s model `name` (made on first use, with `model_fields`) whose
    run under the benchmark's current config is `status`, with `figures`: {(dimension,
    bucket): (IFR, CR, EMR)} and `intervals`: {(dimension, bucket): {metric: (lo, hi)}}.
    With `changed`, the board is told, as a run finishing tells it."""
    model, _ = ModelEntry.objects.get_or_create(owner=owner, name=name, defaults={
        "organisation": "Lab", **model_fields})
    run = ScoringRun.objects.create(
        benchmark=benchmark, judge_config=benchmark.judge_config, audio_root="/x",
        judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="p" * 64, rounds=3,
        max_attempts=5, status=status, status_times={status: timezone.now().isoformat()})
    SliceResult.objects.bulk_create(
        SliceResult(run=run, dimension=dimension, bucket=bucket, n=4,
                    values={"n": 4, "IFR": ifr, "CR": cr, "EMR": emr},
                    intervals={m: [lo, hi] for m, (lo, hi)
                               in (intervals or {}).get((dimension, bucket), {}).items()})
        for (dimension, bucket), (ifr, cr, emr) in figures.items())
    submission = Submission.objects.create(
        owner=owner, model=model, benchmark=benchmark, public=public, status="queued",
        current_run=run, coverage=coverage)
    submission.runs.add(run)
    if changed:
        board_changed(benchmark.id)
    return submission


def rescored(submission: Submission, config, figures: tuple) -> ScoringRun:
    """Another finished run of `submission`, under `config`, with overall `figures` (IFR,
    CR, EMR), as a rescore that finished leaves it."""
    ifr, cr, emr = figures
    run = ScoringRun.objects.create(
        benchmark=submission.benchmark, judge_config=config, audio_root="/x",
        judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="p" * 64, rounds=3,
        max_attempts=5, purpose=ScoringRun.Purpose.RESCORE, status="finished")
    SliceResult.objects.create(run=run, dimension="overall", bucket="", n=4,
                               values={"IFR": ifr, "CR": cr, "EMR": emr})
    submission.runs.add(run)
    return run


def seeded_board(root, *, items: int, submissions: int, seed: int, slug: str = "mmae",
                 synthetic: bool = False) -> Benchmark:
    """An MMAE benchmark of `items` synthetic samples under `root`, and `submissions` public
    representatives drawn by `seed_board` (per-item results, slices and vectors, in this
    process): the benchmark as it is then."""
    from django.core.management import call_command

    from scoring.services import benchmark_import
    from scoring.synthetic import write_benchmark

    meta = write_benchmark(root, items, seed=seed)
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=root, slug=slug,
                                    synthetic=synthetic)
    call_command("seed_board", "--benchmark", slug, "--submissions", str(submissions),
                 "--resamples", "20", "--processes", "1")
    return Benchmark.objects.get(pk=benchmark.pk)


REASON_WORDS = (
    "the output keeps the original speaker but the requested edit is audible after the first "
    "second where a dog barks twice and the background hum drops noticeably while the music "
    "bed stays level compared with input one the timbre is slightly brighter and a short click "
    "remains near the end so the removal is partial yet most of the target sound is gone"
).split()


def judged_submission(benchmark: Benchmark, owner, name: str, *, public=True, seed=0,
                      reason_chars=240) -> Submission:
    """A submission of `owner`'s model `name` with an output for every item of an imported
    MMAE `benchmark`, each rubric voted three times as a judge would (its choices shuffled,
    mostly right, a reason of about `reason_chars` characters of varied words, as Qwen3-Omni
    writes them), aggregated as the pipeline aggregates: answers, per-item results, slices."""
    import random

    from scoring import aggregation
    from scoring.models import Answer

    rng = random.Random(seed)
    items = list(benchmark.items.prefetch_related("criteria").order_by("position"))
    config = benchmark.judge_config
    run = ScoringRun.objects.create(
        benchmark=benchmark, judge_config=config, audio_root="/x",
        outputs={i.key: f"{i.key}.wav" for i in items}, judge_model=config.judge_model,
        prompt_sha256=config.prompt_sha256, rounds=3, max_attempts=5, status="aggregating")
    answers = []
    for criterion in (c for item in items for c in item.criteria.all()):
        for round_ in range(3):
            choices = [criterion.spec["right"], *criterion.spec["wrong"]]
            rng.shuffle(choices)
            right = "ABCDEFGH"[choices.index(criterion.spec["right"])]
            choice = right if rng.random() < 0.8 else rng.choice("ABCDEFGH"[:len(choices)])
            words = []
            while sum(len(w) + 1 for w in words) < reason_chars:
                words.append(rng.choice(REASON_WORDS))
            answers.append(Answer(
                run=run, criterion=criterion, round=round_, choices=choices, choice=choice,
                reason=" ".join(words).capitalize() + ".", raw="{}", attempts=1,
                verdict={"correct_letter": right, "correct": choice == right}))
    Answer.objects.bulk_create(answers)
    ScoringRun.objects.filter(id=run.id).update(total_queries=len(answers))
    assert aggregation.run_aggregate(run.id)
    model, _ = ModelEntry.objects.get_or_create(owner=owner, name=name,
                                                defaults={"organisation": "Lab"})
    submission = Submission.objects.create(
        owner=owner, model=model, benchmark=benchmark, public=public, status="queued",
        current_run_id=run.id, coverage=1.0)
    submission.runs.add(run)
    board_changed(benchmark.id)
    return submission
