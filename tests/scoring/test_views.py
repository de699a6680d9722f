"""The fleet page: staff only, taking endpoints out and back, judge configs' forms."""

import pytest
from django.test import Client

from audit.models import AuditEvent
from judge.models import Endpoint
from scoring.models import JudgeConfig
from tests.conftest import judge_config
from tests.html import one, parse, select, texts

pytestmark = pytest.mark.django_db

A, B = "http://judge-a:8000", "http://judge-b:8000"
FLEET = "/staff/fleet/"


@pytest.fixture
def config(db):
    return judge_config([A, B])


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


def as_user(client, request, who):
    if who != "anonymous":
        client.force_login(request.getfixturevalue(who))
    return client


ROUTES = [("get", FLEET), ("get", FLEET + "stats/"), ("post", FLEET + "endpoint/"),
          ("post", FLEET + "probe/"), ("post", FLEET + "configs/new/"),
          ("post", FLEET + "configs/{id}/")]


@pytest.mark.parametrize("who", ["anonymous", "author"])
@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_it_is_a_404_for_anyone_but_staff(request, client, config, who, method, path):
    client = as_user(client, request, who)
    # What would change something, were the caller staff.
    data = {"base_url": A, "action": "take_out", "reason": "x",
            **{f"{prefix}-{name}": value for prefix in (f"config-{config.id}", "new")
               for name, value in {**NEW, "base_urls": A, "reason": "x"}.items()}}
    response = getattr(client, method)(path.format(id=config.id),
                                       data if method == "post" else None)
    assert response.status_code == 404
    assert Endpoint.objects.filter(enabled=False).count() == 0
    assert list(JudgeConfig.objects.values_list("base_urls", flat=True)) == [[A, B]]
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize(("method", "path"), [
    ("post", FLEET), ("post", FLEET + "stats/"), ("get", FLEET + "endpoint/"),
    ("get", FLEET + "probe/"), ("get", FLEET + "configs/new/"), ("get", FLEET + "configs/{id}/")])
def test_other_methods_are_a_405(staff_client, config, method, path):
    response = getattr(staff_client, method)(path.format(id=config.id))
    assert response.status_code == 405


def test_staff_see_each_config_its_endpoints_and_the_queue(staff_client, config):
    Endpoint.objects.create(base_url=A, healthy=False, probe_error="GET /v1/models: HTTP 503")
    response = staff_client.get(FLEET)
    assert response.status_code == 200
    page = response.content.decode()
    assert config.name in page and A in page and B in page
    assert "GET /v1/models: HTTP 503" in page
    assert "Scoring queue" in page and "rescore" in page and "baseline" in page
    assert one(page, "#fleet-stats").get("hx-get") == "/staff/fleet/stats/"
    assert "New judge config" in page


def test_endpoints_the_simulator_answers_are_named_so(staff_client, config):
    from django.utils import timezone

    for url in (A, B):
        Endpoint.objects.create(base_url=url, healthy=True, simulator=True,
                                last_probe_at=timezone.now())
    page = staff_client.get(FLEET).content.decode()
    assert texts(page, "td.endpoint span.badge.simulated") == ["judge simulator"] * 2
    (meta,) = [p for p in select(page, "#fleet-stats p.meta")
               if "judge simulator" in texts(p, "strong")]
    assert meta.text.startswith("judge simulator (not a model; it stands in for ")
    Endpoint.objects.filter(base_url=B).update(simulator=False)
    page = staff_client.get(FLEET).content.decode()
    assert "judge simulator" not in texts(page, "strong")


