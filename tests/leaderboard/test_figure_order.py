"""One figure order everywhere: every kind declares its metrics with its ranking key first, in
the key's order, and the board, submission status, model, submission and compare pages list
the figures in that order."""

import re

import pytest

from scoring.kinds import KINDS, get_kind
from tests.conftest import CAST_PASSWORD

MMAE = get_kind("mmae")


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_declares_its_ranking_figures_first_in_the_keys_order(name):
    kind = KINDS[name]
    assert kind.metric_keys[:len(kind.ranking)] == kind.ranking


def test_mmae_lists_emr_ifr_cr():
    assert [m.label for m in MMAE.metrics] == ["EMR", "IFR", "CR"]


def _labels(html: str, start: str, end: str, pattern: str) -> list[str]:
    """The figure labels `pattern` finds between `start` and the next `end`."""
    part = html[html.index(start):]
    part = part[:part.index(end)]
    return [label for label in re.findall(pattern, part) if label in MMAE.metric_keys]


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
    assert _labels(html, 'id="board"', "</thead>", r'class="col-(\w+)') == ["EMR", "IFR", "CR"]


def test_the_status_page_lists_the_kinds_order(client, two, author):
    assert client.login(username=author.username, password=CAST_PASSWORD)
    html = client.get(f"/submissions/{two[0].pk}/").content.decode()
    assert _labels(html, 'id="standing"', "</section>",
                   r'<span class="label"[^>]*>(\w+)</span>') == ["EMR", "IFR", "CR"]


def test_the_model_page_lists_the_kinds_order(client, two):
    html = client.get(f"/m/{two[0].model_id}/").content.decode()
    assert _labels(html, 'id="submissions"', "</table>",
                   r'<span class="figure">(\w+) ') == ["EMR", "IFR", "CR"]
    assert _labels(html, 'id="slices"', "</thead>", r'<th class="num">(\w+)</th>') == \
        ["EMR", "IFR", "CR"]


def test_the_submission_page_lists_the_kinds_order(client, two):
    html = client.get(f"/s/{two[0].pk}/").content.decode()
    assert _labels(html, 'aria-label="overall figures"', "</section>",
                   r'<span class="label"[^>]*>(\w+)</span>') == ["EMR", "IFR", "CR"]
    assert _labels(html, 'id="slices"', "</thead>", r'<th class="num">(\w+)</th>') == \
        ["EMR", "IFR", "CR"]


def test_the_compare_page_lists_the_kinds_order(client, two):
    ids = f"{two[0].model_id},{two[1].model_id}"
    html = client.get(f"/b/mmae/compare/?models={ids}").content.decode()
    assert _labels(html, 'id="compare"', "</thead>", r'<th class="num[^"]*">(\w+)</th>') == \
        ["EMR", "IFR", "CR"] * 2
