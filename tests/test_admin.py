"""The Django admin: every model registered, every changelist and change page open to staff
and closed to everyone else, platform-owned state read-only, and no page that loads a large
table into a select box or a query per row."""

import pytest
from django.contrib import admin
from django.db import models
from django.urls import reverse

from accounts.models import ApiToken
from audit.models import AuditEvent
from challenges.models import Challenge, Entry, Phase, PhaseBoard, Team, Track, Verification
from config.admin import ReadOnlyAdmin
from judge.models import Endpoint
from leaderboard.models import ReferenceFigure, ReferenceResult
from scoring.models import (
    Answer,
    Benchmark,
    Criterion,
    Item,
    ItemResult,
    JudgeConfig,
    RunBatch,
    ScoringRun,
    SliceResult,
)
from submissions.models import ModelEntry, QuotaOverride, Submission
from tests.challenges.challenge_factories import add_team, build_challenge
from tests.html import one, select
from tests.submissions import conftest as submissions_fixtures

OURS = {"judge", "scoring", "submissions", "leaderboard", "challenges", "accounts", "audit"}
REQUIRED = [Benchmark, Item, Criterion, JudgeConfig, Submission, ModelEntry, ScoringRun,
            RunBatch, Answer, Endpoint, ReferenceResult, AuditEvent, QuotaOverride, ApiToken,
            ItemResult, SliceResult]
READ_ONLY = [ScoringRun, RunBatch, Answer, ItemResult, SliceResult, AuditEvent]
# Changed on the organizer pages and by the challenge commands, which audit each change and
# raise the boards' versions (a phase's reveal has one door: challenges.reveal).
CHALLENGE_STATE = [Challenge, Phase, Track, PhaseBoard, Entry, Verification]

score_with_files = submissions_fixtures.score_with_files  # the submissions tests' factory


@pytest.fixture
def world(score_with_files, author, staff):
    """One row of every model."""
    submission = score_with_files("Alpha")
    run = submission.current_run
    item = Item.objects.create(benchmark=score_with_files.benchmark, position=0, key="s1",
                               dimensions={"modality": "sound"}, content={})
    criterion = Criterion.objects.create(item=item, index=0, category="content",
                                         question="Is it louder?",
                                         spec={"right": "yes", "wrong": ["no"]})
    RunBatch.objects.create(run=run, index=0, item_keys=["s1"])
    Answer.objects.create(run=run, criterion=criterion, round=0, choices=["yes", "no"],
                          verdict={"correct_letter": "A", "correct": True}, choice="A",
                          attempts=1)
    ItemResult.objects.create(run=run, item=item, passed=True, score=1.0, values={
        "IFR": 100.0, "CR": 100.0, "EM": 1, "rubric_scores": [1]})
    Endpoint.objects.create(base_url="http://127.0.0.1:8001", healthy=True)
    result = ReferenceResult.objects.create(benchmark_slug="mmae", model="Paper-Model",
                                            scope="2,000 samples", source="a paper")
    ReferenceFigure.objects.create(result=result, dimension="overall",
                                   values={"IFR": 50.7, "CR": 56.9, "EMR": 4.99})
    AuditEvent.objects.create(actor=staff, actor_name="staff", action="flag",
                              object_type="submission", object_id=str(submission.pk),
                              object_repr=str(submission), reason="checking")
    QuotaOverride.objects.create(user=author, per_day=9, reason="a lab", set_by=staff)
    ApiToken.issue(user=author, name="ci")
    return submission


@pytest.fixture
def superuser(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.com", "pw-root-1")


def admin_urls():
    """(model, changelist URL, URL of its first row's change page or None)."""
    for model in admin.site._registry:
        meta = model._meta
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        first = model._default_manager.order_by("pk").first()
        change = reverse(f"admin:{meta.app_label}_{meta.model_name}_change",
                         args=[first.pk]) if first else None
        yield model, changelist, change


def test_every_model_is_registered():
    assert [m.__name__ for m in REQUIRED if m not in admin.site._registry] == []


@pytest.mark.slow
def test_staff_open_every_changelist_search_and_change_page(client, world, superuser):
    client.force_login(superuser)
    opened = set()
    for model, changelist, change in admin_urls():
        assert client.get(changelist).status_code == 200, changelist
        assert client.get(changelist, {"q": "abc"}).status_code == 200, changelist
        if change:
            assert client.get(change).status_code == 200, change
            opened.add(model)
    assert set(REQUIRED) <= opened


@pytest.mark.parametrize("who", ["visitor", "author"])
def test_anyone_else_is_sent_to_the_log_in(client, world, author, who):
    if who == "author":
        client.force_login(author)
    for _, changelist, change in admin_urls():
        for url in filter(None, (changelist, change)):
            response = client.get(url)
            assert response.status_code == 302, url
            assert response["Location"].startswith("/admin/login/?next="), url


@pytest.mark.parametrize("model", READ_ONLY + [Submission, Item, Criterion, QuotaOverride])
def test_platform_owned_state_is_read_only(client, world, superuser, model):
    client.force_login(superuser)
    meta = model._meta
    row = model.objects.first()
    change = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[row.pk])
    page = client.get(change).content.decode()
    assert select(page, "[name=_save]") == []
    assert client.post(change, {}).status_code == 403
    assert client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_add")) \
        .status_code == 403
    delete = reverse(f"admin:{meta.app_label}_{meta.model_name}_delete", args=[row.pk])
    assert client.post(delete, {"post": "yes"}).status_code == 403
    assert model.objects.filter(pk=row.pk).exists()


