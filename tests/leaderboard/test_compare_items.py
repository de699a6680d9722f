"""The items where two models differ (/b/<slug>/compare/items/): which, in which order, paged,
by slice and by winner, linked from the compare page, private outputs never shown, and
AIR-Bench's answers as text.

MMAE's runs are judged by votes given by hand and aggregated as the pipeline does
(votes_board); AIR-Bench's are scored by the judge simulator through scoring.runs."""

import pytest
from django.utils.html import escape

from leaderboard.boards import item_pages
from leaderboard.pages.compare import pairwise
from scoring.kinds import get_kind
from scoring.kinds.airbench import rules as airbench
from tests.html import assert_in_html, one, select, texts
from tests.leaderboard.conftest import CHAT_RESPONSES

URL = "/b/mmae/compare/items/"


def everything(position, rubric):
    return [True, True, True]


def stumbles(position, rubric):
    """Fails rubric 0 of every even sample and rubric 1 of sample 0 as well; elsewhere one
    round of three disagrees, which changes no verdict."""
    if position % 2 == 0 and (rubric == 0 or (position == 0 and rubric == 1)):
        return [False, False, True]
    return [True, True, False] if rubric == 2 else [True, True, True]


def listed(html: str) -> list[str]:
    return [item.get("data-item") for item in select(html, "article[data-item]")]


@pytest.fixture
def pair(votes_board):
    benchmark, score_by_votes, items = votes_board
    a = score_by_votes("Steady", everything)
    b = score_by_votes("Stumbler", stumbles, missing=(11,))
    return benchmark, a, b, [i.key for i in items]


def get(client, *models, **params):
    return client.get(URL, {"models": [m.model_id for m in models], **params})


def test_the_items_where_two_models_differ_come_most_different_first(client, pair):
    _, a, b, keys = pair
    response = get(client, a, b)
    assert response.status_code == 200
    html = response.content.decode()
    # sample 0: EM and two rubrics apart; the other even samples EM and one; sample 11 has
    # no output from B (every rubric 0); the odd ones agree (a disagreeing round is no
    # difference when the verdict is the same)
    assert listed(html) == [keys[11], keys[0], keys[2], keys[4], keys[6], keys[8], keys[10]]
    count = one(html, "p.items-count")
    assert count.one("strong").text == "7" and count.text.startswith("7 samples where they differ")
    first = one(html, f'article[data-item="{keys[0]}"]')
    assert first.select("td[class='verdict fail']") and first.select("td[class='verdict pass']")
    assert "Stumbler round 2" in texts(first, "td.verdict details ol.votes small.reason")
    for audio in (f"/s/{a.pk}/audio/{keys[0]}/output", f"/s/{b.pk}/audio/{keys[0]}/output",
                  f"/s/{a.pk}/audio/{keys[0]}/input1"):
        assert first.select(f'audio[src="{audio}"]')
    assert first.select(f'a[href="/b/mmae/i/{keys[0]}/"]')  # the item across systems
    # B's missing output of sample 11
    missing = one(html, f'article[data-item="{keys[11]}"]')
    assert "missing (scores 0): no prediction" in texts(missing, "figure.output span.missing")


def test_the_order_is_the_kinds_difference(pair):
    benchmark, a, b, keys = pair
    ids = item_pages.differing(get_kind("mmae"), a, b)
    assert [benchmark.items.get(id=i).key for i in ids][1:] == keys[0:11:2]


def test_pages_of_differing_items(client, pair, monkeypatch):
    _, a, b, keys = pair
    monkeypatch.setattr(item_pages, "PAGE_SIZE", 3)
    first = get(client, a, b).content.decode()
    assert listed(first) == [keys[11], keys[0], keys[2]]
    assert "page 1 of 3" in texts(first, "nav.pager span")
    assert select(first, "nav.pager a[rel=next]")
    assert listed(get(client, a, b, page=3).content.decode()) == [keys[10]]
    assert get(client, a, b, page=4).status_code == 404


def test_a_slice_keeps_its_items_only(client, pair, votes_board):
    benchmark, a, b, keys = pair
    single = [i.key for i in benchmark.items.filter(buckets__dimension="complexity",
                                                    buckets__bucket="single")]
    html = get(client, a, b, dimension="complexity", bucket="single").content.decode()
    # the even samples are single
    assert listed(html) == [k for k in (keys[0], keys[2], keys[4], keys[6], keys[8], keys[10])
                            if k in single] and listed(html)
    assert select(html, f'a[href="/b/mmae/i/{keys[0]}/?dimension=complexity&bucket=single"]')


