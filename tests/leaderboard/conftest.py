import pytest
from django.core.cache import caches
from django.utils import timezone

from scoring.boards import board_changed
from scoring.kinds.mmae.predictions import load_predictions
from scoring.models import Benchmark, ScoringRun, SliceResult
from scoring.services import benchmark_import
from submissions.models import ModelEntry, Submission
from tests.conftest import judge_config


@pytest.fixture
def board(db, author):
    """A benchmark and a factory of scored submissions with figures given per slice."""
    benchmark = Benchmark.objects.create(
        slug="mmae", kind="mmae", version=1, title="MMAE", sha256="a" * 64,
        source_name="MMAE-meta.json", audio_root="/x", n_items=4, n_criteria=30)
    config = judge_config(["http://127.0.0.1:9"], benchmark=benchmark)

    def scored(name, overall, *, slices=None, public=True, status="finished", owner=None,
               open_weights=False, licence="MIT", organisation="Lab", intervals=None,
               coverage=1.0):
        model, _ = ModelEntry.objects.get_or_create(
            owner=owner or author, name=name,
            defaults={"organisation": organisation, "open_weights": open_weights,
                      "licence": licence})
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root="/x",
            judge_model="Qwen3-Omni-30B-A3B-Instruct",
            prompt_sha256="p" * 64, rounds=3, max_attempts=5, status=status,
            status_times={status: timezone.now().isoformat()})
        figures = {("overall", ""): overall, **(slices or {})}
        for (dimension, bucket), (ifr, cr, emr) in figures.items():
            bounds = (intervals or {}).get((dimension, bucket), {})
            SliceResult.objects.create(
                run=run, dimension=dimension, bucket=bucket, n=4,
                values={"n": 4, "IFR": ifr, "CR": cr, "EMR": emr},
                intervals={m: [lo, hi] for m, (lo, hi) in bounds.items()})
        submission = Submission.objects.create(
            owner=owner or author, model=model, benchmark=benchmark, public=public,
            status="queued", current_run=run, coverage=coverage)
        submission.runs.add(run)
        board_changed(benchmark.id)  # as a run finishing does
        return submission

    return benchmark, scored


@pytest.fixture
def cache_writes(monkeypatch):
    """`cache_writes(prefix)`: the keys under `prefix` written to the default and the
    responses cache so far."""
    keys: list[str] = []

    def spying(write):
        def spy(key, *args, **kwargs):
            keys.append(key)
            return write(key, *args, **kwargs)
        return spy

    for backend in (caches["default"], caches["responses"]):
        for name in ("set", "add"):
            monkeypatch.setattr(backend, name, spying(getattr(backend, name)))
    return lambda prefix: [k for k in keys if k.startswith(f"{prefix}:")]


@pytest.fixture
def item_board(db, author, tmp_path):
    """An MMAE benchmark with real items, and a factory of submissions scored from per-item
    rubric scores: per-item results, slices and the per-item vector kept as the pipeline keeps
    them. `scored(name, passes)`: passes(sample, rubric) -> 0 or 1."""
    from scoring import aggregation, synthetic
    from scoring.kinds import get_kind
    from scoring.kinds.mmae import metrics as mmae_metrics
    from scoring.services import benchmark_import

    samples_meta = synthetic.make_meta(40, seed=2)
    meta = synthetic.write_meta_with_empty_audio(samples_meta, tmp_path / "meta.json",
                                                 tmp_path / "audio")
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=tmp_path / "audio",
                                    slug="mmae")
    config = judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    kind = get_kind("mmae")
    samples = [kind.from_rows(item.as_rows())
               for item in benchmark.items.prefetch_related("criteria").order_by("position")]

    def scored(name, passes, *, owner=None, public=True):
        rows = [{**mmae_metrics.sample_result(s, [passes(s, r) for r in s.rubrics]), "agree": 0,
                 "judged": len(s.rubrics)} for s in samples]
        model, _ = ModelEntry.objects.get_or_create(owner=owner or author, name=name,
                                                    defaults={"organisation": "Lab"})
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root="/x",
            judge_model=config.judge_model, prompt_sha256=config.prompt_sha256, rounds=3,
            max_attempts=5, status="finished",
            status_times={"finished": timezone.now().isoformat()})
        SliceResult.objects.bulk_create(aggregation._slices(run, kind.summarize(rows), {}))
        aggregation.run_vector_store(run, kind, rows)
        submission = Submission.objects.create(
            owner=owner or author, model=model, benchmark=benchmark, public=public,
            status="queued", current_run=run, coverage=1.0)
        submission.runs.add(run)
        board_changed(benchmark.id)  # as a run finishing does
        return submission

    return benchmark, scored, samples


@pytest.fixture
def served(demo_set, author):
    """A public submission of system A (2 samples without output) whose run has finished."""
    benchmark, _ = benchmark_import(kind="mmae", path=demo_set["meta"],
                                    audio_root=demo_set["root"], slug="mmae")
    samples = demo_set["samples"]
    outputs = {p.sample_id: p.audio_path for p in load_predictions(
        demo_set["predictions"], known_ids={s["id"] for s in samples})}
    run = ScoringRun.objects.create(
        benchmark=benchmark, judge_config=judge_config(["http://127.0.0.1:9"],
                                                       benchmark=benchmark),
        audio_root=str(demo_set["root"]), outputs=outputs,
        missing={s["id"]: "no prediction" for s in samples if s["id"] not in outputs},
        judge_model="Qwen3-Omni-30B-A3B-Instruct", prompt_sha256="p" * 64, rounds=3,
        max_attempts=5, status="finished", status_times={"finished": timezone.now().isoformat()})
    model = ModelEntry.objects.create(owner=author, name="Echo Editor")
    submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                           public=True, status="queued", current_run=run,
                                           coverage=12 / 14)
    first = samples[0]["id"]
    return {"submission": submission, "run": run, "root": demo_set["root"], "samples": samples,
            "key": first, "url": f"/s/{submission.pk}/audio/{first}/output",
            "bytes": (demo_set["root"] / outputs[first]).read_bytes()}