def test_a_token_can_be_revoked_but_its_hash_is_never_shown(client, world, superuser):
    client.force_login(superuser)
    token = ApiToken.objects.get()
    url = reverse("admin:accounts_apitoken_change", args=[token.pk])
    page = client.get(url).content.decode()
    assert "key_hash" not in page and token.key_hash not in page
    response = client.post(url, {"name": "ci (revoked)", "revoked_at_0": "2026-01-02",
                                 "revoked_at_1": "03:04:05"})
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.name == "ci (revoked)" and not token.active


def test_a_reported_result_shows_its_figures_inline(client, world, superuser):
    client.force_login(superuser)
    result = ReferenceResult.objects.get()
    page = client.get(reverse("admin:leaderboard_referenceresult_change", args=[result.pk]))
    values = one(page, "textarea[name=figures-0-values]")
    assert '"EMR": 4.99' in values.text


def our_admins():
    return [(model, model_admin) for model, model_admin in admin.site._registry.items()
            if model._meta.app_label in OURS]


def test_no_form_loads_a_related_table_into_a_select():
    offenders = []
    for model, model_admin in our_admins():
        if isinstance(model_admin, ReadOnlyAdmin):
            continue  # related rows show as links
        picked = set(model_admin.raw_id_fields) | set(model_admin.autocomplete_fields) \
            | set(model_admin.get_readonly_fields(None)) | set(model_admin.exclude or ())
        if model_admin.fields is not None:
            picked |= {f.name for f in model._meta.get_fields()} - set(model_admin.fields)
        offenders += [f"{model.__name__}.{field.name}" for field in model._meta.get_fields()
                      if isinstance(field, (models.ForeignKey, models.ManyToManyField))
                      and field.name not in picked]
    assert offenders == []


def test_no_list_filter_lists_a_related_table():
    offenders = [f"{model.__name__}.{name}" for model, model_admin in our_admins()
                 for name in model_admin.list_filter
                 if isinstance(name, str) and "__" not in name
                 and model._meta.get_field(name).is_relation]
    assert offenders == []


def test_changelists_join_the_related_rows_they_show():
    missing = []
    for model, model_admin in our_admins():
        for name in model_admin.list_display:
            try:
                field = model._meta.get_field(name)
            except Exception:
                continue  # a method or "__str__"
            if field.is_relation and name not in (model_admin.list_select_related or ()):
                missing.append(f"{model.__name__}.{name}")
    assert missing == []


@pytest.mark.slow
def test_a_changelist_costs_the_same_queries_for_one_row_or_many(client, world, superuser,
                                                                  score_with_files,
                                                                  django_assert_max_num_queries):
    client.force_login(superuser)
    urls = [changelist for model, changelist, _ in admin_urls()
            if model._meta.app_label in OURS]
    counts = {}
    for url in urls:
        with django_assert_max_num_queries(50) as captured:
            client.get(url)
        counts[url] = len(captured)
    for n in range(5):
        score_with_files(f"Model {n}")
    for url in urls:
        with django_assert_max_num_queries(counts[url]) as captured:
            assert client.get(url).status_code == 200


LONG = "Echo Editor " + "x" * 188  # 200 characters, as long as a model's name may be


def test_long_names_are_cut_in_the_changelists_and_whole_in_their_title(client, world,
                                                                        superuser):
    submission = world
    submission.model.name = LONG
    submission.model.save()
    ReferenceResult.objects.update(model=LONG)
    AuditEvent.objects.create(actor_name="staff", action="flag", object_type="submission",
                              object_id=str(submission.pk), object_repr=LONG, reason="x")
    client.force_login(superuser)
    shown = f'<span class="cut-name" title="{LONG}">{LONG[:39]}…</span>'
    for model in (ModelEntry, Submission, ReferenceResult, AuditEvent):
        meta = model._meta
        html = client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")) \
            .content.decode()
        assert shown in html, model.__name__
        assert f">{LONG}<" not in html, model.__name__


