"""Anonymous entries (submissions.anonymity): shown as "Anonymous submission N" until a date
its author chose, with no trace of the model or its author on any page, file, export or cache
(crawled with the pre-Django cache on, after the author's own visit), then under its name by
itself, with an e-mail; the private review link leads to the entry before and after."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from leaderboard.tasks import board_refresh
from scoring.models import Benchmark
from scoring.synthetic import write_benchmark
from submissions import anonymity, tasks
from submissions.models import ModelEntry, Submission
from tests.challenges.test_hidden_crawler import crawl, schema_addresses
from tests.config.test_page_cache import call, clock, django_app, front, signed_in  # noqa: F401
from tests.conftest import CAST_PASSWORD, cast_member, judge_config
from tests.factories import judged_submission

pytestmark = pytest.mark.django_db(transaction=True)
SLUG = "anonymous-board"
SECRET = "Quietly Named Editor"
LAB = "Undisclosed Acoustics Lab"
OWNER = "quietowner"


@pytest.fixture
def quiet_owner(django_user_model):
    return cast_member(django_user_model, OWNER, "quiet@example.com")


@pytest.fixture
def anonymous(tmp_path, quiet_owner, other_author, django_capture_on_commit_callbacks):
    from scoring.services import benchmark_import

    meta = write_benchmark(tmp_path / "set", 6, seed=3)
    benchmark, _ = benchmark_import(kind="mmae", path=meta, audio_root=meta.parent, slug=SLUG)
    judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    benchmark.refresh_from_db()
    shown = judged_submission(benchmark, other_author, "Open Editor", seed=1)
    secret = judged_submission(benchmark, quiet_owner, SECRET, seed=2)
    ModelEntry.objects.filter(pk=secret.model_id).update(
        organisation=LAB, link="https://example.org/quiet-paper", licence="Quiet-Licence-1",
        base_family="qwen")
    secret.refresh_from_db()
    anonymity.anonymous_entry(secret, timezone.now() + timedelta(days=3))
    secret.save()
    with django_capture_on_commit_callbacks(execute=True):
        board_refresh(Benchmark.objects.get(pk=benchmark.pk))
    return {"benchmark": Benchmark.objects.get(pk=benchmark.pk), "shown": shown,
            "secret": Submission.objects.select_related("model", "reveal_as").get(pk=secret.pk)}


def starts(state, front) -> set[str]:  # noqa: F811
    secret, shown = state["secret"], state["shown"]
    version = state["benchmark"].board_version
    ids = [str(secret.pk), str(shown.pk)]
    models = [str(secret.model_id), str(secret.reveal_as_id), str(shown.model_id)]
    fill = {"slug": [SLUG], "pk": ids, "id": ids, "model_id": models,
            "version": [str(version)], "name": ["results.jsonl"], "key": ["x"]}
    return {
        "/", f"/b/{SLUG}/", f"/b/{SLUG}/pivot/", f"/b/{SLUG}/cite/", f"/b/{SLUG}/v/{version}/",
        f"/b/{SLUG}/v/{version}/snapshot.json", f"/b/{SLUG}/v/{version}/items.parquet",
        f"/b/{SLUG}/compare/?models={secret.model_id}&models={shown.model_id}",
        f"/b/{SLUG}/?q=Quietly", f"/api/leaderboards/{SLUG}/?q=Quietly",
        *(f"/m/{pk}/" for pk in models), f"/s/{secret.pk}/", f"/submissions/{secret.pk}/",
        *(f"/b/{SLUG}/badge/{pk}.svg" for pk in models),
        *(f"/api/leaderboards/{SLUG}/items/?format={f}" for f in ("parquet", "csv", "jsonl")),
        f"/api/leaderboards/{SLUG}/eee.jsonl", f"/api/leaderboards/{SLUG}/eval-results.zip",
        *(f"/api/leaderboards/{SLUG}/eee/{pk}.json" for pk in models),
        f"/api/submissions/{secret.pk}/", f"/review/{secret.review_token}/",
        *schema_addresses(front, fill),
    }


def mentions(seen: dict) -> list[str]:
    return sorted(url for url, (_, text) in seen.items()
                  if any(secret in text for secret in (SECRET, LAB, OWNER, "quiet-paper",
                                                       "Quiet-Licence")))


@pytest.mark.slow
def test_an_anonymous_entry_names_nothing_before_its_date_then_its_model_by_itself(
        anonymous, front, client, quiet_owner, other_author, clock):  # noqa: F811
    secret = anonymous["secret"]
    pseudonym = secret.model
    number = secret.anonymous_number
    assert pseudonym.pseudonym and pseudonym.name == f"Anonymous submission {number}"
    assert (pseudonym.organisation, pseudonym.link, pseudonym.licence) == ("", "", "")
    assert pseudonym.base_family == "qwen"  # the judge's-family mark stays honest
    begin = starts(anonymous, front)
    # Its author first: their pages name the model; if a cache kept them for others, it would
    # show.
    mine = crawl(front, begin, signed_in(front, client, quiet_owner))
    status = mine[f"/submissions/{secret.pk}/"][1]
    assert SECRET in status and secret.review_token in status and "Anonymous until" in status
    for cookie in (signed_in(front, Client(), other_author), None):
        seen = crawl(front, begin, cookie)
        assert len(seen) > 40
        assert not mentions(seen), mentions(seen)
        board = seen[f"/b/{SLUG}/"][1]
        assert pseudonym.name in board and "Open Editor" in board and "anonymous entry" in board
        assert seen[f"/m/{pseudonym.pk}/"][0] == 200
        assert seen[f"/m/{secret.reveal_as_id}/"][0] == 404  # the model has nothing shown
        assert "An anonymous entry" in seen[f"/m/{pseudonym.pk}/"][1]
    # The review link leads to the entry's page; another token leads nowhere.
    reviewer = Client()
    link = reviewer.get(f"/review/{secret.review_token}/")
    assert link.status_code == 302 and link["Location"] == f"/m/{pseudonym.pk}/"
    assert reviewer.get(f"/review/{secret.review_token[:-2]}xx/").status_code == 404
    # The board row counts the author's attempts, as every row does.
    api = call(front, f"/api/leaderboards/{SLUG}/").body.decode()
    assert '"attempts":1' in api.replace(" ", "")

    # Its date comes: the sweep names it, once, and tells its author.
    Submission.objects.filter(pk=secret.pk).update(
        anonymous_until=timezone.now() - timedelta(seconds=1))
    mail.outbox.clear()
    tasks.release_embargoes()
    assert not anonymity.reveal(secret.pk)  # revealed already
    named = Submission.objects.select_related("model").get(pk=secret.pk)
    assert (named.model.name, named.anonymous_until, named.public) == (SECRET, None, True)
    assert not ModelEntry.objects.filter(pk=pseudonym.pk).exists()
    assert [m.subject for m in mail.outbox] == [f"Submission {secret.pk} is now shown as "
                                                f"{SECRET}"]
    board_refresh(Benchmark.objects.get(pk=secret.benchmark_id))
    clock.now += 5  # the front learns the new board version
    page = call(front, f"/b/{SLUG}/").body.decode()
    assert SECRET in page and LAB in page and pseudonym.name not in page
    assert SECRET in call(front, f"/api/leaderboards/{SLUG}/eee.jsonl").body.decode()
    link = Client().get(f"/review/{secret.review_token}/")
    assert link.status_code == 302 and link["Location"] == f"/m/{named.model_id}/"
    assert Client().get(f"/m/{pseudonym.pk}/").status_code == 404


@pytest.mark.slow
def test_a_name_another_author_published_meanwhile_keeps_it_private_and_says_why(
        anonymous, author):
    secret = anonymous["secret"]
    judged_submission(anonymous["benchmark"], author, SECRET.lower().title(), seed=4)
    Submission.objects.filter(pk=secret.pk).update(
        anonymous_until=timezone.now() - timedelta(seconds=1))
    mail.outbox.clear()
    assert anonymity.reveal(secret.pk)
    secret.refresh_from_db()
    assert secret.model.name == SECRET and not secret.public
    (message,) = mail.outbox
    assert "stays private" in message.subject and "is taken on this benchmark" in message.body
    assert Client().get(f"/review/{secret.review_token}/").status_code == 404


def test_an_upload_made_anonymous_keeps_its_details_for_the_reveal(client, small_bench,
                                                                    author, other_author):
    from rest_framework.test import APIClient

    from accounts.models import ApiToken
    from tests.submissions.test_api import payload

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=author, name='t')[1]}")
    when = timezone.now() + timedelta(days=30)
    response = api.post("/api/submissions/", payload(small_bench,
                                                     anonymous_until=when.isoformat()),
                        format="multipart")
    assert response.status_code == 201, response.json()
    submission = Submission.objects.select_related("model", "reveal_as").get()
    assert submission.public and submission.model.pseudonym
    assert (submission.model.organisation, submission.model.base_family) == ("", "qwen")
    assert (submission.reveal_as.name, submission.reveal_as.organisation) == ("Editor-7B", "Lab")
    detail = api.get(f"/api/submissions/{submission.pk}/").json()
    assert detail["model"] == f"Anonymous submission {submission.anonymous_number}"
    assert detail["reveals_as"] == "Editor-7B"
    assert detail["review_link"].endswith(f"/review/{submission.review_token}/")
    # A second anonymous entry takes the next number.
    api.post("/api/submissions/", payload(small_bench, model_name="Editor-8B",
                                          anonymous_until=when.isoformat()), format="multipart")
    numbers = sorted(Submission.objects.values_list("anonymous_number", flat=True))
    assert numbers == [numbers[0], numbers[0] + 1]
    # The author's list says so.
    assert client.login(username=author.username, password=CAST_PASSWORD)
    assert ">anonymous</span>" in client.get("/submissions/").content.decode()


@pytest.mark.parametrize("name", ["Anonymous submission 7", "anonymous Submission",
                                  "ANONYMOUS SUBMISSION by us"])
def test_a_name_that_reads_as_a_pseudonym_is_refused(api_author, small_bench, name):
    from tests.submissions.test_api import payload

    response = api_author.post("/api/submissions/", payload(small_bench, model_name=name),
                               format="multipart")
    assert response.status_code == 400
    assert "kept for anonymous entries" in response.json()["errors"][0]
    assert not Submission.objects.exists()


@pytest.fixture
def api_author(author):
    from rest_framework.test import APIClient

    from accounts.models import ApiToken

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user=author, name='t')[1]}")
    return api


@pytest.mark.parametrize("days, publish_days, problem", [
    (-1, None, "must be in the future"), (400, None, "at most 366 days ahead"),
    (5, 6, "must come after the publication date"), (10, 2, None), (10, None, None)])
def test_a_reveal_date_is_checked(days, publish_days, problem):
    now = timezone.now()
    found = anonymity.anonymous_problem(
        now + timedelta(days=days),
        None if publish_days is None else now + timedelta(days=publish_days))
    assert found == problem or (problem and problem in found)


@pytest.mark.slow
def test_its_attempts_count_on_its_own_row_until_the_reveal_then_in_its_authors(
        anonymous, quiet_owner, django_capture_on_commit_callbacks):
    """A count shared with the author's named rows would name them: until the reveal the
    anonymous row counts its own attempt, the author's rows and page the others (dates too);
    from the reveal on the author's count holds them all."""
    from submissions.attempts import attempt_dates, attempts_by_model

    benchmark, secret = anonymous["benchmark"], anonymous["secret"]
    named = judged_submission(benchmark, quiet_owner, "Quiet Public Model", seed=5)
    judged_submission(benchmark, quiet_owner, "Quiet Private Try", seed=6, public=False)
    counts = attempts_by_model(SLUG, [secret.model_id, named.model_id])
    assert counts == {secret.model_id: 1, named.model_id: 2}
    assert len(attempt_dates(quiet_owner.pk, SLUG)) == 2
    with django_capture_on_commit_callbacks(execute=True):
        board_refresh(Benchmark.objects.get(pk=benchmark.pk))
    rows = {r["model"]: r["attempts"] for r in Client().get(
        f"/api/leaderboards/{SLUG}/").json()["rows"]}
    assert rows[secret.model.name] == 1 and rows["Quiet Public Model"] == 2
    page = Client().get(f"/m/{named.model_id}/").content.decode()
    assert "2 attempts by the author" in page
    Submission.objects.filter(pk=secret.pk).update(
        anonymous_until=timezone.now() - timedelta(seconds=1))
    assert anonymity.reveal(secret.pk)
    revealed = Submission.objects.get(pk=secret.pk)
    assert attempts_by_model(SLUG, [revealed.model_id, named.model_id]) == {
        revealed.model_id: 3, named.model_id: 3}
    assert len(attempt_dates(quiet_owner.pk, SLUG)) == 3