@pytest.mark.slow
def test_only_the_items_one_wins(client, pair):
    _, a, b, keys = pair
    # A wins EM on every item listed; B on none
    assert listed(get(client, a, b, by="passed", winner="a").content.decode()) == \
        [keys[11], keys[0], keys[2], keys[4], keys[6], keys[8], keys[10]]
    assert listed(get(client, a, b, by="passed", winner="b").content.decode()) == []
    assert listed(get(client, b, a, by="score", winner="b").content.decode())[0] == keys[11]


def test_the_compare_pages_counts_link_to_their_items(client, pair):
    _, a, b, _ = pair
    html = client.get("/b/mmae/compare/", {"models": [a.model_id, b.model_id]}).content.decode()
    counts = pairwise([a, b])[0]
    link = escape(f"{URL}?models={a.model_id}&models={b.model_id}&by=passed&winner=a")
    assert_in_html(f'<a href="{link}">{counts["EM"]["wins"]}</a>', html)
    followed = client.get(f"{URL}?models={a.model_id}&models={b.model_id}&by=passed&winner=a")
    assert len(listed(followed.content.decode())) == counts["EM"]["wins"] == 7


@pytest.mark.parametrize("params, message", [
    ({"models": "1"}, "give exactly two model ids"),
    ({"models": "x,y"}, "give exactly two model ids"),
    ({"dimension": "colour"}, "Select a valid choice"),
    ({"dimension": "complexity", "bucket": "nowhere"}, "is not a bucket of complexity"),
    ({"by": "passed"}, "give both `by` and `winner`"),
    ({"by": "speed", "winner": "a"}, "Select a valid choice"),
    ({"page": "0"}, "page: Ensure this value is greater than or equal to 1"),
])
def test_bad_parameters_are_a_400_naming_them(client, pair, params, message):
    _, a, b, _ = pair
    response = client.get(URL, {"models": f"{a.model_id},{b.model_id}", **params})
    assert response.status_code == 400
    assert escape(message) in response.content.decode()


def test_a_private_submission_is_never_compared(client, pair, votes_board, other_author):
    _, score_by_votes, _ = votes_board
    benchmark, a, _, keys = pair
    hidden = score_by_votes("Hidden", stumbles, public=False, owner=other_author)
    response = get(client, a, hidden)
    assert response.status_code == 400
    html = response.content.decode()
    assert f"model {hidden.model_id} has no public scored submission" in html
    assert f"/s/{hidden.pk}/" not in html and "Hidden round" not in html and not listed(html)


def test_anonymous_visitors_share_one_response_per_state(client, pair, django_assert_num_queries):
    _, a, b, _ = pair
    first = get(client, a, b)
    with django_assert_num_queries(1):  # the benchmark's row, for its state
        again = get(client, a, b)
    assert again.content == first.content and again["ETag"] == first["ETag"]


# --- AIR-Bench: answers as text ------------------------------------------------------------

def test_airbench_answers_are_shown_as_text_with_the_judges_reading(client, chat_pair):
    benchmark, (talker, mute) = chat_pair
    html = client.get("/b/air-bench-chat/compare/items/",
                      {"models": [talker.model_id, mute.model_id]}).content.decode()
    shown = listed(html)
    counts = pairwise([talker, mute])[0]["rubric"]
    assert len(shown) == counts["wins"] + counts["losses"] > 0
    item = shown[0]
    block = one(html, f'article[data-item="{item}"]').text
    assert f"{CHAT_RESPONSES['Talker']} ({item})" in block and f"Noise. ({item})" in block
    assert "the judge's reading" in block and "pass A:" in block and "for the model" in block
    assert f"The reference answer {item}." in block


def test_the_difference_of_two_results_by_kind():
    def columns(passed, score, rubrics=()):
        return {"missing": False, "passed": passed, "score": score,
                "values": {"rubric_scores": list(rubrics)}}

    foundation = get_kind(airbench.FOUNDATION)
    assert foundation.item_difference(columns(True, 1.0), columns(False, 0.0)) == (1.0, 1.0)
    assert foundation.item_difference(columns(True, 1.0), columns(True, 1.0)) == (0.0, 0.0)
    chat = get_kind(airbench.CHAT)  # no pass or fail: the scores alone
    assert chat.item_difference(columns(None, 7.0), columns(None, 4.5)) == (0.0, 2.5)
    assert chat.item_difference(columns(None, 7.0), columns(None, None)) == (0.0, 0.0)
    mmae = get_kind("mmae")  # exact match, then rubrics apart (unknowns are no difference)
    assert mmae.item_difference(columns(True, 1.0, [1, 1, 1]),
                                columns(False, 0.5, [1, 0, None])) == (1.0, 1.0, 0.5)
