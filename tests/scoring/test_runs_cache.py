"""The judgment cache of scoring.runs, keyed by the exact request: what the judge receives
(every text, and the sha256 of every audio file sent), the judge config and the round.

Driven through the pipeline (run_create, batch_score, run_try_aggregate, run_aggregate) against
the judge simulator, which counts and records every query it answers.
"""

import json
import shutil

import pytest

from scoring import exports, runs
from scoring.kinds.mmae.predictions import load_predictions
from scoring.models import Answer, ItemResult
from scoring.services import benchmark_import
from scoring.synthetic import write_wav
from tests.conftest import judge_config, run_manage, score_run

pytestmark = pytest.mark.django_db

# A rubric about the input alone: the same request whatever a system outputs, since the
# choices' shuffle is seeded by sample, rubric and round.
SPEECH = {"category": "Consistency", "question": "Does <audio input1> contain speech?",
          "right_choice": "No, only a tone", "wrong_choices": ["Yes, a voice speaks"]}
ROUNDS = 3


def names_input1(rubric: dict) -> bool:
    return "<audio input1" in rubric["question"]


@pytest.fixture
def speech_set(demo_set, settings):
    """The demo set with the speech rubric added to every sample, imported, and the two
    systems' outputs: A has none for the last two samples, B has all fourteen."""
    settings.SCORING_BATCH_ITEMS = 20
    root = demo_set["root"]
    samples = [{**s, "rubrics": [*s["rubrics"], SPEECH]} for s in demo_set["samples"]]
    meta = root / "MMAE-meta-speech.json"
    meta.write_text(json.dumps(samples))
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=root, slug="mmae")
    known = {s["id"] for s in samples}
    outputs = {name: {p.sample_id: p.audio_path for p in load_predictions(path,
                                                                          known_ids=known)}
               for name, path in (("A", demo_set["predictions"]), ("B", demo_set["jsonl"]))}
    return {"root": root, "samples": samples, "meta": meta, "benchmark": benchmark,
            "outputs": outputs, "jsonl": demo_set["jsonl"]}


def run_of(data, system: str, urls, benchmark=None):
    benchmark = benchmark or data["benchmark"]
    outputs = data["outputs"][system]
    return runs.run_create(
        benchmark=benchmark, audio_root=str(data["root"]), outputs=outputs,
        missing={s["id"]: "no prediction" for s in data["samples"] if s["id"] not in outputs},
        config=judge_config(urls, benchmark=benchmark))


def speech_queries(sim) -> int:
    return sum(q[0] == SPEECH["question"] for s in sim.stats() for q in s["queries"])


def test_a_second_submission_asks_nothing_of_the_rubrics_about_the_input_alone(
        speech_set, simulator_factory, tmp_path):
    sim = simulator_factory("--latency-ms", "1")
    first = score_run(run_of(speech_set, "A", sim.urls))
    both = [s for s in speech_set["samples"] if s["id"] in speech_set["outputs"]["A"]]
    assert len(both) == 12 and sim.completions() == first.total_queries
    assert speech_queries(sim) == ROUNDS * 12
    second = run_of(speech_set, "B", sim.urls)
    # The dry run of a rescore counts by the very keys a batch looks up.
    assert runs.cached_count(
        benchmark=speech_set["benchmark"], outputs=second.outputs, audio_root=second.audio_root,
        digests=second.digests, config=second.judge_config, options={}) == (
        second.total_queries, ROUNDS * 12)
    asked = sim.completions()
    second = score_run(second)
    assert second.status == "finished"
    # Every query but the speech rubric's on the twelve samples both systems answered; the
    # two samples only B answered are asked theirs.
    assert sim.completions() - asked == second.total_queries - ROUNDS * 12
    assert speech_queries(sim) == ROUNDS * 14
    cached = Answer.objects.filter(run=second, cached=True).select_related("criterion__item")
    assert sorted((a.criterion.item.key, a.round) for a in cached) == sorted(
        (s["id"], k) for s in both for k in range(ROUNDS))
    assert {a.criterion.question for a in cached} == {SPEECH["question"]}
    assert {(a.source_run_id, a.attempts, a.error) for a in cached} == {(first.id, 0, None)}
    # Every rubric that names the output (all the others) was asked again for B's output,
    # as was the speech rubric of the two samples A had no output for.
    fresh = Answer.objects.filter(run=second, cached=False).select_related("criterion__item")
    assert sorted((a.criterion.item.key, a.criterion.index, a.round) for a in fresh) == sorted(
        (s["id"], i, k) for s in speech_set["samples"] for i, r in enumerate(s["rubrics"])
        if r != SPEECH or s not in both for k in range(ROUNDS))
    # The figures are those of asking every query: `manage.py score` (which has no cache) on
    # B's outputs, with the same judge and seed.
    out = tmp_path / "cli"
    result = run_manage("score", "--meta", str(speech_set["meta"]), "--predictions",
                        str(speech_set["jsonl"]), "--audio_root", str(speech_set["root"]),
                        "--base_urls", sim.base_urls, "--output_dir", str(out), "--seed", "11")
    assert result.returncode == 0, result.stderr
    assert "".join(exports.file_chunks(second, "per_sample.json")) == \
        (out / "per_sample.json").read_text()
    assert json.loads("".join(exports.file_chunks(second, "taxonomy.json"))) == \
        json.loads((out / "taxonomy.json").read_text())


@pytest.mark.slow
def test_a_changed_input_file_in_a_new_version_is_asked_again(speech_set, thread_simulator_factory):
    sim = thread_simulator_factory(latency_ms=1)
    first = score_run(run_of(speech_set, "B", sim.urls))
    root, samples = speech_set["root"], json.loads(json.dumps(speech_set["samples"]))
    changed, moved = [s for s in samples if s["complexity"] == "single"][:2]
    # The next version: one sample's input replaced by other audio, another's moved to a new
    # path with the same bytes.
    for sample, suffix in ((changed, "changed"), (moved, "moved")):
        audio = sample["messages"][0]["content"][1]
        new = f"wav/{sample['id']}/audio1-{suffix}.wav"
        if sample is changed:
            write_wav(root / new, seconds=0.5, frequency=880, seed=99)
        else:
            shutil.copyfile(root / audio["audio_url"], root / new)
        audio["audio_url"] = new
    meta = root / "MMAE-meta-speech-v2.json"
    meta.write_text(json.dumps(samples))
    version2, created = benchmark_import(kind="mmae", path=meta, audio_root=root, slug="mmae")
    assert created and version2.version == 2
    asked = sim.completions()
    second = score_run(run_of(speech_set, "B", sim.urls, benchmark=version2))
    again = [(i, k) for i, r in enumerate(changed["rubrics"]) if names_input1(r)
             for k in range(ROUNDS)]
    assert len(again) >= ROUNDS  # the speech rubric, and any consistency rubric on input 1
    assert sim.completions() - asked == len(again)
    fresh = Answer.objects.filter(run=second, cached=False).select_related("criterion__item")
    assert sorted((a.criterion.item.key, a.criterion.index, a.round) for a in fresh) == \
        [(changed["id"], i, k) for i, k in again]
    assert Answer.objects.filter(run=second, cached=True).count() == \
        second.total_queries - len(again)
    # Copies repeat their originals: every other sample scores as in version 1.
    def results(run):
        return {r.item.key: (r.values, r.passed, r.score)
                for r in ItemResult.objects.filter(run=run).select_related("item")}

    before, after = results(first), results(second)
    del before[changed["id"]], after[changed["id"]]
    assert after == before
