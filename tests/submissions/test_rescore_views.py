"""The rescore API and the staff rescoring page: who may, bad input, dry run, confirmation."""

import pytest
from rest_framework.test import APIClient

from audit.models import AuditEvent
from scoring.models import Benchmark, JudgeConfig, ScoringRun
from submissions.models import ModelEntry, Submission
from tests.conftest import CAST_PASSWORD, judge_config
from tests.html import one

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished(author):
    """A finished submission (no judge needed: nothing here is scored)."""
    benchmark = Benchmark.objects.create(
        slug="mmae", kind="mmae", version=1, title="MMAE", sha256="a" * 64,
        source_name="MMAE-meta.json", audio_root="/x", n_items=0, n_criteria=0)
    config = judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    run = ScoringRun.objects.create(
        benchmark=benchmark, judge_config=config, audio_root="/x", judge_model="j",
        prompt_sha256=config.prompt_sha256, rounds=3, max_attempts=5, status="finished")
    model = ModelEntry.objects.create(owner=author, name="Echo Editor")
    submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                           public=True, status="queued", current_run=run)
    submission.runs.add(run)
    return submission


def api(user=None):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_staff_rescore_a_submission_through_the_api(finished, staff):
    url = f"/api/submissions/{finished.id}/rescore/"
    response = api(staff).post(url, {"reason": "judge fix", "dry_run": True}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["dry_run"] is True and response.json()["queries"] == 0
    assert ScoringRun.objects.count() == 1
    response = api(staff).post(url, {"reason": "judge fix"}, format="json")
    assert response.status_code == 202, response.content
    run = ScoringRun.objects.get(id=response.json()["run"]["id"])
    # Its benchmark has no item: nothing to ask, so it goes straight to aggregation.
    assert run.purpose == "rescore" and run.status == "aggregating"
    event = AuditEvent.objects.get()
    assert (event.action, event.reason, event.object_id) == ("rescore", "judge fix",
                                                             str(finished.id))
    response = api(staff).post(url, {"reason": "again"}, format="json")
    assert response.status_code == 409  # its rescore is in progress
    assert "run in progress" in response.json()["errors"][0]


def test_the_rescore_api_is_staff_only(finished, author, other_author):
    url = f"/api/submissions/{finished.id}/rescore/"
    assert api(author).post(url, {"reason": "x"}, format="json").status_code == 403
    # Published: anyone may know it exists, no one else may manage it.
    assert api(other_author).post(url, {"reason": "x"}, format="json").status_code == 403
    assert api().post(url, {"reason": "x"}, format="json").status_code == 403
    Submission.objects.filter(pk=finished.pk).update(public=False)
    assert api(other_author).post(url, {"reason": "x"}, format="json").status_code == 404
    assert api().post(url, {"reason": "x"}, format="json").status_code == 404
    assert api(author).get(url).status_code == 405
    assert ScoringRun.objects.count() == 1 and not AuditEvent.objects.exists()


def test_the_rescore_api_names_bad_input(finished, staff):
    url = f"/api/submissions/{finished.id}/rescore/"
    response = api(staff).post(url, {}, format="json")
    assert response.status_code == 400 and "reason" in response.json()["errors"][0]
    response = api(staff).post(url, {"reason": "x", "judge_config": "nope"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == ["judge_config: no judge config named 'nope'"]
    foreign = judge_config(["http://127.0.0.1:9"], prompt_sha256="0" * 64)
    response = api(staff).post(url, {"reason": "x", "judge_config": foreign.name},
                               format="json")
    assert response.status_code == 400 and "other prompts" in response.json()["errors"][0]
    assert api(staff).post("/api/submissions/999999/rescore/", {"reason": "x"},
                           format="json").status_code == 404
    assert ScoringRun.objects.count() == 1


@pytest.mark.parametrize("path", ["/staff/rescore/?benchmark=mmae",
                                  "/staff/rescore/current-config/"])
def test_the_staff_pages_are_404_for_everyone_else(client, finished, author, path):
    for login in (None, author):
        if login:
            client.login(username=login.username, password=CAST_PASSWORD)
        assert client.get(path).status_code == 404
        assert client.post(path, {"benchmark": "mmae", "action": "rescore"}).status_code == 404
    assert ScoringRun.objects.count() == 1


def form(finished, **changes):
    config = JudgeConfig.objects.get(benchmarks=finished.benchmark)
    return {"benchmark": "mmae", "config": config.id, "scope": "all", "reason": "judge fix",
            "action": "preview", **changes}


def test_a_dry_run_then_a_typed_confirmation_rescores(client, finished, staff):
    client.force_login(staff)
    response = client.post("/staff/rescore/", form(finished))
    assert response.status_code == 200
    dry_run = one(response, "#dry-run")
    assert dry_run.one("p").text.startswith("1 submission(s) under ")
    assert dry_run.select("p strong")[0].text == "1"
    assert one(dry_run, 'button[name=action][value=rescore]').text == "Rescore 1 submission(s)"
    assert ScoringRun.objects.count() == 1
    response = client.post("/staff/rescore/", form(finished, action="rescore", expected=1,
                                                   confirm="wrong"))
    assert response.status_code == 400
    assert "type the benchmark&#x27;s slug (mmae) to confirm" in response.content.decode()
    response = client.post("/staff/rescore/", form(finished, action="rescore", expected=3,
                                                   confirm="mmae"))
    assert response.status_code == 400
    assert "the selection changed since the dry run" in response.content.decode()
    assert ScoringRun.objects.count() == 1
    response = client.post("/staff/rescore/", form(finished, action="rescore", expected=1,
                                                   confirm="mmae"), follow=True)
    assert response.status_code == 200
    assert "1 rescoring run(s) queued" in response.content.decode()
    assert ScoringRun.objects.filter(purpose="rescore").count() == 1
    assert AuditEvent.objects.get().actor == staff


def test_the_staff_page_names_bad_input(client, finished, staff):
    client.force_login(staff)
    response = client.post("/staff/rescore/", form(finished, scope="one"))
    assert response.status_code == 400
    assert "give the id of the submission to rescore" in response.content.decode()
    response = client.post("/staff/rescore/", form(finished, config=999999))
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert client.get("/staff/rescore/?benchmark=nope").status_code == 404
    response = client.post("/staff/rescore/", form(finished, action="rescore", expected=1,
                                                   confirm="mmae", reason=""))
    assert response.status_code == 400 and "needs a reason" in response.content.decode()
    assert ScoringRun.objects.count() == 1 and not AuditEvent.objects.exists()


def test_staff_change_the_current_judge_config_with_a_typed_confirmation(client, finished,
                                                                         staff):
    client.force_login(staff)
    other = judge_config(["http://127.0.0.1:10"], seed=3)
    data = {"benchmark": "mmae", "config": other.id, "reason": "new judge", "confirm": "x"}
    response = client.post("/staff/rescore/current-config/", data)
    assert response.status_code == 400 and "type mmae to confirm" in response.content.decode()
    response = client.post("/staff/rescore/current-config/", {**data, "confirm": "mmae"})
    assert response.status_code == 302
    assert Benchmark.objects.get(slug="mmae").judge_config == other
    event = AuditEvent.objects.get()
    assert (event.action, event.after, event.public) == ("judge_config",
                                                         {"judge_config": other.name}, True)


@pytest.mark.parametrize(("kind", "offered"), [("mmae", True), ("airbench-chat", False)])
def test_the_baselines_button_shows_for_a_kind_that_has_them(client, staff, kind, offered):
    benchmark = Benchmark.objects.create(
        slug="bench", kind=kind, version=1, title="Bench", sha256="a" * 64,
        source_name="meta.json", audio_root="/x", n_items=0, n_criteria=0)
    judge_config(["http://127.0.0.1:9"], benchmark=benchmark, kind=kind)
    client.force_login(staff)
    body = client.get("/staff/rescore/?benchmark=bench").content.decode()
    assert ("Score the calibration baselines" in body) is offered


def test_the_rescore_api_tells_its_non_staff_owner_why(finished, author):
    response = api(author).post(f"/api/submissions/{finished.id}/rescore/", {"reason": "x"},
                                format="json")
    assert response.status_code == 403
    assert response.json() == {"errors": ["only staff can rescore a submission"]}


def test_the_dry_run_marks_hidden_flagged_and_private_submissions_under_the_staff_tabs(
        client, finished, staff):
    Submission.objects.filter(pk=finished.pk).update(hidden=True, public=False,
                                                     flag_reason="copied outputs")
    client.force_login(staff)
    response = client.post("/staff/rescore/", form(finished))
    item = one(one(response, "#dry-run"), "li")
    marks = [badge.text for badge in item.select("span.badge")]
    assert marks == ["hidden by staff", "flagged", "private"]
    assert one(response, "nav.tabs.staff a.active").text == "Rescoring"
