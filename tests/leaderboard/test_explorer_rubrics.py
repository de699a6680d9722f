"""The explorer's light pages: a sample's rubric table is fetched when opened (a partial behind
the same access check as the page), pages are gzipped where they hold no secret, each
encoding with its own ETag.

The data: `light_explorer` (tests/leaderboard/conftest.py), 40 MMAE samples with the real
set's rubrics per sample, judged for a public and a private submission.
"""

import gzip
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scoring.models import Answer, Criterion
from tests.html import select, texts

# `slow`: its shared set-up (light_explorer: 40 samples, each rubric voted thrice) takes 0.8 s
pytestmark = pytest.mark.slow

GZIP = {"HTTP_ACCEPT_ENCODING": "gzip, deflate, br"}
FRAGMENT = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def public(light_explorer, db):
    return light_explorer["public"]


@pytest.fixture
def private(light_explorer, db):
    return light_explorer["private"]


@pytest.fixture
def keys(light_explorer):
    """The benchmark's item keys, in order."""
    return light_explorer["keys"]


def rubrics_url(submission, key) -> str:
    return f"/s/{submission.pk}/samples/{key}/rubrics/"


def votes(html: str) -> list:
    """The votes shown: elements of class `vote ...`."""
    return select(html, "[class^='vote ']")


def body(response) -> str:
    data = response.content
    if response.get("Content-Encoding") == "gzip":
        data = gzip.decompress(data)
    return data.decode()


# --- the page carries tallies, the partial the votes ----------------------------------


@pytest.mark.slow
def test_a_page_of_20_samples_is_under_100_kb_gzipped_with_real_rubric_counts(client, public,
                                                                             keys):
    page = client.get(f"/s/{public.pk}/", **GZIP)
    assert page.status_code == 200 and page["Content-Encoding"] == "gzip"
    html = body(page)
    assert len(select(html, "article[class=sample]")) == 20
    assert len(page.content) < 100_000, len(page.content)
    # What the page held before its tables were fetched on opening: the same samples with
    # every table in them, far over the target even gzipped.
    tables = [body(client.get(rubrics_url(public, k), **FRAGMENT)) for k in keys[:20]]
    assert sum(len(votes(t)) for t in tables) == 3 * Criterion.objects.filter(
        item__key__in=keys[:20]).count()
    assert len(html) + sum(map(len, tables)) > 3 * len(html)
    assert votes(html) == []  # no vote is in the page itself


def test_each_samples_summary_tallies_its_rubrics_and_links_its_table(client, public, keys):
    html = client.get(f"/s/{public.pk}/?q={keys[3]}").content.decode()
    criteria = Criterion.objects.filter(item__key=keys[3]).count()
    url = rubrics_url(public, keys[3])
    (details,) = select(html, f'details[class=rubrics][data-rubrics="{url}"]')
    link = details.one("summary > a[class=rubrics-link]")
    assert link.get("href") == url and link.parent.children[0] is link
    assert re.match(rf"{criteria} rubrics: \d+ passed", link.text)
    assert select(html, 'script[src*="js/rubrics.js"]')


def test_the_partial_holds_every_rubric_with_its_three_votes(client, public, keys):
    html = body(client.get(rubrics_url(public, keys[0]), **FRAGMENT))
    criteria = list(Criterion.objects.filter(item__key=keys[0]).order_by("index"))
    assert [e.get("data-rubric") for e in select(html, "[data-rubric]")] == \
        [str(c.index) for c in criteria]
    assert [e.get("data-vote") for e in select(html, "[data-vote]")] == \
        ["0", "1", "2"] * len(criteria)
    answer = Answer.objects.filter(run=public.current_run, criterion=criteria[0]).first()
    assert answer.reason in html
    assert select(html, "html") == []  # a fragment, for the <details>


def test_a_question_naming_a_slice_reads_the_notation_out_beneath_it(client, public, keys):
    """As the judge's system prompt reads `<audio output[1s:2.5s]>` to the judge; a bare
    reference needs no note."""
    first, second = Criterion.objects.filter(item__key=keys[0]).order_by("index")[:2]
    Criterion.objects.filter(pk=first.pk).update(
        question="Is <audio output[1s:2.5s]> louder than <audio input1[-2s:]>?")
    Criterion.objects.filter(pk=second.pk).update(question="Is <audio output> clean?")
    html = body(client.get(rubrics_url(public, keys[0]), **FRAGMENT))
    assert texts(html, f'[data-rubric="{first.index}"] .reading') == [
        "<audio output[1s:2.5s]>: output from 1 s to 2.5 s",
        "<audio input1[-2s:]>: the last 2 s of input1"]
    assert select(html, f'[data-rubric="{second.index}"] .reading') == []


def test_without_scripts_the_partial_is_a_page_of_its_own(client, public, keys):
    html = client.get(rubrics_url(public, keys[0])).content.decode()
    assert select(html, "html") and "every judge answer" in html
    assert select(html, f'a[href="/s/{public.pk}/?q={keys[0]}#sample-{keys[0]}"]')
    assert len(select(html, "[data-vote]")) == 3 * Criterion.objects.filter(
        item__key=keys[0]).count()


def test_an_unknown_item_is_a_404(client, public):
    assert client.get(rubrics_url(public, "no-such-item"), **FRAGMENT).status_code == 404


def test_the_partial_answers_get_and_head_only(client, public, keys):
    assert client.post(rubrics_url(public, keys[0])).status_code == 405
    assert client.head(rubrics_url(public, keys[0])).status_code == 200


# --- who sees the partial --------------------------------------------------------------


@pytest.mark.parametrize("fragment", [True, False])
def test_a_private_submissions_partial_is_its_author_and_staffs_only(
        client, private, keys, author, other_author, staff, fragment):
    url, headers = rubrics_url(private, keys[0]), FRAGMENT if fragment else {}
    assert client.get(url, **headers).status_code == 404  # anonymous
    client.force_login(other_author)
    assert client.get(url, **headers).status_code == 404
    for user in (author, staff):
        client.force_login(user)
        response = client.get(url, **headers)
        assert response.status_code == 200 and "data-vote" in response.content.decode()


def test_a_published_submissions_partial_is_anyones(client, public, keys, other_author):
    assert client.get(rubrics_url(public, keys[0]), **FRAGMENT).status_code == 200
    client.force_login(other_author)
    assert client.get(rubrics_url(public, keys[0]), **FRAGMENT).status_code == 200


def test_a_partial_of_an_unknown_submission_is_a_404(client, db):
    assert client.get("/s/999999/samples/x/rubrics/", **FRAGMENT).status_code == 404


def test_a_page_reads_no_answer_rows_but_counts_them(client, public):
    with CaptureQueriesContext(connection) as queries:
        assert client.get(f"/s/{public.pk}/samples/").status_code == 200
    answers = [q["sql"] for q in queries.captured_queries if "scoring_answer" in q["sql"]]
    assert len(answers) == 1 and "COUNT(" in answers[0]  # counted, never read
