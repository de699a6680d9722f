"""A cited board: `/b/<slug>/v/<version>/` keeps the board as it is on the first visit while
that is the current version, and shows exactly that for good; the current board links it."""

import io

import pandas as pd
import pytest

from leaderboard.models import BoardSnapshot
from scoring.boards import board_changed
from submissions.models import Submission
from tests.factories import seeded_board

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(db, tmp_path):
    return seeded_board(tmp_path / "b", items=6, submissions=3, seed=4)


def test_the_board_links_its_permalink_and_the_items(client, seeded):
    page = client.get("/b/mmae/").content.decode()
    assert f'href="/b/mmae/v/{seeded.board_version}/"' in page and "Cite this board" in page
    assert 'href="/api/leaderboards/mmae/items/"' in page


def test_a_cited_version_shows_the_board_as_it_was_after_it_changes(client, seeded):
    version = seeded.board_version
    rows = client.get("/api/leaderboards/mmae/").json()["rows"]
    first = client.get(f"/b/mmae/v/{version}/")
    assert first.status_code == 200
    html = first.content.decode()
    assert all(row["model"] in html for row in rows)
    assert "It is <a" in html and "immutable" in first["Cache-Control"]
    snapshot = BoardSnapshot.objects.get()
    assert [r["model"] for r in snapshot.rows] == [r["model"] for r in rows]
    assert [r["EMR"] for r in snapshot.rows] == [r["EMR"] for r in rows]

    gone = Submission.objects.filter(benchmark=seeded).first()
    Submission.objects.filter(pk=gone.pk).update(public=False)
    board_changed(seeded.id)
    assert gone.model.name not in client.get("/b/mmae/").content.decode()
    again = client.get(f"/b/mmae/v/{version}/").content.decode()
    assert gone.model.name in again and "The board has changed since" in again
    assert BoardSnapshot.objects.count() == 1


def test_its_items_are_the_dataset_as_it_was(client, seeded):
    version = seeded.board_version
    live = client.get("/api/leaderboards/mmae/items/")
    client.get(f"/b/mmae/v/{version}/")
    board_changed(seeded.id)
    kept = client.get(f"/b/mmae/v/{version}/items.parquet")
    assert kept.status_code == 200 and "immutable" in kept["Cache-Control"]
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(kept.content)),
                                  pd.read_parquet(io.BytesIO(b"".join(live.streaming_content))))


def test_a_version_never_cited_while_current_is_404(client, seeded):
    old = seeded.board_version
    board_changed(seeded.id)
    response = client.get(f"/b/mmae/v/{old}/")
    assert response.status_code == 404 and not BoardSnapshot.objects.exists()
    assert client.get(f"/b/mmae/v/{old + 99}/").status_code == 404
    assert client.get(f"/b/mmae/v/{old}/items.parquet").status_code == 404
    assert client.get("/b/nothing/v/1/").status_code == 404
