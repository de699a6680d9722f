"""The board and pivot views (leaderboard/pages/views.py): their cached bodies are keyed on the
validated query only."""

import pytest

from leaderboard.pages import views


@pytest.fixture
def board_of_two(board):
    benchmark, score_by_slices = board
    score_by_slices("Alpha", (50.0, 60.0, 30.0), slices={("modality", "sound"): (10.0, 20.0, 0.0)})
    score_by_slices("Beta", (40.0, 70.0, 20.0), slices={("modality", "sound"): (30.0, 40.0, 25.0)})
    return benchmark


class TestBoardBodyCache:
    def test_unknown_and_reordered_parameters_hit_the_same_key(self, client, board_of_two,
                                                                cache_writes):
        first = client.get("/b/mmae/?dimension=modality&bucket=sound&sort=EMR&desc=on")
        assert first.status_code == 200
        assert len(cache_writes("board-body")) == 1
        for query in ("desc=on&sort=EMR&bucket=sound&dimension=modality",
                      "dimension=modality&cachebust=1&bucket=sound&sort=EMR&desc=on",
                      "cachebust=2&desc=true&dimension=modality&sort=EMR&bucket=sound&x=y"):
            response = client.get(f"/b/mmae/?{query}")
            assert response.status_code == 200
            assert response.content == first.content  # the whole page, for anonymous visitors
        assert len(cache_writes("board-body")) == 1
        assert len(cache_writes("shared-response")) == 1

    def test_default_values_spelled_out_hit_the_same_key(self, client, board_of_two,
                                                         cache_writes):
        client.get("/b/mmae/")
        client.get("/b/mmae/?dimension=overall&page=1&sort=&q=&licence=")
        assert len(cache_writes("board-body")) == 1

    def test_a_different_query_gets_its_own_key(self, client, board_of_two, cache_writes):
        client.get("/b/mmae/")
        client.get("/b/mmae/?sort=model")
        assert len(set(cache_writes("board-body"))) == 2

    def test_a_cached_body_holds_no_parameter_of_the_request_that_made_it(self, client,
                                                                          board_of_two):
        client.get("/b/mmae/?sort=EMR&utm_source=evil-site")
        body = client.get("/b/mmae/?sort=EMR").content.decode()
        assert "sort=model" in body  # the column links are there...
        assert "evil-site" not in body and "utm_source" not in body  # ...without the stranger


class TestPivotBodyCache:
    @pytest.fixture
    def paged(self, board_of_two, monkeypatch):
        monkeypatch.setattr(views, "PIVOT_PAGE_ROWS", 1)  # two models make two pages
        return board_of_two

    def test_unknown_and_reordered_parameters_hit_the_same_key(self, client, paged,
                                                                cache_writes):
        client.get("/b/mmae/pivot/?dimension=modality&metric=EMR")
        client.get("/b/mmae/pivot/?metric=EMR&cachebust=7&dimension=modality")
        client.get("/b/mmae/pivot/?metric=EMR&page=1")  # the defaults spelled out
        assert len(cache_writes("pivot")) == 1

    def test_a_cached_body_holds_no_parameter_of_the_request_that_made_it(self, client, paged):
        client.get("/b/mmae/pivot/?metric=EMR&utm_source=evil-site")
        body = client.get("/b/mmae/pivot/?metric=EMR").content.decode()
        assert "page=2" in body  # the pager's link is there...
        assert "evil-site" not in body and "utm_source" not in body  # ...without the stranger
