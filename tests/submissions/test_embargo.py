"""Embargoed submissions (submissions.embargo): scored now, shown nowhere before their date
(crawled with the pre-Django cache on, after the author's own visit), then public by
themselves, with an e-mail; a date in the past or too far ahead is refused by name."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from leaderboard.tasks import board_refresh
from scoring.models import Benchmark
from scoring.synthetic import write_benchmark
from submissions import embargo, tasks
from submissions.models import Submission
from submissions.services import embargo_problem
from tests.challenges.test_hidden_crawler import crawl, schema_addresses
from tests.config.test_page_cache import call, clock, django_app, front, signed_in  # noqa: F401
from tests.conftest import judge_config
from tests.factories import judged_submission

pytestmark = pytest.mark.django_db(transaction=True)
SLUG = "embargo-board"
SECRET = "Quietly Embargoed Editor"


@pytest.fixture
def embargoed(tmp_path, author, other_author, django_capture_on_commit_callbacks):
    from scoring.services import benchmark_import

    meta = write_benchmark(tmp_path / "set", 6, seed=3)
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=meta.parent, slug=SLUG)
    judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    benchmark.refresh_from_db()
    shown = judged_submission(benchmark, other_author, "Open Editor", seed=1)
    secret = judged_submission(benchmark, author, SECRET, seed=2)
    Submission.objects.filter(pk=secret.pk).update(
        publish_at=timezone.now() + timedelta(days=3))
    with django_capture_on_commit_callbacks(execute=True):
        board_refresh(Benchmark.objects.get(pk=benchmark.pk))
    return {"benchmark": Benchmark.objects.get(pk=benchmark.pk), "shown": shown,
            "secret": Submission.objects.get(pk=secret.pk)}


def starts(state, front) -> set[str]:  # noqa: F811
    secret, shown = state["secret"], state["shown"]
    version = state["benchmark"].board_version
    ids = [str(secret.pk), str(shown.pk)]
    fill = {"slug": [SLUG], "pk": ids, "id": ids, "model_id": [str(secret.model_id)],
            "version": [str(version)], "name": ["results.jsonl"], "key": ["x"]}
    return {
        "/", f"/b/{SLUG}/", f"/b/{SLUG}/pivot/", f"/b/{SLUG}/cite/", f"/b/{SLUG}/v/{version}/",
        f"/b/{SLUG}/v/{version}/snapshot.json", f"/b/{SLUG}/v/{version}/items.parquet",
        f"/b/{SLUG}/compare/?models={secret.model_id}&models={shown.model_id}",
        f"/m/{secret.model_id}/", f"/s/{secret.pk}/", f"/submissions/{secret.pk}/",
        f"/b/{SLUG}/badge/{secret.model_id}.svg",
        *(f"/api/leaderboards/{SLUG}/items/?format={f}" for f in ("parquet", "csv", "jsonl")),
        f"/api/leaderboards/{SLUG}/eee.jsonl", f"/api/leaderboards/{SLUG}/eval-results.zip",
        f"/api/leaderboards/{SLUG}/eee/{secret.model_id}.json",
        *schema_addresses(front, fill),
    }


def mentions(seen: dict) -> list[str]:
    return sorted(url for url, (_, text) in seen.items() if SECRET in text)


@pytest.mark.slow
def test_an_embargoed_entry_is_nowhere_before_its_date_then_public_by_itself(
        embargoed, front, client, author, other_author, clock):  # noqa: F811
    begin = starts(embargoed, front)
    # Its author first: their pages name it; if a cache kept them for others, it would show.
    mine = crawl(front, begin, signed_in(front, client, author))
    assert mentions(mine), "the author sees their own submission"
    assert "Embargoed: public from" in mine[f"/submissions/{embargoed['secret'].pk}/"][1]
    for cookie in (signed_in(front, Client(), other_author), None):
        seen = crawl(front, begin, cookie)
        assert len(seen) > 40
        assert not mentions(seen), mentions(seen)
        assert "Open Editor" in seen[f"/b/{SLUG}/"][1]  # the board itself is there
        assert seen[f"/s/{embargoed['secret'].pk}/"][0] == 404

    # Its date comes: the sweep publishes it, once, and tells its author.
    Submission.objects.filter(pk=embargoed["secret"].pk).update(
        publish_at=timezone.now() - timedelta(seconds=1))
    mail.outbox.clear()
    tasks.release_embargoes()
    assert not embargo.embargo_release(embargoed["secret"].pk)  # released already
    secret = Submission.objects.get(pk=embargoed["secret"].pk)
    assert secret.publish_at is None and secret.public
    assert [m.subject for m in mail.outbox] == [f"Submission {secret.pk} is now public"]
    board_refresh(Benchmark.objects.get(pk=secret.benchmark_id))
    clock.now += 5  # the front learns the new board version
    board = call(front, f"/b/{SLUG}/")
    assert SECRET in board.body.decode()
    assert SECRET in call(front, f"/api/leaderboards/{SLUG}/eee.jsonl").body.decode()


@pytest.mark.slow
def test_a_name_another_author_published_meanwhile_keeps_it_private_and_says_why(
        embargoed, other_author, author):
    secret = embargoed["secret"]
    judged_submission(embargoed["benchmark"], other_author, SECRET.upper().lower().title(),
                      seed=4)  # the same name, another author's, public
    Submission.objects.filter(pk=secret.pk).update(
        publish_at=timezone.now() - timedelta(seconds=1))
    mail.outbox.clear()
    assert embargo.embargo_release(secret.pk)
    secret.refresh_from_db()
    assert secret.publish_at is None and not secret.public
    (message,) = mail.outbox
    assert "stays private" in message.subject and "is taken on this benchmark" in message.body


@pytest.mark.parametrize("days, problem", [(-1, "must be in the future"),
                                           (400, "at most 366 days ahead"), (10, None)])
def test_a_publication_date_is_checked(days, problem):
    found = embargo_problem(timezone.now() + timedelta(days=days))
    assert found == problem or (problem and problem in found)
