"""Migration scoring 0015 (kind-neutral tables): runs stored in the old shape (MMAE's columns
in every kind's rows) read back the same once migrated: their items, per-item rows, answers,
results files and compare-page columns."""

import json
import random

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from scoring import exports, synthetic
from scoring.kinds import get_kind
from scoring.kinds.airbench import rules as airbench
from scoring.kinds.base import mean_score
from scoring.kinds.mmae import metrics as mmae_metrics
from scoring.kinds.mmae import rules as mmae
from scoring.models import Answer, Criterion, ItemResult, ScoringRun

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BEFORE = [("scoring", "0014_judge_limits_refusals")]
# Past 0015_kind_neutral_tables, to the newest: the models read afterwards are today's.


def after():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def old_run(apps, kind: str, n_items: int, rounds: int):
    config, _ = apps.get_model("scoring", "JudgeConfig").objects.get_or_create(
        name=f"judge {kind}", defaults={"judge_model": "m", "prompt_sha256": "p", "rounds": rounds})
    benchmark = apps.get_model("scoring", "Benchmark").objects.create(
        slug=kind, kind=kind, version=1, title=kind, sha256=kind, source_name="meta.json",
        audio_root="/audio", n_items=n_items, n_criteria=0)
    return apps.get_model("scoring", "ScoringRun").objects.create(
        benchmark=benchmark, judge_config=config, audio_root="/out", judge_model="m",
        prompt_sha256="p", rounds=rounds, max_attempts=5, status="finished",
        outputs={}, total_queries=0)


def old_mmae(apps, tmp_path) -> tuple[int, list[dict], list[dict]]:
    """A finished MMAE run in the old shape; (its id, its per-item rows, its answers as
    results.jsonl gives them)."""
    kind = get_kind(mmae.KIND)
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps(synthetic.make_meta(4, seed=2)))
    samples = kind.load(meta)
    run = old_run(apps, mmae.KIND, len(samples), mmae.ROUNDS)
    Item, Criterion = apps.get_model("scoring", "Item"), apps.get_model("scoring", "Criterion")
    Answer = apps.get_model("scoring", "Answer")
    ItemResult = apps.get_model("scoring", "ItemResult")
    rng = random.Random(5)
    rows, lines = [], []
    run.outputs = {s.id: f"{s.id}.wav" for s in samples[1:]}  # the first one missing
    run.save()
    for position, sample in enumerate(samples):
        item = Item.objects.create(benchmark=run.benchmark, position=position, key=sample.id,
                                   dimensions=sample.dimensions(),
                                   content={"messages": sample.messages, "tags": sample.tags},
                                   media=list(sample.input_audio))
        votes = {}
        for rubric in sample.rubrics:
            criterion = Criterion.objects.create(
                item=item, index=rubric.index, category=rubric.category,
                question=rubric.question, right_choice=rubric.right_choice,
                wrong_choices=list(rubric.wrong_choices))
            if sample.id not in run.outputs:
                continue
            for round_ in range(mmae.ROUNDS):
                query = mmae.make_query(sample, rubric, round_, seed=0)
                choice = rng.choice([None, *mmae.LETTERS[:len(query.choices)]])
                answer = {"choices": list(query.choices), "correct_letter": query.correct_letter,
                          "choice": choice, "correct": choice == query.correct_letter,
                          "reason": None if choice is None else f"reason {round_}",
                          "raw": f"raw {round_}", "error": None if choice else "timeout",
                          "endpoint": "http://judge", "attempts": 1 + (choice is None),
                          "latency_ms": 12.5}
                Answer.objects.create(run=run, criterion=criterion, round=round_,
                                      **answer)
                votes.setdefault(rubric.index, []).append(answer["correct"])
                lines.append({"id": sample.id, "rubric_index": rubric.index,
                              "round": round_, "category": rubric.category, **answer})
        scores = None if sample.id not in run.outputs else \
            [mmae_metrics.rubric_score(votes[r.index]) for r in sample.rubrics]
        row = mmae_metrics.sample_result(sample, scores)
        ItemResult.objects.create(run=run, item=item, ifr=row["IFR"], cr=row["CR"],
                                  em=row["EM"], rubric_scores=row["rubric_scores"],
                                  missing=row["missing"], values={"agree": 1, "judged": 2},
                                  failed=0 in row["rubric_scores"], position=position)
        rows.append({k: row[k] for k in ("id", "IFR", "CR", "EM", "n_if", "n_cr",
                                          "rubric_scores", "missing", "complexity",
                                          "modality", "granularity", "operations")})
    apps.get_model("scoring", "SliceResult").objects.create(
        run=run, dimension="overall", n=len(samples), values={"IFR": 50.0, "CR": 25.0,
                                                              "EMR": 0.0})
    return run.id, rows, lines


