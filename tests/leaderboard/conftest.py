import pytest
from django.core.cache import caches
from django.utils import timezone

from scoring.boards import board_changed
from scoring.models import ScoringRun, SliceResult
from submissions.models import ModelEntry, Submission
from tests.conftest import judge_config
from tests.factories import board_benchmark, scored_submission


@pytest.fixture
def board(db, author):
    """A benchmark and a factory of scored submissions with figures given per slice
    (tests.factories: no judge)."""
    benchmark = board_benchmark()

    def scored(name, overall, *, slices=None, owner=None, licence="MIT", **options):
        return scored_submission(benchmark, owner or author, name,
                                 {("overall", ""): overall, **(slices or {})}, changed=True,
                                 licence=licence, **options)

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
    from scoring import mmae, runs, synthetic
    from scoring.kinds import get_kind
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
        rows = [{**mmae.sample_result(s, [passes(s, r) for r in s.rubrics]), "agree": 0,
                 "judged": len(s.rubrics)} for s in samples]
        model, _ = ModelEntry.objects.get_or_create(owner=owner or author, name=name,
                                                    defaults={"organisation": "Lab"})
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root="/x",
            judge_model=config.judge_model, prompt_sha256=config.prompt_sha256, rounds=3,
            max_attempts=5, status="finished",
            status_times={"finished": timezone.now().isoformat()})
        SliceResult.objects.bulk_create(runs._slices(run, kind.summarize(rows), {}))
        runs.run_vector_store(run, kind, rows)
        submission = Submission.objects.create(
            owner=owner or author, model=model, benchmark=benchmark, public=public,
            status="queued", current_run=run, coverage=1.0)
        submission.runs.add(run)
        board_changed(benchmark.id)  # as a run finishing does
        return submission

    return benchmark, scored, samples
