"""One figure order everywhere: every kind declares its metrics with its ranking key first, in
the key's order, and the board, submission status, model, submission and compare pages list
the figures in that order."""

import pytest

from scoring.kinds import KINDS, get_kind
from tests.conftest import CAST_PASSWORD
from tests.html import select, texts

MMAE = get_kind("mmae")


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_declares_its_ranking_figures_first_in_the_keys_order(name):
    kind = KINDS[name]
    assert kind.metric_keys[:len(kind.ranking)] == kind.ranking


def test_mmae_lists_emr_ifr_cr():
    assert [m.label for m in MMAE.metrics] == ["EMR", "IFR", "CR"]


def _labels(words) -> list[str]:
    """The figure labels among `words`, in their order."""
    return [word for word in words if word in MMAE.metric_keys]


@pytest.fixture
def two(board):
    benchmark, score_by_slices = board
    first = score_by_slices("Alpha", (50.0, 60.0, 30.0),
                            slices={("modality", "sound"): (40.0, 50.0, 20.0)})
    second = score_by_slices("Beta", (40.0, 70.0, 20.0),
                             slices={("modality", "sound"): (30.0, 60.0, 10.0)})
    return first, second


def test_the_board_lists_the_kinds_order(client, two):
    html = client.get("/b/mmae/").content.decode()
    columns = [th.get("class").split()[0] for th in select(html, "#board thead th")]
    assert _labels(c.removeprefix("col-") for c in columns) == ["EMR", "IFR", "CR"]


def test_the_status_page_lists_the_kinds_order(client, two, author):
    assert client.login(username=author.username, password=CAST_PASSWORD)
    html = client.get(f"/submissions/{two[0].pk}/").content.decode()
    assert _labels(texts(html, "#standing span.label")) == ["EMR", "IFR", "CR"]


def test_the_model_page_lists_the_kinds_order(client, two):
    html = client.get(f"/m/{two[0].model_id}/").content.decode()
    assert _labels(figure.text.split()[0] for figure in select(html, "#submissions span.figure")) \
        == ["EMR", "IFR", "CR"]
    assert _labels(texts(html, "#slices thead th[class=num]")) == ["EMR", "IFR", "CR"]


def test_the_submission_page_lists_the_kinds_order(client, two):
    html = client.get(f"/s/{two[0].pk}/").content.decode()
    assert _labels(texts(html, '[aria-label="overall figures"] span.label')) == \
        ["EMR", "IFR", "CR"]
    assert _labels(texts(html, "#slices thead th[class=num]")) == ["EMR", "IFR", "CR"]


def test_the_compare_page_lists_the_kinds_order(client, two):
    ids = f"{two[0].model_id},{two[1].model_id}"
    html = client.get(f"/b/mmae/compare/?models={ids}").content.decode()
    assert _labels(texts(html, "#compare thead th[class^=num]")) == ["EMR", "IFR", "CR"] * 2
