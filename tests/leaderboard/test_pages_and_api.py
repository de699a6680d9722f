import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from leaderboard.boards import rank_ranges
from leaderboard.models import ReferenceFigure, ReferenceResult
from tests.html import one, select, texts


@pytest.fixture
def filled(board):
    benchmark, score_by_slices = board
    score_by_slices("Alpha", (50.0, 60.0, 30.0), slices={("modality", "sound"): (10.0, 20.0, 0.0)},
                    intervals={("overall", ""): {"EMR": (25.0, 35.0), "IFR": (45.0, 55.0)}},
                    open_weights=True)
    score_by_slices("Beta", (40.0, 70.0, 20.0), slices={("modality", "sound"): (30.0, 40.0, 25.0)},
                    coverage=0.5)
    score_by_slices("Hidden", (99.0, 99.0, 99.0), public=False)
    return benchmark


@pytest.fixture
def reported(board, tmp_path):
    path = tmp_path / "paper.json"
    path.write_text(json.dumps({"source": "a paper", "models": [
        {"model": "Paper-Model", "note": "", "n_samples": 801,
         "overall": {"IFR": 50.73, "CR": 56.93, "EMR": 4.99},
         "modality": {"sound": {"IFR": 56.58, "CR": 56.02, "EMR": 7.72}}}],
        "challenge_baselines": [{"model": "Baseline", "scope": "single subset, 1003 samples",
                                 "overall": {"IFR": 42.12, "CR": 75.78, "EMR": 7.58}}]}))
    call_command("load_reference_results", str(path), "--benchmark", "mmae")
    return path


def test_a_search_without_a_match_says_no_model_matches(client, filled):
    html = client.get("/b/mmae/", {"q": "no <such> model"}).content.decode()
    assert "No model matches &ldquo;no &lt;such&gt; model&rdquo;." in html
    html = client.get("/b/mmae/", {"q": "zzz", "dimension": "modality", "bucket": "sound"})
    assert "No model matches &ldquo;zzz&rdquo; with samples in this slice." in html.content.decode()
    assert "No model matches" not in client.get("/b/mmae/", {"q": "alp"}).content.decode()


def test_the_home_page_opens_the_first_real_benchmarks_board(client, filled):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/b/mmae/"


def test_the_board_shows_public_rows_with_badges_and_intervals(client, filled):
    html = client.get("/b/mmae/").content.decode()
    assert "Alpha" in html and "Beta" in html and "Hidden" not in html
    assert texts(html, "#board tbody td.model .name") == ["Alpha", "Beta"]
    assert "open weights" in html and "partial" in html
    cells = [(td.children[0], td.one("small").text) for td in select(html, "#board td.num")
             if td.select("small")]
    assert ("30.00", "[25.00, 35.00]") in cells


def test_a_slice_is_a_shareable_url(client, filled):
    html = client.get("/b/mmae/?dimension=modality&bucket=sound").content.decode()
    assert texts(html, "#board tbody td.model .name") == ["Beta", "Alpha"]
    assert "modality = sound" in texts(html, "p.meta strong")


def test_an_unknown_bucket_is_a_400_naming_the_choices(client, filled):
    response = client.get("/b/mmae/?dimension=modality&bucket=jazz")
    assert response.status_code == 400
    assert "&#x27;jazz&#x27; is not a bucket of modality; choose one of: sound" in \
        response.content.decode()


def test_an_unknown_dimension_is_a_400(client, filled):
    assert client.get("/b/mmae/?dimension=colour").status_code == 400


def test_an_unknown_benchmark_is_a_404(client, filled):
    assert client.get("/b/nope/").status_code == 404
    assert client.get("/api/leaderboards/nope/").status_code == 404


