"""Systems of the judge's own model family (judge.families): declared by their authors at
upload and on the model page, marked on every page, filtered on the board and in the API."""

import pytest

from judge.families import OTHER, family_of, same_family
from tests.html import one, select


@pytest.mark.parametrize("model, family", [
    ("Qwen/Qwen3-Omni-30B-A3B-Instruct", "qwen"), ("meta-llama/Llama-3.1-8B", "llama"),
    ("google/gemma-3n-E4B", "gemma"), ("mistralai/Voxtral-Mini-3B", "mistral"),
    ("gpt-4o-audio-preview", "gpt"), ("judge simulator", OTHER), ("", OTHER)])
def test_a_judge_models_family_is_read_from_its_name(model, family):
    assert family_of(model) == family


def test_only_a_declared_family_matches_the_judges():
    assert same_family("qwen", "Qwen3-Omni-30B-A3B-Instruct")
    assert not same_family("llama", "Qwen3-Omni-30B-A3B-Instruct")
    assert not same_family("", "Qwen3-Omni-30B-A3B-Instruct")  # not declared
    assert not same_family(OTHER, "some-other-judge")  # "none / other" is no family


@pytest.fixture
def family_board(board):
    benchmark, score_by_slices = board
    score_by_slices("Qwen Editor", (50.0, 60.0, 30.0), base_family="qwen")
    score_by_slices("Llama Editor", (40.0, 70.0, 20.0), base_family="llama")
    score_by_slices("Plain Editor", (30.0, 50.0, 10.0))
    return benchmark


def names(html):
    return [e.text for e in select(html, "td.model a.name bdi")]


def test_the_board_marks_the_judges_family_and_filters_it(client, family_board):
    html = client.get("/b/mmae/").content.decode()
    marked = [row for row in select(html, "tbody tr") if row.select("span.badge.family")]
    assert [one(row, "a.name bdi").text for row in marked] == ["Qwen Editor"]
    assert names(client.get("/b/mmae/?judge_family=exclude").content.decode()) == [
        "Llama Editor", "Plain Editor"]
    assert names(client.get("/b/mmae/?judge_family=only").content.decode()) == ["Qwen Editor"]
    rows = client.get("/api/leaderboards/mmae/?judge_family=exclude").json()["rows"]
    assert [(r["model"], r["base_family"], r["judge_family"]) for r in rows] == [
        ("Llama Editor", "llama", False), ("Plain Editor", "", False)]
    assert client.get("/b/mmae/?judge_family=some").status_code == 400


def test_the_owner_declares_the_family_on_the_model_page_and_every_page_follows(
        client, family_board, author, other_author):
    plain = family_board.submissions.get(model__name="Plain Editor")
    page = client.get(f"/m/{plain.model_id}/").content.decode()
    assert one(page, "#base-family").text.strip() == "not declared"
    assert not select(page, "form.family-form")  # a visitor cannot change it

    client.force_login(other_author)  # not the owner: no such model to change
    assert client.post(f"/m/{plain.model_id}/family/", {"base_family": "qwen"}).status_code == 404
    client.force_login(author)
    assert select(client.get(f"/m/{plain.model_id}/").content.decode(), "form.family-form")
    response = client.post(f"/m/{plain.model_id}/family/", {"base_family": "nope"})
    assert response.status_code == 302
    assert client.get(response.url).context["entry"].base_family == ""  # refused, named
    response = client.post(f"/m/{plain.model_id}/family/", {"base_family": "qwen"}, follow=True)
    assert "Base model family saved." in response.content.decode()
    client.logout()
    page = client.get(f"/m/{plain.model_id}/").content.decode()
    assert one(page, "#base-family").text.startswith("Qwen") and select(
        page, "#base-family span.badge.family")
    assert names(client.get("/b/mmae/?judge_family=only").content.decode()) == [
        "Qwen Editor", "Plain Editor"]
    page = client.get(f"/s/{plain.pk}/").content.decode()
    assert select(page, "h1 span.badge.family")
