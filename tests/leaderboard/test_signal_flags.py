"""The board flags a model whose outputs clip (its outputs' signal cards, read with its row),
and filters such rows out on demand; the flag changes with the board when outputs are
measured after the row is shown."""

import pytest
from django.core.management import call_command

from scoring.models import ScoringRun
from submissions.models import OutputSignal
from submissions.signals import measure_output_signals
from tests.html import select, texts


def signal(submission, item, clipped_share):
    return OutputSignal.objects.create(
        submission=submission, item=item, lufs=-20.0, true_peak_dbtp=-1.0,
        clipped_share=clipped_share, silent_share=0.0, seconds=1.0, duration_ratio=1.0,
        sample_rate=16000, channels=1)


@pytest.fixture
def flagged(board):
    benchmark, score_by_slices = board
    clean = score_by_slices("Clean", (60.0, 70.0, 20.0))
    clipping = score_by_slices("Loud", (50.0, 60.0, 10.0))
    signal(clean, "a", 0.0)
    signal(clean, "b", 0.0005)  # under the 0.1% of samples a clip is counted from
    for item, share in (("a", 0.2), ("b", 0.0), ("c", 0.01), ("d", 0.0)):
        signal(clipping, item, share)
    return benchmark, clean, clipping


def test_the_board_says_which_models_outputs_clip_and_hides_them_on_demand(client, flagged):
    benchmark, clean, clipping = flagged
    # The rows were shown before the outputs were measured: the measuring task changes the
    # board, as it does once a worker measures a shown submission's outputs.
    from scoring.boards import board_changed
    board_changed(benchmark.id)
    html = client.get(f"/b/{benchmark.slug}/").content.decode()
    assert texts(html, "#board .badge.clips") == ["50% of outputs clip"]
    api = client.get(f"/api/leaderboards/{benchmark.slug}/").json()
    shares = {r["model"]: r["clipping_share"] for r in api["rows"]}
    assert shares == {"Clean": 0.0, "Loud": 0.5}
    hidden = client.get(f"/b/{benchmark.slug}/?no_clipping=on").content.decode()
    assert [name for name in texts(hidden, "#board td.model a.name")] == ["Clean"]
    assert select(hidden, 'input[name="no_clipping"][checked]')
    filtered = client.get(f"/api/leaderboards/{benchmark.slug}/?no_clipping=on").json()
    assert [r["model"] for r in filtered["rows"]] == ["Clean"]


def test_measuring_a_shown_submission_changes_its_board(flagged, monkeypatch):
    benchmark, clean, _ = flagged
    changed = []
    monkeypatch.setattr("submissions.signals.board_changed", changed.append)
    monkeypatch.setattr("submissions.signals.signals_measure", lambda submission: 2)
    measure_output_signals.run(clean)
    assert changed == [benchmark.id]


def test_the_command_queues_submissions_not_all_measured(flagged, monkeypatch):
    benchmark, clean, clipping = flagged
    ScoringRun.objects.filter(pk=clean.current_run_id).update(outputs={"a": "a.wav",
                                                                       "b": "b.wav"})
    ScoringRun.objects.filter(pk=clipping.current_run_id).update(
        outputs={k: f"{k}.wav" for k in "abcde"})  # one of five not measured
    queued = []
    monkeypatch.setattr(measure_output_signals, "delay", queued.append)
    call_command("measure_signals")
    assert queued == [clipping.pk]
