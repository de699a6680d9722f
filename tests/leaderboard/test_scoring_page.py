"""How scoring works, for every kind; every judge named, the simulator where it answered."""

import csv
import io

import pytest
from django.utils.html import escape

from scoring.kinds import KINDS
from scoring.models import Benchmark, ScoringRun
from tests.conftest import judge_config
from tests.html import assert_in_html, one, select, texts


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_kind_explains_its_figures_its_judge_and_its_ranks(client, db, name):
    kind = KINDS[name]
    benchmark = Benchmark.objects.create(slug="b", kind=name, version=1, title="B",
                                         sha256="s", source_name="m.json", audio_root="",
                                         n_items=1, n_criteria=1)
    config = judge_config(["http://127.0.0.1:9"], kind=name, benchmark=benchmark)
    html = client.get("/b/b/scoring/").content.decode()
    terms = [e for e in one(html, "dl.definitions").children if not isinstance(e, str)]
    assert [e.tag for e in terms] == ["dt", "dd"] * (len(terms) // 2)
    defined = {dt.text: dd.text for dt, dd in zip(terms[::2], terms[1::2], strict=True)}
    for metric in kind.metrics:
        assert " ".join(metric.definition.split()) in defined[metric.label]
    titles = texts(html, "h2")
    for section in kind.how_scoring_works():
        assert section.title in titles
        assert all(escape(p) in html for p in section.paragraphs)
    assert config.name in html and "paired bootstrap" in html
    assert "Ranks and rank ranges" in html and escape(kind.ranking_text) in html


def test_every_board_links_its_scoring_page_and_defines_its_columns(client, board):
    benchmark, score_by_slices = board
    score_by_slices("A", (50.0, 50.0, 10.0))
    html = client.get("/b/mmae/").content.decode()
    assert select(html, 'a[href="/b/mmae/scoring/"]')
    # A definition a keyboard reaches: focusable, with its text.
    assert select(html, '#board th span.def[tabindex="0"][role=note]'
                        '[aria-label^="EMR: Exact-match rate"]')
    assert client.get("/b/nope/scoring/").status_code == 404


def test_a_simulated_row_names_the_judge_simulator_everywhere(client, board):
    benchmark, score_by_slices = board
    sim = score_by_slices("Sim", (50.0, 50.0, 10.0))
    ScoringRun.objects.filter(id=sim.current_run_id).update(simulated=True)
    real = score_by_slices("Real", (40.0, 40.0, 5.0))
    html = client.get("/b/mmae/").content.decode()
    assert select(html, "p.simulated-banner") and "(judge simulator)" in html
    config = real.current_run.judge_config.name
    assert_in_html(f'<span title="Qwen3-Omni-30B-A3B-Instruct">{config}</span>', html)
    rows = {r["model"]: r for r in client.get("/api/leaderboards/mmae/").json()["rows"]}
    assert rows["Sim"]["judge"] == "judge simulator" and rows["Sim"]["judge_config"] == config
    assert rows["Real"]["judge"] == "Qwen3-Omni-30B-A3B-Instruct"
    text = client.get("/api/leaderboards/mmae/?format=csv").content.decode()
    by_model = {r["model"]: r for r in csv.DictReader(io.StringIO(text))}
    assert by_model["Sim"]["judge"] == "judge simulator"
    page = client.get(f"/s/{sim.id}/").content.decode()
    assert "judged by judge simulator" in page
    model = client.get(f"/m/{sim.model_id}/").content.decode()
    assert "judge simulator" in model


def test_a_board_of_real_judgments_has_no_simulated_banner(client, board):
    benchmark, score_by_slices = board
    score_by_slices("Real", (40.0, 40.0, 5.0))
    assert "simulated-banner" not in client.get("/b/mmae/").content.decode()


def test_the_judge_figures_are_an_optional_column_and_in_the_api(client, board):
    from scoring.models import SliceResult

    benchmark, score_by_slices = board
    run = score_by_slices("A", (50.0, 50.0, 10.0)).current_run
    SliceResult.objects.filter(run=run, dimension="overall").update(
        values={"n": 4, "IFR": 50.0, "CR": 50.0, "EMR": 10.0, "agreement": 87.5, "judged": 8})
    header = one(client.get("/b/mmae/"), "table#board thead")
    assert "vote agreement" not in header.text and header.select("th.col-judge-figure") == []
    html = client.get("/b/mmae/?judge=on").content.decode()
    assert "vote agreement" in texts(html, "#board thead th.col-judge-figure")[0]
    assert_in_html('<td class="num">87.50</td>', html)
    assert client.get("/api/leaderboards/mmae/").json()["rows"][0]["agreement"] == 87.5
    page = client.get("/b/mmae/scoring/").content.decode()
    assert "87.50" in one(page, "table#judge-figures").text


def test_the_judge_figures_are_read_over_public_runs_alone(client, board, other_author):
    """A private run's figures and its finishing count nowhere public: with one public and
    one private submission, the scoring page's judge card says one run and the public run's
    vote agreement, as the API's judge card does."""
    from scoring.models import SliceResult

    benchmark, score_by_slices = board
    public = score_by_slices("Public", (50.0, 50.0, 10.0)).current_run
    private = score_by_slices("Private", (60.0, 60.0, 20.0), owner=other_author,
                              public=False).current_run
    for run, agreement in ((public, 84.0), (private, 90.0)):
        SliceResult.objects.filter(run=run, dimension="overall").update(values={
            "n": 4, "IFR": 50.0, "CR": 50.0, "EMR": 10.0, "agreement": agreement,
            "judged": 8})
    page = client.get("/b/mmae/scoring/").content.decode()
    card = one(page, "table#judge-figures")
    assert "84.00" in texts(card, "td.num") and "87.00" not in card.all_text
    assert "90.00" not in card.all_text
    from leaderboard.boards.selectors import judge_figures_by_config

    (config,) = judge_figures_by_config(benchmark)
    assert config["runs"] == 1 and config["values"]["agreement"] == 84.0