def test_the_stats_partial_is_the_refreshing_part_alone(staff_client, config):
    response = staff_client.get(FLEET + "stats/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="fleet-stats"')
    document = parse(body)
    assert [e.tag for e in document.children if not isinstance(e, str)] == ["section"]
    assert select(document, "html") == [] and A in document.one("#fleet-stats").text


def test_taking_an_endpoint_out_and_back_from_the_page(staff_client, staff, config):
    response = staff_client.post(FLEET + "endpoint/", {"base_url": A, "action": "take_out",
                                                       "reason": "replacing a GPU"})
    assert response.status_code == 302 and response.url == FLEET
    endpoint = Endpoint.objects.get(base_url=A)
    assert endpoint.enabled is False and endpoint.disabled_reason == "replacing a GPU"
    page = staff_client.get(FLEET).content.decode()
    assert "is out of service" in page and "taken out" in page and "Put back" in page
    staff_client.post(FLEET + "endpoint/", {"base_url": A, "action": "put_back"})
    assert Endpoint.objects.get(base_url=A).enabled is True
    events = AuditEvent.objects.order_by("id")
    assert [(e.action, e.actor, e.after["enabled"]) for e in events] == [
        ("endpoint", staff, False), ("endpoint", staff, True)]


def test_taking_out_without_a_reason_changes_nothing_and_says_so(staff_client, config):
    response = staff_client.post(FLEET + "endpoint/", {"base_url": A, "action": "take_out",
                                                       "reason": ""}, follow=True)
    assert "say why the endpoint is taken out" in response.content.decode()
    assert not Endpoint.objects.filter(enabled=False).exists()
    assert not AuditEvent.objects.exists()


def test_an_unknown_endpoint_or_action_changes_nothing(staff_client, config):
    response = staff_client.post(FLEET + "endpoint/", {"base_url": "http://other:1",
                                                       "action": "take_out", "reason": "x"},
                                 follow=True)
    assert "not an endpoint of any judge config" in response.content.decode()
    response = staff_client.post(FLEET + "endpoint/", {"base_url": A, "action": "delete",
                                                       "reason": "x"}, follow=True)
    assert "Nothing changed" in response.content.decode()
    assert not Endpoint.objects.filter(enabled=False).exists()


def test_a_post_without_the_csrf_token_is_refused(staff, config):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    response = client.post(FLEET + "endpoint/", {"base_url": A, "action": "take_out",
                                                 "reason": "x"})
    assert response.status_code == 403
    assert not Endpoint.objects.filter(enabled=False).exists()


def edit(client, config, **data):
    data = {"base_urls": f"{A}\n{B}", "max_attempts": 5, "reason": "r", **data}
    return client.post(f"{FLEET}configs/{config.id}/",
                       {f"config-{config.id}-{name}": value for name, value in data.items()})


def create(client, **data):
    return client.post(FLEET + "configs/new/",
                       {f"new-{name}": value for name, value in {**NEW, **data}.items()})


def test_staff_change_a_configs_endpoints_and_retry_budget(staff_client, staff, config):
    response = edit(staff_client, config, base_urls=f"{B}\r\nhttp://judge-c:8000/\n\n",
                    max_attempts=3, reason="judge-a retired")
    assert response.status_code == 302
    config.refresh_from_db()
    assert (config.base_urls, config.max_attempts) == ([B, "http://judge-c:8000"], 3)
    event = AuditEvent.objects.get()
    assert (event.action, event.actor, event.reason) == ("judge_config", staff, "judge-a retired")
    assert (event.before["base_urls"], event.after["base_urls"]) == (
        [A, B], [B, "http://judge-c:8000"])


@pytest.mark.parametrize(("data", "message"), [
    ({"base_urls": "ftp://judge:21"}, "is not an http(s) URL"),
    ({"base_urls": "judge-a:8000"}, "is not an http(s) URL"),
    ({"base_urls": " \n "}, "give at least one base URL"),
    ({"base_urls": f"{A}\n{A}/"}, "the same URL is listed twice"),
    ({"base_urls": "http://judge:99999"}, "has an invalid port"),
    ({"max_attempts": 0}, "greater than or equal to 1"),
    ({"reason": ""}, "This field is required"),
])
def test_a_bad_config_change_is_refused_naming_the_problem(staff_client, config, data, message):
    response = edit(staff_client, config, **data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert "open" in one(response, f"details#edit-config-{config.id}").attrs
    config.refresh_from_db()
    assert (config.base_urls, config.max_attempts) == ([A, B], 5)
    assert not AuditEvent.objects.exists()


def test_editing_a_config_that_does_not_exist_is_a_404(staff_client):
    assert edit(staff_client, JudgeConfig(id=999)).status_code == 404


NEW = {"kind": "mmae", "name": "mmae-qwen-8gpu", "judge_model": "Qwen3-Omni-30B-A3B-Instruct",
       "base_urls": f"{A}\n{B}", "rounds": "", "seed": 7, "temperature": 0.0,
       "max_tokens": 1024, "max_attempts": 4, "notes": "eight servers", "reason": "new rack"}


def test_staff_create_a_judge_config(staff_client, staff):
    response = create(staff_client)
    assert response.status_code == 302
    config = JudgeConfig.objects.get(name="mmae-qwen-8gpu")
    assert config.base_urls == [A, B] and config.rounds == 3 and config.seed == 7
    assert config.sampling == {"temperature": 0.0, "max_tokens": 1024, "top_p": 1.0,
                               "top_k": -1, "repetition_penalty": 1.0}
    assert (config.max_attempts, config.created_by) == (4, staff)
    event = AuditEvent.objects.get()
    assert (event.action, event.reason, event.after["name"]) == (
        "judge_config", "new rack", "mmae-qwen-8gpu")


@pytest.mark.parametrize(("data", "message"), [
    ({"base_urls": "mailto:judge@example.com"}, "is not an http(s) URL"),
    ({"base_urls": ""}, "give at least one base URL"),
    ({"name": "has spaces"}, "Enter a valid"),
    ({"kind": "nonsense"}, "Select a valid choice"),
    ({"rounds": 0}, "greater than or equal to 1"),
    ({"temperature": -1}, "greater than or equal to 0"),
])
def test_a_bad_new_config_is_refused_naming_the_problem(staff_client, data, message):
    response = create(staff_client, **data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert "open" in one(response, "details#new-config").attrs
    assert not JudgeConfig.objects.exists() and not AuditEvent.objects.exists()


def test_a_config_name_is_taken_once(staff_client, config):
    response = create(staff_client, name=config.name)
    assert response.status_code == 400
    assert "exists already" in response.content.decode()
    assert JudgeConfig.objects.count() == 1


def test_probe_now_probes_every_endpoint_and_says_which_are_down(staff_client, config,
                                                                  settings):
    settings.FLEET_PROBE_TIMEOUT = 1
    response = staff_client.post(FLEET + "probe/", follow=True)
    assert "Probed 2 endpoint(s); down: " in response.content.decode()
    assert set(Endpoint.objects.values_list("base_url", "healthy")) == {(A, False), (B, False)}