def test_the_api_returns_ranked_rows_in_percent(client, filled):
    body = client.get("/api/leaderboards/mmae/?dimension=modality&bucket=sound").json()
    assert (body["benchmark"], body["dimension"], body["bucket"]) == ("mmae", "modality",
                                                                       "sound")
    assert [(r["rank"], r["model"], r["IFR"], r["CR"], r["EMR"], r["n"])
            for r in body["rows"]] == [(1, "Beta", 30.0, 40.0, 25.0, 4),
                                       (2, "Alpha", 10.0, 20.0, 0.0, 4)]
    rank_ranges.refresh(filled)
    overall = client.get("/api/leaderboards/mmae/").json()
    assert overall["dimension"] == "overall" and overall["bucket"] is None
    alpha = overall["rows"][0]
    assert (alpha["EMR_lo"], alpha["EMR_hi"], alpha["rank_best"], alpha["rank_worst"]) == \
        (25.0, 35.0, 1, 1)
    assert alpha["submission"] == filled.submissions.get(model__name="Alpha").id


def test_the_csv_export_holds_the_same_rows(client, filled):
    response = client.get("/api/leaderboards/mmae/?dimension=modality&bucket=sound&format=csv")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"] == 'attachment; filename="mmae-modality-sound.csv"'
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["rank"], r["model"], r["EMR"]) for r in rows] == [("1", "Beta", "25.0"),
                                                                 ("2", "Alpha", "0.0")]


def test_the_api_refuses_a_bad_bucket_naming_it(client, filled):
    response = client.get("/api/leaderboards/mmae/?dimension=modality&bucket=jazz")
    assert response.status_code == 400
    assert response.json()["errors"][0].startswith("bucket: 'jazz' is not a bucket")


def test_a_csv_request_refused_gets_its_error_as_json_not_a_download(client, filled):
    for asked in ({"format": "csv"}, {"HTTP_ACCEPT": "text/csv"}):
        query = "?dimension=modality&bucket=jazz" + ("&format=csv" if "format" in asked else "")
        headers = {k: v for k, v in asked.items() if k.startswith("HTTP_")}
        response = client.get(f"/api/leaderboards/mmae/{query}", **headers)
        assert response.status_code == 400
        assert response["Content-Type"].startswith("application/json")
        assert "Content-Disposition" not in response
        assert response.json()["errors"][0].startswith("bucket: 'jazz' is not a bucket")


def test_reported_rows_show_apart_with_their_scope_and_are_never_ranked(client, filled,
                                                                         reported):
    body = client.get("/api/leaderboards/mmae/").json()
    assert [r["model"] for r in body["rows"]] == ["Alpha", "Beta"]
    assert [(r["model"], r["scope"], r["EMR"]) for r in body["reported"]] == [
        ("Baseline", "single subset, 1003 samples", 7.58), ("Paper-Model", "801 samples", 4.99)]
    html = client.get("/b/mmae/?dimension=modality&bucket=sound").content.decode()
    board = one(html, "table#board")
    (reference,) = board.select("tbody tr[class='reference reported']")
    assert "Paper-Model" in texts(reference, ".name") and "56.58" in texts(reference, "td.num")
    assert "Baseline" not in board.all_text  # it has no figures for this slice
    # Placed by its figures among the ranked rows (Beta EMR 25, Alpha EMR 0), unranked.
    assert texts(board, "tbody td.model .name") == ["Beta", "Paper-Model", "Alpha"]
    assert reference.one("td.rank").text == "reported"


def test_loading_reported_results_again_replaces_them(reported):
    call_command("load_reference_results", str(reported), "--benchmark", "mmae")
    assert ReferenceResult.objects.count() == 2
    assert ReferenceFigure.objects.count() == 3


@pytest.mark.parametrize("content, message", [
    ("{", "invalid JSON"),
    ('{"models": [{"model": "X"}]}', "models[0] (X): no 'overall' figures"),
    ('{"models": [{"model": "X", "overall": {"IFR": 1, "CR": "high", "EMR": 2}}]}',
     "models[0] (X): overall needs a number for CR, got 'high'"),
    ('{"models": [{"overall": {}}]}', "models[0]: needs a 'model' name"),
])
def test_a_bad_reference_file_loads_nothing(board, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CommandError) as info:
        call_command("load_reference_results", str(path), "--benchmark", "mmae")
    assert message in str(info.value)
    assert ReferenceResult.objects.count() == 0


