"""The robustness battery: Silence, Reversed and Shuffled built from the inputs and a public
system's outputs, then scored through the calibration baselines' path by the judge simulator,
checked against a hand computation from the simulator's own record of its verdicts."""

import numpy as np
import pytest
import soundfile

from scoring import runs
from scoring.baselines import baseline_folder, baselines_create
from scoring.battery import derangement
from scoring.kinds.mmae.predictions import load_predictions
from scoring.models import ScoringRun, SliceResult
from submissions.models import ModelEntry, Submission
from tests.conftest import score_run
from tests.scoring.test_baselines import by_hand

pytestmark = pytest.mark.django_db


def public_system(benchmark, demo_set, owner, *, only=None):
    """System A's outputs (its last two samples have none) as the finished run of a public
    submission; with `only`, just those items' outputs."""
    outputs = {p.sample_id: p.audio_path for p in load_predictions(
        demo_set["predictions"], known_ids={s["id"] for s in demo_set["samples"]})}
    if only is not None:
        outputs = {key: outputs[key] for key in only}
    run = runs.run_create(benchmark=benchmark, audio_root=str(demo_set["root"]),
                          outputs=outputs, missing={})
    ScoringRun.objects.filter(pk=run.pk).update(status=ScoringRun.Status.FINISHED)
    model = ModelEntry.objects.create(owner=owner, name="System A")
    submission = Submission.objects.create(owner=owner, model=model, benchmark=benchmark,
                                           public=True, status="queued", current_run=run)
    submission.runs.add(run)
    return run


def made_by_label(made):
    return {run.label: run for run in made}


def frames(path):
    return soundfile.read(str(path), always_2d=True, dtype="int16")


def test_a_derangement_moves_every_key_and_is_seeded():
    keys = [f"k{i}" for i in range(40)]
    for seed in range(5):
        mapping = derangement(keys, seed=seed)
        assert sorted(mapping) == sorted(keys) and sorted(mapping.values()) == sorted(keys)
        assert all(mapping[key] != key for key in keys)
        assert derangement(keys, seed=seed) == mapping
    assert derangement(keys, seed=1) != derangement(keys, seed=2)
    assert derangement(["a", "b"], seed=3) == {"a": "b", "b": "a"}
    assert derangement(["only"], seed=3) == {} and derangement([], seed=3) == {}


def test_silence_and_reversed_keep_each_inputs_length_rate_and_channels(
        bench, demo_set, staff):
    benchmark, _ = bench
    made = made_by_label(baselines_create(actor=staff, benchmark=benchmark))
    folder = baseline_folder(benchmark)
    assert set(made["Silence"].outputs) == set(made["Reversed"].outputs) == {
        item.key for item in benchmark.items.all()}
    for item in benchmark.items.all():
        source, rate = frames(demo_set["root"] / item.media[0])
        silent, silent_rate = frames(folder / made["Silence"].outputs[item.key])
        backwards, backwards_rate = frames(folder / made["Reversed"].outputs[item.key])
        assert silent.shape == backwards.shape == source.shape
        assert silent_rate == backwards_rate == rate
        assert not silent.any() and source.any()
        np.testing.assert_array_equal(backwards, source[::-1])
        assert not np.array_equal(backwards, source)


def test_shuffled_gives_each_item_another_items_public_output(bench, demo_set, staff,
                                                               author):
    benchmark, _ = bench
    source = public_system(benchmark, demo_set, author)
    shuffled = made_by_label(baselines_create(actor=staff, benchmark=benchmark))["Shuffled"]
    keys = [item.key for item in benchmark.items.order_by("position")]
    cycle = derangement(keys, seed=benchmark.judge_config.seed)
    assert len(source.outputs) == len(keys) - 2 and not shuffled.missing
    assert set(shuffled.outputs) == set(keys)
    for key in keys:
        donor = cycle[key]
        while donor not in source.outputs:  # system A has no output for it: the next one
            donor = cycle[donor]
        assert donor != key
        given = (baseline_folder(benchmark) / shuffled.outputs[key]).read_bytes()
        assert given == (demo_set["root"] / source.outputs[donor]).read_bytes()


@pytest.mark.slow
def test_an_item_with_no_other_public_output_is_reported_not_faked(bench, demo_set, staff,
                                                                   author):
    benchmark, _ = bench
    only = benchmark.items.order_by("position").first().key
    public_system(benchmark, demo_set, author, only=[only])
    shuffled = made_by_label(baselines_create(actor=staff, benchmark=benchmark))["Shuffled"]
    assert list(shuffled.missing) == [only]
    assert "no other item has an output in the public system" in shuffled.missing[only]
    assert set(shuffled.outputs) == {item.key for item in benchmark.items.all()} - {only}
    assert shuffled.total_queries > 0


def test_a_hidden_or_private_system_is_never_shuffled(bench, demo_set, staff, author):
    benchmark, _ = bench
    run = public_system(benchmark, demo_set, author)
    Submission.objects.filter(runs=run).update(hidden=True)
    assert "Shuffled" not in made_by_label(baselines_create(actor=staff, benchmark=benchmark))


def recorded(sim) -> list[list]:
    """Each endpoint's record of the queries it answered, in order."""
    return [stats["queries"] for stats in sim.stats()]


@pytest.mark.slow
def test_the_battery_is_scored_by_the_judge_as_a_hand_computation_says(
        bench, demo_set, staff, author):
    benchmark, sim = bench
    public_system(benchmark, demo_set, author)
    made = made_by_label(baselines_create(actor=staff, benchmark=benchmark))
    for label in ("Silence", "Reversed", "Shuffled"):
        before = [len(queries) for queries in recorded(sim)]
        run = score_run(made[label])
        queries = [q for start, answered in zip(before, recorded(sim), strict=True)
                   for q in answered[start:]]
        assert run.status == ScoringRun.Status.FINISHED and len(queries) == run.total_queries
        figures = SliceResult.objects.get(run=run, dimension="overall")
        assert tuple(figures.values[m] for m in ("IFR", "CR", "EMR")) == pytest.approx(
            by_hand(demo_set["samples"], queries)), label
