"""Calibration baselines: Identity and Noise scored under the current judge config, checked
against a hand computation from the simulator's own record of its verdicts."""

import io

import pytest
import soundfile
from django.core.management import CommandError, call_command

from audit.models import AuditEvent
from leaderboard.boards.selectors import diagnostic_rows
from leaderboard.models import ReferenceFigure, ReferenceResult
from scoring.baselines import BaselineError, baseline_folder, baselines_create
from scoring.models import SliceResult
from tests.conftest import CAST_PASSWORD, score_run
from tests.html import select

pytestmark = pytest.mark.django_db

IF = "Instruction Following"


def by_hand(samples, recorded):
    """IFR, CR, EMR from the simulator's verdicts: a vote is right when the letter it picked
    names the right choice as presented; a rubric scores 1 on 2 of 3 right votes."""
    votes = {}
    for question, choices, letter in recorded:
        votes.setdefault(question, []).append(choices[ord(letter) - ord("A")])
    ifr, cr, em = [], [], []
    for sample in samples:
        scores = {True: [], False: []}
        for rubric in sample["rubrics"]:
            picked = votes[rubric["question"]]
            assert len(picked) == 3
            right = sum(choice == rubric["right_choice"] for choice in picked)
            scores[rubric["category"] == IF].append(1 if right >= 2 else 0)
        if scores[True]:
            ifr.append(sum(scores[True]) / len(scores[True]))
        if scores[False]:
            cr.append(sum(scores[False]) / len(scores[False]))
        em.append(all(scores[True] + scores[False]))
    return (100 * sum(ifr) / len(ifr), 100 * sum(cr) / len(cr), 100 * sum(em) / len(em))


@pytest.mark.slow
def test_the_identity_baseline_equals_a_hand_computation_from_the_simulators_verdicts(
        bench, demo_set, staff):
    benchmark, sim = bench
    made = baselines_create(actor=staff, benchmark=benchmark)
    # No public system yet: Shuffled has nothing to shuffle and is left out.
    assert [run.label for run in made] == ["Identity", "Noise", "Silence", "Reversed"]
    identity = made[0]
    assert identity.outputs == {item.key: item.media[0] for item in benchmark.items.all()}
    assert identity.audio_root == benchmark.audio_root  # the inputs themselves, unchanged
    score_run(identity)
    recorded = [q for stats in sim.stats() for q in stats["queries"]]
    assert len(recorded) == identity.total_queries
    figures = SliceResult.objects.get(run=identity, dimension="overall")
    assert tuple(figures.values[m] for m in ("IFR", "CR", "EMR")) == pytest.approx(
        by_hand(demo_set["samples"], recorded))


@pytest.mark.slow
def test_noise_is_as_long_as_each_input_and_both_rows_show_beside_the_paper(
        bench, demo_set, staff, client):
    benchmark, sim = bench
    identity, noise, *_ = baselines_create(actor=staff, benchmark=benchmark)
    for key, path in list(noise.outputs.items())[:3]:
        item = benchmark.items.get(key=key)
        made = soundfile.info(str(baseline_folder(benchmark) / path))
        source = soundfile.info(str(demo_set["root"] / item.media[0]))
        assert (made.frames, made.samplerate) == (source.frames, source.samplerate)
    score_run(identity), score_run(noise)
    paper = ReferenceResult.objects.create(benchmark_slug="mmae", model="Identity",
                                           scope="2,000 samples", source="paper")
    ReferenceFigure.objects.create(result=paper, dimension="overall", bucket="",
                                   values={"IFR": 27.37, "CR": 94.13, "EMR": 4.6})
    rows = {row["model"]: row for row in diagnostic_rows(benchmark)}
    assert set(rows) == {"Identity", "Noise"} and rows["Identity"]["simulated"]
    ours = SliceResult.objects.get(run=identity, dimension="overall")
    ifr = rows["Identity"]["figures"][1]  # EMR, IFR, CR: the kind's order
    assert ifr == ("IFR", ours.values["IFR"], 27.37, pytest.approx(ours.values["IFR"] - 27.37))
    assert rows["Noise"]["figures"][0][2] is None  # no paper row loaded for Noise here
    body = client.get("/b/mmae/").content.decode()
    # Inline in the ranked table (unranked), and beside the paper's rows below it.
    assert "Calibration: diagnostic baselines" in body
    assert len(select(body, "span.badge.diagnostic")) == 4
    assert len(select(body, "table#board tr[class='reference diagnostic']")) == 2
    event = AuditEvent.objects.get(action="baseline")
    assert {k: event.after["runs"][k] for k in ("Identity", "Noise")} == {
        "Identity": identity.id, "Noise": noise.id}
    assert event.after["skipped"] == {"Shuffled": "no public system has outputs to shuffle"}
    assert event.public and event.actor == staff


def test_baselines_in_progress_are_not_queued_twice(bench, staff):
    benchmark, _ = bench
    baselines_create(actor=staff, benchmark=benchmark)
    with pytest.raises(BaselineError, match="being scored already"):
        baselines_create(actor=staff, benchmark=benchmark)
    assert AuditEvent.objects.filter(action="baseline").count() == 1


def test_the_command_and_the_staff_button_queue_baselines(bench, staff, author, client):
    out = io.StringIO()
    call_command("score_baselines", "--benchmark", "mmae", "--actor", "staff", stdout=out)
    assert "Silence (run" in out.getvalue() and "Reversed (run" in out.getvalue()
    assert "Shuffled not queued: no public system has outputs to shuffle" in out.getvalue()
    with pytest.raises(CommandError, match="being scored already"):
        call_command("score_baselines", "--benchmark", "mmae")
    with pytest.raises(CommandError, match="no staff user 'author'"):
        call_command("score_baselines", "--benchmark", "mmae", "--actor", "author")
    client.login(username="author", password=CAST_PASSWORD)
    assert client.post("/staff/rescore/baselines/", {"benchmark": "mmae"}).status_code == 404
    client.force_login(staff)
    response = client.post("/staff/rescore/baselines/", {"benchmark": "mmae"}, follow=True)
    assert "being scored already" in response.content.decode()
    assert AuditEvent.objects.filter(action="baseline").count() == 1
