"""One item across systems (/b/<slug>/i/<key>/): every public representative's output of it in
board order with its figures and verdicts, previous and next within a slice, links from the
explorer, private outputs never shown, bad parameters a 400, AIR-Bench's answers as text."""

import pytest
from django.utils.html import escape

from leaderboard.boards import item_pages, selectors
from tests.html import parse, select, texts
from tests.leaderboard.conftest import CHAT_RESPONSES


def everything(position, rubric):
    return [True, True, True]


def some(position, rubric):
    return [rubric != 0] * 3


def nothing(position, rubric):
    return [False, False, False]


def sides(html: str) -> list[int]:
    return [int(side.get("data-side")) for side in select(html, "section[data-side]")]


def rel(html: str, which: str) -> list[str]:
    """Where the page's `rel=prev` or `rel=next` links go."""
    return [link.get("href") for link in select(html, f"[rel={which}]")]


@pytest.fixture
def voted_trio(votes_board):
    benchmark, score_by_votes, items = votes_board
    systems = [score_by_votes("Middling", some), score_by_votes("Perfect", everything),
               score_by_votes("Hopeless", nothing, missing=(3,))]
    return benchmark, systems, items


def test_every_representative_in_board_order(client, voted_trio):
    benchmark, (middling, perfect, hopeless), items = voted_trio
    key = items[3].key
    response = client.get(f"/b/mmae/i/{key}/")
    assert response.status_code == 200
    html = response.content.decode()
    board = [r["model_id"] for r in selectors.leaderboard_rows(benchmark=benchmark)]
    assert sides(html) == board == [perfect.model_id, middling.model_id, hopeless.model_id]
    for submission in (perfect, middling):
        output = f"/s/{submission.pk}/audio/{key}/output"
        assert select(html, f'section[data-side] audio[src="{output}"]')
    assert f"/s/{hopeless.pk}/audio/{key}/output" not in html
    assert "missing (scores 0): no prediction" in texts(html, "section[data-side] .missing")
    assert select(html, f'.players audio[src="/s/{perfect.pk}/audio/{key}/input1"]')
    reasons = texts(html, "td.verdict small.reason")  # every vote
    assert "Middling round 0" in reasons and "Perfect round 2" in reasons
    rubrics = len(items[3].criteria.all())
    assert len(select(html, "table.verdicts tr[data-rubric]")) == rubrics
    # Perfect's, Middling's
    assert len(select(html, "td[class='verdict pass']")) == rubrics + rubrics - 1
    assert len(select(html, "span[class='em pass']")) == 1


@pytest.mark.slow
def test_a_question_naming_a_slice_reads_the_notation_out_beside_the_verdicts(client, voted_trio):
    benchmark, systems, items = voted_trio
    criterion = items[3].criteria.order_by("index").first()
    criterion.question = "Is <audio output[:-0.5s]> unchanged?"
    criterion.save(update_fields=["question"])
    html = client.get(f"/b/mmae/i/{items[3].key}/").content.decode()
    assert texts(html, f'table.verdicts tr[data-rubric="{criterion.index}"] .reading') == [
        "<audio output[:-0.5s]>: output from its start to 0.5 s before its end"]


def test_a_private_submission_never_appears(client, voted_trio, votes_board, other_author, author):
    _, score_by_votes, items = votes_board
    hidden = score_by_votes("Hidden", everything, public=False, owner=other_author)
    for user in (None, author):
        client.logout()
        if user:
            client.force_login(user)
        html = client.get(f"/b/mmae/i/{items[0].key}/").content.decode()
        assert hidden.model_id not in sides(html) and len(sides(html)) == 3
        assert f"/s/{hidden.pk}/" not in html and "Hidden" not in html


@pytest.mark.slow
def test_previous_and_next_stay_within_the_slice(client, voted_trio):
    _, _, items = voted_trio
    keys = [i.key for i in items]
    html = client.get(f"/b/mmae/i/{keys[0]}/").content.decode()
    assert (rel(html, "prev"), rel(html, "next")) == ([], [f"/b/mmae/i/{keys[1]}/"])
    # the even samples are single
    html = client.get(f"/b/mmae/i/{keys[2]}/?dimension=complexity&bucket=single").content.decode()
    query = "?dimension=complexity&bucket=single"
    assert rel(html, "prev") == [f"/b/mmae/i/{keys[0]}/{query}"]
    assert rel(html, "next") == [f"/b/mmae/i/{keys[4]}/{query}"]
    assert "in complexity: single" in html
    html = client.get(f"/b/mmae/i/{keys[11]}/").content.decode()
    assert (rel(html, "prev"), rel(html, "next")) == ([f"/b/mmae/i/{keys[10]}/"], [])