def test_reported_results_need_their_board_imported_first(db, tmp_path):
    path = tmp_path / "paper.json"
    path.write_text('{"models": []}')
    with pytest.raises(CommandError) as info:
        call_command("load_reference_results", str(path), "--benchmark", "mmae")
    assert "no benchmark 'mmae'; import it first" in str(info.value)


@pytest.mark.integration  # seed_board draws in forked processes
def test_seed_board_fills_a_board_with_labelled_synthetic_rows(db, tmp_path, client):
    from scoring.services import benchmark_import
    from scoring.synthetic import write_benchmark

    meta = write_benchmark(tmp_path / "b", 8, seed=1)
    benchmark_import(kind="mmae", path=meta, audio_root=tmp_path / "b", slug="seeded")
    call_command("seed_board", "--benchmark", "seeded", "--submissions", "3",
                 "--resamples", "20")
    rows = client.get("/api/leaderboards/seeded/").json()["rows"]
    assert len(rows) == 3 and all(r["simulated"] for r in rows)
    assert {r["judge"] for r in rows} == {"synthetic (seed_board)"}
    assert [r["rank"] for r in rows] == sorted(r["rank"] for r in rows)


def test_a_newly_published_submission_shows_at_once_despite_the_cache(client, board):
    benchmark, score_by_slices = board
    score_by_slices("First", (50.0, 50.0, 10.0))
    assert "First" in client.get("/b/mmae/").content.decode()
    assert [r["model"] for r in client.get("/api/leaderboards/mmae/").json()["rows"]] == \
        ["First"]
    score_by_slices("Second", (60.0, 60.0, 20.0))
    html = client.get("/b/mmae/").content.decode()
    assert html.index("Second") < html.index("First")
    assert [r["model"] for r in client.get("/api/leaderboards/mmae/").json()["rows"]] == \
        ["Second", "First"]


def test_a_repeated_view_is_served_from_the_cache(client, filled, django_assert_max_num_queries):
    first = client.get("/b/mmae/?dimension=modality&bucket=sound").content
    # The board's stamp (published, reported, audited), its benchmark(s), whether its rank
    # ranges are ready.
    with django_assert_max_num_queries(6):
        again = client.get("/b/mmae/?dimension=modality&bucket=sound").content
    assert again == first


def test_a_long_board_is_paged_and_ranks_stay_global(client, board, settings):
    from leaderboard.pages import views

    benchmark, score_by_slices = board
    for i in range(5):
        score_by_slices(f"M{i}", (50.0, 50.0, 10.0 + i))
    original = views.BOARD_PAGE_ROWS
    views.BOARD_PAGE_ROWS = 2
    try:
        second = client.get("/b/mmae/?page=2").content.decode()
        last = client.get("/b/mmae/?page=3").content.decode()
    finally:
        views.BOARD_PAGE_ROWS = original
    table = one(second, "table#board")
    assert texts(table, "tbody td.model .name") == ["M2", "M1"]  # not M4, M3 nor M0
    assert table.select("tbody td[class=rank]")[0].text.startswith("3")
    assert "page 2 of 3 (5 models)" in second
    assert texts(last, "table#board tbody td.model .name") == ["M0"]


@pytest.mark.parametrize("page", ["0", "x", "-1"])
def test_a_bad_page_is_a_400(client, filled, page):
    assert client.get(f"/b/mmae/?page={page}").status_code == 400


def test_figures_that_read_alike_are_a_tie_in_compares_slices(board):
    """27.777777777 and 27.777777778 both read 27.78: neither is bold; a figure above both
    leads alone, and two that tie at the top lead together."""
    from leaderboard.pages.compare import compare_rows
    from scoring.kinds import get_kind

    benchmark, score_by_slices = board
    a = score_by_slices("A", (50.0, 27.777777777, 10.0))
    b = score_by_slices("B", (50.0, 27.777777778, 10.0))
    kind = get_kind("mmae")
    (row,) = compare_rows([a, b], kind)
    assert [c["CR_best"] for c in row["cells"]] == [False, False]  # (IFR, CR, EMR)
    c = score_by_slices("C", (50.0, 20.0, 10.0))
    (row,) = compare_rows([a, b, c], kind)
    assert [c["CR_best"] for c in row["cells"]] == [True, True, False]
