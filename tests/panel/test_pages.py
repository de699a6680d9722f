"""The panel's page and the judge card page: who sees what, and pages of other kinds."""

import pytest
from allauth.account.models import EmailAddress

from tests.html import parse


def test_the_panel_page_asks_a_visitor_to_sign_in(client, panel_board, author):
    panel_board.score_by_criteria("Echo", author)
    page = client.get("/b/mmae/panel/").content.decode()
    assert "Sign in to rate" in page and "panel.js" not in page


def test_the_panel_page_asks_for_a_confirmed_address(client, panel_board, author, raters):
    rater, = raters(1)
    EmailAddress.objects.filter(user=rater).update(verified=False)
    client.force_login(rater)
    page = client.get("/b/mmae/panel/").content.decode()
    assert "Confirm your email address" in page and "panel.js" not in page


def test_the_panel_page_loads_its_script_for_a_rater(client, panel_board, author, raters):
    rater, = raters(1)
    client.force_login(rater)
    page = parse(client.get("/b/mmae/panel/"))
    assert page.select('script[src="/static/js/panel.js"]')
    assert page.select('[data-next="/api/panel/mmae/next/"]')
    assert [s for s in page.select("script") if not s.attrs] == []  # no inline script (CSP)


def test_unknown_boards_are_404(client, db):
    assert client.get("/b/nope/judge/").status_code == 404
    assert client.get("/b/nope/panel/").status_code == 404
    assert client.get("/api/leaderboards/nope/judge/").status_code == 404


def test_the_card_of_a_board_without_answers_says_so(client, panel_board, author):
    panel_board.score_by_criteria("Echo", author)
    card = client.get("/api/leaderboards/mmae/judge/").json()
    assert card["panel"]["open"] and card["panel"]["answers"] == 0
    assert card["configs"][0]["human"]["rubrics"] == 0
    assert "no rubric has two answers" in client.get("/b/mmae/judge/").content.decode()


def test_an_airbench_chat_card_shows_the_position_bias_beside_its_panel(client, db, author):
    from scoring.kinds.airbench.rules import CHAT
    from scoring.models import Benchmark, ScoringRun, SliceResult
    from tests.conftest import judge_config

    benchmark = Benchmark.objects.create(
        slug="air-bench-chat", kind=CHAT, version=1, title="AIR-Bench chat", sha256="c" * 64,
        source_name="Chat_meta.json", audio_root="", n_items=6, n_criteria=6)
    config = judge_config(["http://127.0.0.1:9"], kind=CHAT, benchmark=benchmark)
    from submissions.models import ModelEntry, Submission

    for name, bias, judged in (("A", 0.5, 6), ("B", -0.1, 4)):
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root="", status="finished",
            judge_model=config.judge_model, prompt_sha256=config.prompt_sha256, rounds=2,
            max_attempts=5)
        SliceResult.objects.create(run=run, dimension="overall", bucket="", n=6,
                                   values={"position_bias": bias, "judged": judged})
        # Published: the card reads public runs alone (scoring.visibility).
        model = ModelEntry.objects.create(owner=author, name=name)
        Submission.objects.create(owner=author, model=model, benchmark=benchmark, public=True,
                                  status="queued", current_run=run).runs.add(run)
    card = client.get("/api/leaderboards/air-bench-chat/judge/").json()
    only, = card["configs"]
    assert only["position_bias"] == pytest.approx(0.26)  # (0.5 x 6 - 0.1 x 4) / 10
    assert card["panel"]["open"] and only["human"]["rubrics"] == 0  # answered in test_text_panel
    assert "+0.26" in client.get("/b/air-bench-chat/judge/").content.decode()
    client.force_login(author)
    # The author's own submissions only: nothing to rate.
    assert client.get("/api/panel/air-bench-chat/next/").status_code == 204


def test_a_kind_without_a_panel_has_none(client, db, author):
    from scoring.kinds.airbench.rules import FOUNDATION
    from scoring.models import Benchmark

    Benchmark.objects.create(
        slug="air-bench-foundation", kind=FOUNDATION, version=1, title="AIR-Bench foundation",
        sha256="f" * 64, source_name="Foundation_meta.json", audio_root="", n_items=6,
        n_criteria=6)
    card = client.get("/api/leaderboards/air-bench-foundation/judge/").json()
    assert not card["panel"]["open"] and card["configs"] == []
    client.force_login(author)
    assert client.get("/api/panel/air-bench-foundation/next/").status_code == 404
    assert client.get("/api/panel/air-bench-foundation/items/x/").status_code == 404
    page = client.get("/b/air-bench-foundation/panel/").content.decode()
    assert "has no listening panel" in page and "panel.js" not in page