def test_the_explorer_links_each_sample_to_its_item_page(client, voted_trio):
    _, (middling, _, _), items = voted_trio
    html = parse(client.get(f"/s/{middling.pk}/samples/"))
    for item in items:
        assert html.select(f'a[href="/b/mmae/i/{item.key}/"]')
    html = client.get(f"/s/{middling.pk}/samples/?dimension=complexity&bucket=single")
    link = f"/b/mmae/i/{items[0].key}/?dimension=complexity&bucket=single"
    assert select(html, f'a[href="{link}"]')


def test_systems_come_a_page_at_a_time(client, voted_trio, monkeypatch):
    benchmark, _, items = voted_trio
    monkeypatch.setattr(item_pages, "SYSTEMS_PER_PAGE", 2)
    board = [r["model_id"] for r in selectors.leaderboard_rows(benchmark=benchmark)]
    url = f"/b/mmae/i/{items[0].key}/"
    assert sides(client.get(url).content.decode()) == board[:2]
    assert sides(client.get(url, {"page": 2}).content.decode()) == board[2:]
    assert client.get(url, {"page": 3}).status_code == 404


def test_an_unknown_item_is_a_404(client, voted_trio):
    assert client.get("/b/mmae/i/nothing-here/").status_code == 404
    assert client.get("/b/nowhere/i/x/").status_code == 404


@pytest.mark.parametrize("params, message", [
    ({"dimension": "colour"}, "Select a valid choice"),
    ({"dimension": "complexity", "bucket": "nowhere"}, "is not a bucket of complexity"),
    ({"bucket": "single"}, "needs a dimension"),
    ({"page": "x"}, "Enter a whole number"),
])
def test_bad_parameters_are_a_400_naming_them(client, voted_trio, params, message):
    _, _, items = voted_trio
    response = client.get(f"/b/mmae/i/{items[0].key}/", params)
    assert response.status_code == 400
    assert escape(message) in response.content.decode()


def test_anonymous_visitors_share_one_response_per_state(client, voted_trio,
                                                         django_assert_num_queries):
    _, _, items = voted_trio
    first = client.get(f"/b/mmae/i/{items[0].key}/")
    with django_assert_num_queries(1):  # the benchmark's row, for its state
        again = client.get(f"/b/mmae/i/{items[0].key}/")
    assert again.content == first.content


def test_airbench_answers_are_text_read_by_the_judge(client, chat_pair):
    _, (talker, mute) = chat_pair
    html = client.get("/b/air-bench-chat/i/3/").content.decode()  # a key that reads as a number
    assert sorted(sides(html)) == sorted([talker.model_id, mute.model_id])
    assert f"{CHAT_RESPONSES['Talker']} (3)" in html and "Noise. (3)" in html
    assert "The reference answer 3." in html
    assert html.count("pass A:") == 2 and html.count("pass B:") == 2


def test_a_page_of_systems_reads_its_window_not_every_representative(client, voted_trio,
                                                                    monkeypatch):
    """Each page of systems is a window of the board's order with its rows' submissions
    (a first visit at 10,000 submissions read every representative for a page of 50), in
    the order and with the ranks the board gives; a page past the last is a 404."""
    from leaderboard.boards import state

    benchmark, (middling, perfect, hopeless), items = voted_trio
    monkeypatch.setattr(item_pages, "SYSTEMS_PER_PAGE", 2)
    monkeypatch.setattr(state, "_read_representatives",
                        lambda benchmark: pytest.fail("every representative read"))
    monkeypatch.setattr(selectors, "_ranked", lambda *a: pytest.fail("ranked in Python"))
    key = items[3].key
    first = client.get(f"/b/mmae/i/{key}/").content.decode()
    second = client.get(f"/b/mmae/i/{key}/?page=2").content.decode()
    assert sides(first) == [perfect.model_id, middling.model_id]
    assert sides(second) == [hopeless.model_id]
    assert client.get(f"/b/mmae/i/{key}/?page=3").status_code == 404
