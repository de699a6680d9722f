import pytest
from django.core.cache import caches
from django.utils import timezone

from scoring.boards import board_changed
from scoring.kinds.mmae.predictions import load_predictions
from scoring.models import ScoringRun, SliceResult
from scoring.services import benchmark_import
from submissions.models import ModelEntry, Submission
from tests.conftest import judge_config
from tests.factories import board_benchmark, scored_submission


@pytest.fixture
def board(db, author):
    """A benchmark and `score_by_slices(name, overall, slices=...)`, a factory of scored
    submissions with figures given per slice (tests.factories: no judge)."""
    benchmark = board_benchmark()

    def score_by_slices(name, overall, *, slices=None, owner=None, licence="MIT", **options):
        return scored_submission(benchmark, owner or author, name,
                                 {("overall", ""): overall, **(slices or {})}, changed=True,
                                 licence=licence, **options)

    return benchmark, score_by_slices


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
    them. `score_by_item_passes(name, passes)`: passes(sample, rubric) -> 0 or 1."""
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

    def score_by_item_passes(name, passes, *, owner=None, public=True):
        rows = [{**mmae_metrics.sample_result(s, [passes(s, r) for r in s.rubrics]), "agree": 0,
                 "judged": len(s.rubrics)} for s in samples]
        model, _ = ModelEntry.objects.get_or_create(owner=owner or author, name=name,
                                                    defaults={"organisation": "Lab"})
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root="/x",
            judge_model=config.judge_model, prompt_sha256=config.prompt_sha256, rounds=3,
            max_attempts=5, status="finished",
            status_times={"finished": timezone.now().isoformat()})
        SliceResult.objects.bulk_create(aggregation.slice_results(run, kind.summarize(rows), {}))
        aggregation.run_vector_store(run, kind, rows)
        submission = Submission.objects.create(
            owner=owner or author, model=model, benchmark=benchmark, public=public,
            status="queued", current_run=run, coverage=1.0)
        submission.runs.add(run)
        board_changed(benchmark.id)  # as a run finishing does
        return submission

    return benchmark, score_by_item_passes, samples


@pytest.fixture
def votes_board(db, author, tmp_path):
    """An MMAE benchmark of 12 real samples (empty input audio) and a factory of public
    representatives judged by votes given by hand and aggregated as the pipeline does.
    `score_by_votes(name, votes, missing=())`: votes(position, rubric index) -> the three
    rounds' verdicts (True: the right letter chosen); the samples at `missing` have no
    output."""
    from scoring import aggregation, synthetic
    from scoring.models import Answer
    from scoring.services import benchmark_import

    meta = synthetic.write_meta_with_empty_audio(synthetic.make_meta(12, seed=5),
                                                 tmp_path / "meta.json", tmp_path / "audio")
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=tmp_path / "audio",
                                    slug="mmae")
    config = judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    items = list(benchmark.items.prefetch_related("criteria").order_by("position"))

    def score_by_votes(name, votes, *, missing=(), public=True, owner=None):
        outputs = {i.key: f"{i.key}.wav" for i in items if i.position not in missing}
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root=str(tmp_path / name),
            outputs=outputs, missing={i.key: "no prediction" for i in items
                                      if i.key not in outputs},
            judge_model=config.judge_model, prompt_sha256=config.prompt_sha256, rounds=3,
            max_attempts=5, status="aggregating")
        answers = [
            Answer(run=run, criterion=c, round=r, choices=["right one", "wrong one"],
                   choice="A" if right else "B", reason=f"{name} round {r}",
                   verdict={"correct_letter": "A", "correct": right}, raw="{}", attempts=1)
            for i in items if i.key in outputs for c in i.criteria.all()
            for r, right in enumerate(votes(i.position, c.index))]
        Answer.objects.bulk_create(answers)
        ScoringRun.objects.filter(id=run.id).update(total_queries=len(answers))
        assert aggregation.run_aggregate(run.id)
        model, _ = ModelEntry.objects.get_or_create(owner=owner or author, name=name,
                                                    defaults={"organisation": "Lab"})
        submission = Submission.objects.create(
            owner=owner or author, model=model, benchmark=benchmark, public=public,
            status="queued", current_run_id=run.id, coverage=len(outputs) / len(items))
        submission.runs.add(run)
        board_changed(benchmark.id)
        return submission

    return benchmark, score_by_votes, items


CHAT_RESPONSES = {"Talker": "A man speaks calmly about the weather", "Mute": "Noise."}


@pytest.fixture
def chat_pair(db, tmp_path, author, simulator_factory):
    """AIR-Bench chat with two public representatives answering every item in text, scored
    by the judge simulator through scoring.runs."""
    from scoring import aggregation, query_loop, runs
    from scoring.kinds.airbench import rules as airbench
    from scoring.services import benchmark_import
    from tests.scoring.airbench_data import chat_meta, write

    benchmark, _ = benchmark_import(kind=airbench.CHAT,
                                    path=write(tmp_path / "Chat_meta.json", chat_meta()),
                                    audio_root=None, slug="air-bench-chat")
    urls = simulator_factory("--latency-ms", "1", "--seed", "3").urls
    made = []
    for name, response in CHAT_RESPONSES.items():
        outputs = {str(i): f"{response} ({i})" for i in range(6)}
        run = runs.run_create(benchmark=benchmark, audio_root="", outputs=outputs, missing={},
                              config=judge_config(urls, kind=benchmark.kind,
                                                  benchmark=benchmark))
        for batch in run.batches.order_by("index"):
            assert query_loop.batch_score(batch.id, query_loop.JudgeSettings(
                concurrency=8, timeout=10, down_wait=1))
        assert runs.run_try_aggregate(run.id) and aggregation.run_aggregate(run.id)
        model = ModelEntry.objects.create(owner=author, name=name, organisation="Lab")
        submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                               public=True, status="queued",
                                               current_run_id=run.id, coverage=1.0)
        submission.runs.add(run)
        made.append(submission)
    return benchmark, made


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


LIGHT_ITEMS = 40


@pytest.fixture(scope="module")
def light_explorer(module_cast, django_db_blocker, tmp_path_factory):
    """An MMAE benchmark of 40 synthetic samples with the real set's rubrics per sample
    (17,741 for 2,000: 355 here), each voted three times with a reason of a judge's length
    (tests.factories.judged_submission), for a public submission and for a private one of
    the author's, made once for the module: {"public", "private", "keys"}."""
    from scoring import synthetic
    from tests.factories import judged_submission

    root = tmp_path_factory.mktemp("light")
    meta = synthetic.write_meta_with_empty_audio(
        synthetic.make_meta(LIGHT_ITEMS, seed=11, n_rubrics=round(LIGHT_ITEMS * 17_741 / 2_000)),
        root / "meta.json", root / "audio")
    with django_db_blocker.unblock():
        benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=root / "audio",
                                        slug="mmae")
        judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
        benchmark.refresh_from_db()
        author = module_cast["author"]
        return {"public": judged_submission(benchmark, author, "Open Editor", seed=1),
                "private": judged_submission(benchmark, author, "Secret Editor", seed=2,
                                             public=False),
                "keys": list(benchmark.items.order_by("position")
                             .values_list("key", flat=True))}
