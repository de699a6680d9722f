"""Every staff page and action, found from the URL configuration (so a new one is covered the
day it is added): anyone but staff gets 403 or 404, GET and POST alike, and nothing is
changed or audited."""

import re

import pytest
from django.urls import URLResolver, get_resolver

from audit.models import AuditEvent
from scoring.models import Benchmark, JudgeConfig
from submissions.models import ModelEntry, Submission
from tests.conftest import judge_config


def _routes(patterns, prefix=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern)


STAFF_ROUTES = sorted(r for r in _routes(get_resolver().url_patterns)
                      if r.startswith("staff/"))


def _views(patterns, prefix="", namespace=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _views(pattern.url_patterns, prefix + str(pattern.pattern),
                              pattern.namespace or namespace)
        else:
            yield prefix + str(pattern.pattern), namespace, pattern.callback


def test_every_staff_page_sits_under_one_prefix_and_namespace():
    views = list(_views(get_resolver().url_patterns))
    staff = [(route, namespace) for route, namespace, view in views
             if getattr(view, "staff_only", False)]
    assert len(staff) == len(STAFF_ROUTES) > 10
    assert all(route.startswith("staff/") and namespace == "staff"
               for route, namespace in staff), staff


def test_the_staff_pages_are_found():
    assert {"staff/submissions/", "staff/submissions/<int:pk>/delete/", "staff/quotas/",
            "staff/audit/"} <= set(STAFF_ROUTES)


@pytest.fixture
def objects(author):
    """Real objects for the routes' parameters, so a 404 is the access check's, not a
    missing row's."""
    benchmark = Benchmark.objects.create(
        slug="mmae", kind="mmae", version=1, title="MMAE", sha256="a" * 64,
        source_name="MMAE-meta.json", audio_root="/x", n_items=4, n_criteria=30)
    config = judge_config(["http://127.0.0.1:9"], benchmark=benchmark)
    model = ModelEntry.objects.create(owner=author, name="Model A")
    submission = Submission.objects.create(owner=author, model=model, benchmark=benchmark,
                                           public=True, status="rejected")
    return {"pk": submission.pk, "config_id": config.pk, "benchmark": benchmark}


def url_of(route: str, objects: dict) -> str:
    return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(objects.get(m.group(1), 1)), route)


@pytest.mark.parametrize("who", ["author", "other_author", "anonymous"])
@pytest.mark.parametrize("route", STAFF_ROUTES)
def test_anyone_but_staff_gets_403_or_404(client, objects, request, who, route):
    if who != "anonymous":
        client.force_login(request.getfixturevalue(who))
    url = url_of(route, objects)
    data = {"benchmark": "mmae", "reason": "r", "confirm": str(objects["pk"]),
            "hidden": "true", "flagged": "true", "username": "author", "per_day": "99",
            "config": str(objects["config_id"]), "action": "rescore"}
    assert client.get(url).status_code in (403, 404), url
    assert client.post(url, data).status_code in (403, 404), url
    assert not AuditEvent.objects.exists()
    assert Submission.objects.filter(pk=objects["pk"], hidden=False, flag_reason="").exists()
    assert JudgeConfig.objects.count() == 1