def test_the_submission_changelist_says_a_finished_submission_is_finished(client, world,
                                                                          superuser):
    """Its own column keeps "queued" once its run is made; the list says what every page
    says: the run's state."""
    from tests.html import texts

    submission = world
    assert submission.status == "queued" and submission.state == "finished"
    client.force_login(superuser)
    html = client.get(reverse("admin:submissions_submission_changelist")).content.decode()
    assert texts(html, "td.field-state") == ["finished"]


def test_every_model_is_named_in_good_english_in_the_plural():
    """Django adds an "s": "run batchs" was on the admin's index."""
    from django.apps import apps

    wrong = [str(m._meta.verbose_name_plural) for m in apps.get_models()
             if str(m._meta.verbose_name_plural).endswith(("chs", "shs", "xs", "ys", "ss"))]
    assert wrong == []


def version(benchmark) -> int:
    return Benchmark.objects.get(pk=benchmark.pk).board_version


def test_a_challenges_state_is_read_only_here(client, superuser):
    assert [m.__name__ for m in CHALLENGE_STATE
            if not isinstance(admin.site._registry[m], ReadOnlyAdmin)] == []
    built = build_challenge()
    client.force_login(superuser)
    change = reverse("admin:challenges_phase_change", args=[built.final.pk])
    assert client.post(change, {"revealed_at_0": "2026-01-02", "revealed_at_1": "03:04:05"}) \
        .status_code == 403
    assert Phase.objects.get(pk=built.final.pk).revealed_at is None


def test_a_model_renamed_here_shows_at_once_on_a_board_already_kept(client, world, superuser):
    """Every cache of the test settings holds the board before the edit; the edit raises the
    version (scoring.admin.BoardAdmin), so the next visit reads the new name."""
    benchmark = world.benchmark
    assert "Alpha" in client.get(f"/b/{benchmark.slug}/").content.decode()
    before = version(benchmark)
    model = world.model
    client.force_login(superuser)
    url = reverse("admin:submissions_modelentry_change", args=[model.pk])
    form = {"name": "Alpha Renamed", "organisation": model.organisation, "link": model.link,
            "licence": model.licence, "parameters": model.parameters or "",
            "base_family": model.base_family, "owner": model.owner_id}
    response = client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert version(benchmark) > before
    client.logout()
    rows = client.get(f"/api/leaderboards/{benchmark.slug}/").json()["rows"]
    assert [r["model"] for r in rows] == ["Alpha Renamed"]


def test_a_title_a_reported_figure_and_a_team_edited_here_raise_their_boards(client, world,
                                                                             superuser):
    benchmark = world.benchmark
    client.force_login(superuser)
    before = version(benchmark)
    url = reverse("admin:scoring_benchmark_change", args=[benchmark.pk])
    assert client.post(url, {"title": "A new title", "rubrics_hidden": "on",
                             "board_version": "0"}).status_code == 302
    assert version(benchmark) == before + 1
    edited = Benchmark.objects.get(pk=benchmark.pk)
    assert (edited.title, edited.rubrics_hidden) == ("A new title", False)  # the title only

    result = ReferenceResult.objects.get()
    Benchmark.objects.filter(pk=benchmark.pk).update(slug=result.benchmark_slug)
    figure = result.figures.get()
    url = reverse("admin:leaderboard_referenceresult_change", args=[result.pk])
    form = {"benchmark_slug": result.benchmark_slug, "model": result.model,
            "scope": result.scope, "source": result.source, "note": "",
            "n_samples": "", "figures-TOTAL_FORMS": "1", "figures-INITIAL_FORMS": "1",
            "figures-MIN_NUM_FORMS": "0", "figures-MAX_NUM_FORMS": "1000",
            "figures-0-id": figure.pk, "figures-0-result": result.pk,
            "figures-0-dimension": "overall", "figures-0-bucket": "",
            "figures-0-values": '{"IFR": 51.0, "CR": 56.9, "EMR": 4.99}'}
    response = client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert result.figures.get().values["IFR"] == 51.0
    assert version(benchmark) == before + 2

    built = build_challenge()
    team = add_team(built, "Team A")
    boards = [b.benchmark for b in built.boards.values()]
    before = {b.pk: version(b) for b in boards}
    url = reverse("admin:challenges_team_change", args=[team.pk])
    response = client.post(url, {"name": "Team Renamed"})
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Team.objects.get(pk=team.pk).name == "Team Renamed"
    assert all(version(b) == before[b.pk] + 1 for b in boards)