@pytest.mark.slow
def test_a_deleted_entrys_number_is_never_given_again(anonymous, quiet_owner, staff):
    from submissions.moderation import submission_delete

    secret = anonymous["secret"]
    number, pseudonym = secret.anonymous_number, secret.model_id
    submission_delete(actor=staff, submission=secret, reason="asked by its author")
    assert not ModelEntry.objects.filter(pk=pseudonym).exists()  # it went with its entry
    again = judged_submission(anonymous["benchmark"], quiet_owner, "Second Quiet Editor",
                              seed=7)
    anonymity.anonymous_entry(again, timezone.now() + timedelta(days=1))
    again.save()
    assert again.anonymous_number > number
    assert again.model.name == f"Anonymous submission {again.anonymous_number}"


@pytest.mark.slow
def test_a_rejected_anonymous_upload_never_rewrites_its_models_details(anonymous):
    """As an ordinary upload's: details sent with an upload apply only once it passed
    validation, at the reveal for an anonymous one."""
    secret = anonymous["secret"]
    Submission.objects.filter(pk=secret.pk).update(
        status=Submission.Status.REJECTED, model_details={"organisation": "Hijacked Org"},
        anonymous_until=timezone.now() - timedelta(seconds=1))
    assert anonymity.reveal(secret.pk)
    assert ModelEntry.objects.get(pk=secret.reveal_as_id).organisation == LAB
    passed = judged_submission(anonymous["benchmark"], secret.owner, "Another Quiet One",
                               seed=8)
    ModelEntry.objects.filter(pk=passed.model_id).update(organisation="Old Lab")
    passed.refresh_from_db()
    anonymity.anonymous_entry(passed, timezone.now() - timedelta(seconds=1))
    passed.model_details = {"organisation": "New Lab"}
    passed.save()
    assert anonymity.reveal(passed.pk)
    assert ModelEntry.objects.get(pk=passed.reveal_as_id).organisation == "New Lab"


