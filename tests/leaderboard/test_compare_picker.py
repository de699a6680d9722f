"""The compare page's model picker: a search of the board's public representatives (at most 20
at once) from a JSON endpoint and, without scripts, from the page's own GET form, the models
picked kept; a board of many models is never listed whole."""

import pytest

from leaderboard.pages.compare import PICKER_LIMIT, picker_matches
from tests.html import one, select

MODELS = 45  # more than two searches' worth


@pytest.fixture
def crowd(board, other_author):
    """A board of 45 public models ("Echo 00" to "Echo 44", organisation "Lab"; Echo 44 the
    best), one of them "Reverb Echo" of "Sound Lab", and a private model of another author
    that no search may reveal."""
    benchmark, score_by_slices = board
    made = {}
    for i in range(MODELS):
        name = "Reverb Echo" if i == 7 else f"Echo {i:02d}"
        made[name] = score_by_slices(name, (float(i), float(i), float(i)),
                                     organisation="Sound Lab" if i == 7 else "Lab")
    made["Hidden Echo"] = score_by_slices("Hidden Echo", (99.0, 99.0, 99.0), public=False,
                                          owner=other_author)
    return benchmark, made


def search(client, q, **params):
    response = client.get("/b/mmae/compare/models/", {"q": q, **params})
    assert response.status_code == 200, response.content
    return response.json()


def boxes(html: str) -> list[tuple[str, bool]]:
    """The picker's boxes: (model id, checked), in page order."""
    return [(box.get("value"), "checked" in box.attrs)
            for box in select(html, "input[type=checkbox][name=models]")]


# --- the endpoint ------------------------------------------------------------------------


def test_an_empty_search_gives_the_boards_first_20(client, crowd):
    found = search(client, "")
    assert found["count"] == MODELS and found["limit"] == PICKER_LIMIT == 20
    assert len(found["results"]) == 20
    assert [r["rank"] for r in found["results"]] == list(range(1, 21))
    assert found["results"][0]["model"] == "Echo 44"
    assert set(found["results"][0]) == {"id", "model", "organisation", "rank"}


def test_a_search_matches_a_substring_of_the_name_or_organisation_at_most_20(client, crowd):
    found = search(client, "echo")
    assert found["count"] == MODELS and len(found["results"]) == PICKER_LIMIT
    assert found["note"] == "20 of the 45 models matching \u201cecho\u201d: search for the others."
    assert search(client, "  SOUND   lab ")["results"][0]["model"] == "Reverb Echo"
    assert search(client, "Sound Lab")["q"] == "sound lab"
    one = search(client, "echo 3")
    assert [r["model"] for r in one["results"]] == [f"Echo {i}" for i in range(39, 29, -1)]


def test_names_that_start_with_the_search_come_first_then_the_rest_in_board_order(crowd):
    benchmark, _ = crowd
    results, count = picker_matches(benchmark, "echo", limit=100)
    assert count == MODELS  # "Reverb Echo" (38th on the board) only holds it: last
    assert [r["model"] for r in results] == [f"Echo {i:02d}" for i in range(44, -1, -1)
                                             if i != 7] + ["Reverb Echo"]


def test_a_private_model_is_never_found(client, crowd, other_author):
    assert search(client, "hidden") == {"q": "hidden", "count": 0, "limit": 20, "results": [],
                                        "note": "No model matches \u201chidden\u201d."}
    client.force_login(other_author)  # not even by its own author: the board shows it not
    assert search(client, "hidden")["count"] == 0


def test_a_search_over_100_characters_is_a_400_naming_it(client, crowd):
    response = client.get("/b/mmae/compare/models/", {"q": "x" * 101})
    assert response.status_code == 400
    assert response.json() == {"errors": ["q: a search is at most 100 characters (got 101)"]}


def test_the_endpoint_is_a_404_on_an_unknown_board_and_a_405_on_post(client, crowd):
    assert client.get("/b/nope/compare/models/").status_code == 404
    assert client.post("/b/mmae/compare/models/").status_code == 405


def test_the_endpoint_is_shared_per_board_state_with_an_etag(client, crowd):
    first = client.get("/b/mmae/compare/models/", {"q": "echo"})
    assert "public" in first["Cache-Control"] and first["ETag"]
    again = client.get("/b/mmae/compare/models/", {"q": "echo"},
                       HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304


# --- the page, with or without scripts ---------------------------------------------------


def test_the_picker_lists_20_models_not_the_whole_board(client, crowd):
    html = client.get("/b/mmae/compare/").content.decode()
    assert len(boxes(html)) == PICKER_LIMIT
    assert "The board\u2019s first 20 of 45 models: search for the others." in html
    assert select(html, '[data-search="/b/mmae/compare/models/"]')
    assert select(html, 'script[src*="js/compare-picker.js"]')


def test_a_search_without_scripts_keeps_the_models_picked_first_and_checked(client, crowd):
    _, made = crowd
    picked = [made["Echo 03"].model_id, made["Echo 40"].model_id]
    html = client.get("/b/mmae/compare/", {"q": "reverb", "models": picked}).content.decode()
    assert boxes(html) == [(str(picked[0]), True), (str(picked[1]), True),
                           (str(made["Reverb Echo"].model_id), False)]
    assert one(html, "input#picker-q[name=q]").get("value") == "reverb"
    assert "1 model matches \u201creverb\u201d." in html


def test_a_model_picked_and_found_shows_once(client, crowd):
    _, made = crowd
    picked = made["Reverb Echo"].model_id
    html = client.get("/b/mmae/compare/", {"q": "reverb", "models": [picked]}).content.decode()
    assert boxes(html) == [(str(picked), True)]


def test_a_search_without_a_match_says_so_and_keeps_the_picked(client, crowd):
    _, made = crowd
    picked = made["Echo 01"].model_id
    html = client.get("/b/mmae/compare/", {"q": "zzz", "models": [picked]}).content.decode()
    assert boxes(html) == [(str(picked), True)]
    assert "No model matches \u201czzz\u201d." in html


def test_a_compare_page_reads_its_models_and_the_boards_first_20_not_the_whole_board(
        client, crowd, monkeypatch):
    """At 10,000 submissions the page ranked the whole board in Python for its picker (two
    seconds): now the picker reads the first 20 of the board's order and the form the models
    asked for. With a search, every representative is read (the board's order, not a
    ranking in Python)."""
    from leaderboard.boards import selectors, state

    _, made = crowd
    whole: list = []
    real = state._read_representatives
    monkeypatch.setattr(state, "_read_representatives",
                        lambda benchmark: whole.append(1) or real(benchmark))
    monkeypatch.setattr(selectors, "_ranked", lambda *a: pytest.fail("ranked in Python"))
    picked = [made["Echo 44"].model_id, made["Echo 03"].model_id]
    html = client.get("/b/mmae/compare/", {"models": picked}).content.decode()
    assert "No per-sample results kept" in html  # tests.factories keeps no per-item values
    assert boxes(html)[:2] == [(str(picked[0]), True), (str(picked[1]), True)]
    assert [m for m, _ in boxes(html)[2:]] == [str(made[f"Echo {i:02d}"].model_id)
                                               for i in range(43, 23, -1) if i != 7][:19]
    assert whole == []
    html = client.get("/b/mmae/compare/", {"q": "reverb", "models": picked}).content.decode()
    assert boxes(html)[2:] == [(str(made["Reverb Echo"].model_id), False)]
    assert whole == [1]
