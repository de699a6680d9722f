"""A cited board: the worker (or staff, `manage.py snapshot_board`) keeps at most one snapshot
per board state, never a visitor; `/b/<slug>/v/<version>/` shows it after the board changes,
citing the state's stored items file (not a copy), without the rows of submissions withdrawn
since, and is never cached as immutable; the current board links its newest snapshot."""

import io

import pandas as pd
import pytest
from django.core.management import call_command

from leaderboard import tasks
from leaderboard.boards import dataset_files, snapshots
from leaderboard.models import BoardSnapshot
from scoring.boards import board_changed
from submissions.models import Submission
from tests.factories import seeded_board
from tests.html import one, select

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(db, tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return seeded_board(tmp_path / "b", items=6, submissions=3, seed=4)


@pytest.fixture
def kept(seeded):
    """The board's state as the worker keeps it after a change: its snapshot included."""
    tasks.board_refresh(seeded)
    return BoardSnapshot.objects.get()


def items(response) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(b"".join(response.streaming_content)))


def test_a_visit_never_keeps_a_snapshot(client, seeded):
    response = client.get(f"/b/mmae/v/{seeded.board_version}/")
    assert response.status_code == 404 and not BoardSnapshot.objects.exists()
    assert client.get(f"/b/mmae/v/{seeded.board_version}/items.parquet").status_code == 404
    assert client.get("/b/mmae/cite/").status_code == 404


def test_the_worker_keeps_one_per_state_at_most_and_a_day_apart(seeded, kept):
    seeded.refresh_from_db()
    assert kept.board_version == seeded.board_version
    assert snapshots.snapshot_take(benchmark=seeded) == kept
    board_changed(seeded.id)
    tasks.board_refresh(seeded)  # a new state within the day: no new snapshot
    assert BoardSnapshot.objects.count() == 1


def test_staff_keep_one_with_the_command(seeded):
    call_command("snapshot_board", "--benchmark", "mmae")
    call_command("snapshot_board", "--benchmark", "mmae")
    seeded.refresh_from_db()
    assert list(BoardSnapshot.objects.values_list("board_version", flat=True)) == \
        [seeded.board_version]


def test_snapshots_cite_the_states_stored_dataset_not_a_copy(client, seeded, kept):
    seeded.refresh_from_db()
    assert kept.items_file == dataset_files.file_name(seeded, "parquet")
    assert "items" not in {f.name for f in BoardSnapshot._meta.get_fields()}
    for _ in range(3):  # newer states' files do not delete a cited one
        board_changed(seeded.id)
        seeded.refresh_from_db()
        dataset_files.dataset_build(seeded)
    frame = items(client.get(f"/b/mmae/v/{kept.board_version}/items.parquet"))
    assert set(frame["submission"]) == {r["submission"] for r in kept.rows}


def test_a_cited_version_shows_the_board_as_it_was_after_it_changes(client, seeded, kept):
    rows = client.get("/api/leaderboards/mmae/").json()["rows"]
    html = client.get(f"/b/mmae/v/{kept.board_version}/").content.decode()
    note = one(html, "p.notice[role=note]")
    assert all(row["model"] in html for row in rows)
    assert note.text.endswith("It is the current board too.")
    assert note.one("a[href='/b/mmae/']").text == "the current board"
    assert [r["EMR"] for r in kept.rows] == [r["EMR"] for r in rows]
    board_changed(seeded.id)
    again = client.get(f"/b/mmae/v/{kept.board_version}/").content.decode()
    assert all(row["model"] in again for row in rows) and "The board has changed since" in again


def withdraw(submission, how: str) -> None:
    if how == "deleted":
        submission.delete()
    else:
        Submission.objects.filter(pk=submission.pk).update(
            **{"private": {"public": False}, "hidden": {"hidden": True}}[how])
    board_changed(submission.benchmark_id)


@pytest.mark.parametrize("how", ["private", "hidden", "deleted"])
def test_a_withdrawn_submission_leaves_the_page_and_its_items_at_once(client, seeded, kept,
                                                                      how):
    page_url, items_url = f"/b/mmae/v/{kept.board_version}/", \
        f"/b/mmae/v/{kept.board_version}/items.parquet"
    before, before_items = client.get(page_url), client.get(items_url)
    assert len(items(before_items)) == 3 * 6
    gone = Submission.objects.get(pk=kept.rows[0]["submission"])
    name = gone.model.name
    withdraw(gone, how)
    page = client.get(page_url, HTTP_IF_NONE_MATCH=before["ETag"])
    assert page.status_code == 200
    html = page.content.decode()
    assert name not in html and "1 row of it was withdrawn since" in html
    file = client.get(items_url, HTTP_IF_NONE_MATCH=before_items["ETag"])
    assert file.status_code == 200
    frame = items(file)
    assert gone.pk not in set(frame["submission"]) and len(frame) == 2 * 6


def test_nothing_is_cached_as_immutable_and_revalidation_is_by_etag(client, kept):
    for url in (f"/b/mmae/v/{kept.board_version}/",
                f"/b/mmae/v/{kept.board_version}/items.parquet"):
        first = client.get(url)
        assert "immutable" not in first["Cache-Control"]
        assert "public" in first["Cache-Control"] and "max-age=30" in first["Cache-Control"]
        assert client.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304


def test_permalinks_carry_nofollow(client, seeded, kept):
    cite = next(a for a in select(client.get("/b/mmae/"), "a") if a.text == "Cite this board")
    assert cite.get("rel") == "nofollow"
    newest = client.get(cite.get("href"))
    assert newest.status_code == 302 and newest["Location"] == f"/b/mmae/v/{kept.board_version}/"
    links = select(client.get(newest["Location"]), "a[href*='/v/']")
    assert len(links) == 3 and all(a.get("rel") == "nofollow" for a in links)  # page, items, JSON


def test_a_version_never_kept_is_404(client, seeded, kept):
    board_changed(seeded.id)
    seeded.refresh_from_db()
    assert client.get(f"/b/mmae/v/{seeded.board_version}/").status_code == 404
    assert client.get(f"/b/mmae/v/{seeded.board_version + 99}/").status_code == 404
    assert client.get(f"/b/mmae/v/{seeded.board_version}/items.parquet").status_code == 404
    assert client.get("/b/nothing/v/1/").status_code == 404


def test_a_snapshot_is_signed_and_a_changed_figure_fails_the_check(client, seeded, kept):
    """Its signed JSON verifies against the published keys; a figure changed, or a row a
    withdrawal took out put back, does not; the page links it."""
    from config import signing

    url = f"/b/{seeded.slug}/v/{kept.board_version}/snapshot.json"
    body = client.get(url).json()
    keys = client.get(signing.KEYS_PATH).json()["keys"]
    signed = body.pop("signature")
    assert [r["model"] for r in body["rows"]] == [r["model"] for r in kept.rows]
    assert signing.verify(body, signed, keys)
    body["rows"][0]["EMR"] = (body["rows"][0]["EMR"] or 0) + 1
    assert not signing.verify(body, signed, keys)
    page = client.get(f"/b/{seeded.slug}/v/{kept.board_version}/").content.decode()
    assert select(page, f'a[href="{url}"]')

    first = Submission.objects.get(pk=kept.rows[0]["submission"])
    first.public = False
    first.save()
    after = client.get(url).json()
    signed = after.pop("signature")
    assert after["withdrawn"] == 1 and len(after["rows"]) == len(kept.rows) - 1
    assert signing.verify(after, signed, keys)
    after["rows"].insert(0, kept.rows[0])
    assert not signing.verify(after, signed, keys)