@pytest.mark.slow
@pytest.mark.parametrize("on", ["pseudonym", "model"])
def test_the_pseudonym_and_its_model_declare_one_family(anonymous, on):
    from submissions.services import model_family_set

    secret = anonymous["secret"]
    target = secret.model_id if on == "pseudonym" else secret.reveal_as_id
    model_family_set(user=secret.owner, model_id=target, family="llama")
    assert {m.base_family for m in ModelEntry.objects.filter(
        pk__in=[secret.model_id, secret.reveal_as_id])} == {"llama"}
    Submission.objects.filter(pk=secret.pk).update(
        anonymous_until=timezone.now() - timedelta(seconds=1))
    assert anonymity.reveal(secret.pk)
    assert ModelEntry.objects.get(pk=secret.reveal_as_id).base_family == "llama"


@pytest.mark.slow
def test_the_migration_takes_every_number_an_entry_already_holds(anonymous):
    import importlib
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection

    from submissions.models import AnonymousNumber

    Submission.objects.filter(pk=anonymous["secret"].pk).update(anonymous_number=7)
    AnonymousNumber.objects.all().delete()
    migration = importlib.import_module("submissions.migrations.0016_anonymous_numbers")
    migration.numbers_taken(apps, SimpleNamespace(connection=connection))
    assert AnonymousNumber.objects.count() == 7
    assert AnonymousNumber.objects.create().pk == 8