def old_chat(apps) -> int:
    """A finished AIR-Bench chat run in the old shape: correct=False on every answer, the
    model's score in `score`; its id."""
    run = old_run(apps, airbench.CHAT, 2, airbench.CHAT_ROUNDS)
    run.outputs = {"c1": "an answer", "c2": "another"}
    run.save()
    Item, Criterion = apps.get_model("scoring", "Item"), apps.get_model("scoring", "Criterion")
    replies = {("c1", 0): "3 9", ("c1", 1): "8 4", ("c2", 0): None, ("c2", 1): "2 7"}
    for position, key in enumerate(("c1", "c2")):
        item = Item.objects.create(benchmark=run.benchmark, position=position, key=key,
                                   dimensions={"category": "speech", "task": "Speech QA",
                                               "dataset": "d"},
                                   content={"question": "Q?", "answer_gt": "A",
                                            "meta_info": "m", "path": f"{key}.wav"},
                                   media=[f"{key}.wav"])
        criterion = Criterion.objects.create(item=item, index=0, category="Speech QA",
                                             question="Q?", right_choice="A", wrong_choices=[])
        scores = []
        for round_ in range(airbench.CHAT_ROUNDS):
            raw = replies[(key, round_)]
            score = None if raw is None else \
                airbench.model_score(airbench.parse_chat_reply(raw), round_)
            scores.append(score)
            apps.get_model("scoring", "Answer").objects.create(
                run=run, criterion=criterion, round=round_, choices=[], correct_letter="",
                correct=False, raw=raw, error=None if raw else "unreadable", attempts=1,
                score=score)
        row = {"id": key, "category": "speech", "task": "Speech QA", "score_A": scores[0],
               "score_B": scores[1], "failed_A": scores[0] is None,
               "failed_B": scores[1] is None, "missing": False}
        apps.get_model("scoring", "ItemResult").objects.create(
            run=run, item=item, ifr=None, cr=None, em=None, rubric_scores=scores,
            values=row, failed=row["failed_A"] or row["failed_B"], position=position)
    return run.id


@pytest.fixture
def at_0014():
    apps = migrate(BEFORE)
    yield apps
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def test_runs_of_both_kinds_stored_before_read_the_same_after(at_0014, tmp_path):
    """One migration back and forth (each takes seconds) for an MMAE run and a chat run."""
    mmae_run = old_mmae(at_0014, tmp_path)
    chat_run = old_chat(at_0014)
    migrate(after())
    an_mmae_run_reads_the_same(*mmae_run, tmp_path)
    an_airbench_chat_run_keeps_its_figures_and_gets_its_passes_scores(chat_run)


def an_mmae_run_reads_the_same(run_id: int, rows: list[dict], lines: list[dict], tmp_path):
    run = ScoringRun.objects.select_related("benchmark").get(id=run_id)
    kind = get_kind(mmae.KIND)
    samples = kind.load(tmp_path / "meta.json")
    for item, sample in zip(run.benchmark.items.prefetch_related("criteria"), samples,
                            strict=True):
        assert kind.from_rows(item.as_rows()) == sample
    # as the files' text: floats stay floats (1.0, not 1), keys in their order
    assert "".join(exports.file_chunks(run, "per_sample.json")) == json.dumps(
        rows, indent=1, ensure_ascii=False)
    assert list(exports.file_chunks(run, "results.jsonl")) == [
        json.dumps(line, ensure_ascii=False) + "\n" for line in lines]
    assert json.loads("".join(exports.file_chunks(run, "taxonomy.json"))) == {
        "overall": {"n": 4, "IFR": 50.0, "CR": 25.0, "EMR": 0.0}}
    for result in ItemResult.objects.filter(run=run).order_by("position"):
        row = rows[result.position]
        assert (result.passed, result.score) == (bool(row["EM"]),
                                                 mean_score(row["rubric_scores"]))
        assert result.values["agree"] == 1 and result.failed == kind.failed(
            {"missing": result.missing, "values": result.values})
    assert Criterion.objects.filter(item__benchmark=run.benchmark).count() == sum(
        len(s.rubrics) for s in samples)


def an_airbench_chat_run_keeps_its_figures_and_gets_its_passes_scores(run_id: int):
    run = ScoringRun.objects.select_related("benchmark").get(id=run_id)
    answers = Answer.objects.filter(run=run).order_by("criterion__item__position", "round")
    assert [a.verdict for a in answers] == [{"scores": [3, 9]}, {"scores": [8, 4]}, {},
                                            {"scores": [2, 7]}]
    assert [a.score for a in answers] == [9, 8, None, 2]
    assert [c.spec for c in Criterion.objects.filter(item__benchmark=run.benchmark)] == [
        {"reference": "A"}] * 2
    results = ItemResult.objects.filter(run=run).order_by("position")
    assert [(r.passed, r.score) for r in results] == [(None, 8.5), (None, 2.0)]
    lines = [json.loads(line) for line in exports.file_chunks(run, "results.jsonl")]
    assert [(line["score"], line["failed"], line["judge"] and line["judge"]["raw"])
            for line in lines] == [(9, False, "3 9"), (8, False, "8 4"), (None, True, None),
                                   (2, False, "2 7")]
