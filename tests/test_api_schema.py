import json

import pytest
from django.contrib.staticfiles import finders

from tests.html import select

pytestmark = pytest.mark.django_db


def test_the_openapi_schema_lists_every_api(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["info"]["title"] == "Audio Leaderboard API"
    assert {"/api/token/", "/api/submissions/", "/api/submissions/{id}/",
            "/api/submissions/{id}/files/{name}", "/api/submissions/{id}/cancel/",
            "/api/leaderboards/{slug}/"} <= set(schema["paths"])
    parameters = {p["name"] for p in schema["paths"]["/api/leaderboards/{slug}/"]["get"]
                  ["parameters"]}
    assert {"dimension", "bucket", "format"} <= parameters


def test_the_api_docs_page_loads_swagger_ui_from_this_site_only(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    sources = [e.get("src") or e.get("href") for e in select(html, "script[src], link[href]")]
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in sources
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css" in sources
    assert "/api/docs/?script=" in sources
    assert [s for s in sources if not s.startswith("/")] == []
    assert "http://" not in html and "https://" not in html  # no CDN, no web fonts


def test_the_api_docs_script_points_swagger_ui_at_the_schema(client):
    response = client.get("/api/docs/?script=")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/javascript")
    script = response.content.decode()
    assert 'url: "/api/schema/"' in script
    assert '"validatorUrl": null' in script  # the schema is never sent to swagger.io


def test_swagger_ui_is_installed_with_the_site(client):
    for name in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert finders.find(f"drf_spectacular_sidecar/swagger-ui-dist/{name}")


def test_every_api_error_has_one_shape(client):
    body = client.get("/api/submissions/").json()
    assert body == {"errors": ["Authentication credentials were not provided."]}


# The operations of the submissions API, the token API and the staff's API.
WRITE_API = {"submissions_list", "submissions_create", "submissions_detail",
             "submissions_update", "submissions_cancel", "submissions_file",
             "submissions_rescore", "submissions_hide", "submissions_flag",
             "submissions_delete", "submissions_retry", "quotas_set", "token_create"}


def _operations(schema):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield path, method, operation


def _resolve(schema, node):
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    if node.get("type") == "array":
        return _resolve(schema, node["items"])
    return node


def test_every_response_of_the_submissions_and_token_apis_is_described(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    seen = set()
    for path, method, operation in _operations(schema):
        if operation["operationId"] not in WRITE_API:
            continue
        seen.add(operation["operationId"])
        assert any(code.startswith("4") for code in operation["responses"]), (path, method)
        for code, response in operation["responses"].items():
            content = response.get("content")
            assert content, f"{method} {path} {code} has no body described"
            for media, body in content.items():
                if media == "application/octet-stream":
                    assert body["schema"] == {"type": "string", "format": "binary"}
                    continue
                described = _resolve(schema, body["schema"])
                assert described.get("properties"), f"{method} {path} {code}: {described}"
                if code.startswith(("4", "5")):
                    assert set(described["properties"]) == {"errors"}
    assert seen == WRITE_API


def test_a_submissions_detail_describes_its_runs_and_progress(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    detail = _resolve(schema, schema["paths"]["/api/submissions/{id}/"]["get"]["responses"]
                      ["200"]["content"]["application/json"]["schema"])
    assert {"progress", "runs", "report", "overall", "coverage"} <= set(detail["properties"])
    run = _resolve(schema, detail["properties"]["runs"])
    assert {"id", "status", "judge_config", "cached_answers"} <= set(run["properties"])
    progress = _resolve(schema, detail["properties"]["progress"])
    assert set(progress["properties"]) == {"done", "total", "eta_seconds", "queue_position"}


def test_every_api_response_has_its_shape_described(client):
    """The read API too: each JSON body (or each item of a list) has named properties."""
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operations = list(_operations(schema))
    assert {"leaderboard", "benchmarks", "model", "submissions_slices"} <= {
        operation["operationId"] for _, _, operation in operations}
    for path, method, operation in operations:
        for code, response in operation["responses"].items():
            for media, body in (response.get("content") or {}).items():
                if media != "application/json":
                    continue
                described = _resolve(schema, body["schema"])
                if described.get("type") == "array":
                    described = _resolve(schema, described["items"])
                assert described.get("properties"), f"{method} {path} {code}: {described}"


def test_the_board_rows_are_described_field_by_field(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    row = schema["components"]["schemas"]["BoardRow"]["properties"]
    assert {"rank", "rank_best", "rank_worst", "model", "coverage", "judge",
            "simulated"} <= set(row)


def test_the_schema_is_made_once_per_process_and_is_the_same_for_everyone(client, staff,
                                                                           monkeypatch):
    from drf_spectacular.generators import SchemaGenerator

    from config import api_schema

    api_schema.forget()
    made = []
    get_schema = SchemaGenerator.get_schema
    monkeypatch.setattr(SchemaGenerator, "get_schema",
                        lambda self, **kwargs: made.append(1) or get_schema(self, **kwargs))
    anonymous = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    client.force_login(staff)
    assert client.get("/api/schema/", HTTP_ACCEPT="application/json").json() == anonymous
    assert "openapi: " in client.get("/api/schema/").content.decode()  # YAML from the same
    assert len(made) == 1
    api_schema.forget()  # made afresh, for a staff member
    assert client.get("/api/schema/", HTTP_ACCEPT="application/json").json() == anonymous
    assert len(made) == 2


@pytest.fixture
def counted_schemas(monkeypatch):
    """The number of schemas made from here on (a list, one item each), each made in 0.2 s."""
    import time

    from drf_spectacular.generators import SchemaGenerator

    from config import api_schema

    api_schema.forget()
    made = []
    get_schema = SchemaGenerator.get_schema

    def slow(self, **kwargs):
        made.append(1)
        time.sleep(0.2)
        return get_schema(self, **kwargs)

    monkeypatch.setattr(SchemaGenerator, "get_schema", slow)
    yield made
    api_schema.forget()


def test_an_unknown_language_or_version_is_a_400_naming_it_and_nothing_is_kept(
        client, counted_schemas):
    from config import api_schema

    for query, name in (("lang=zz-qq", "lang"), ("version=a", "version"),
                        ("version=1&lang=en", "version")):
        answer = client.get(f"/api/schema/?{query}", HTTP_ACCEPT="application/json")
        assert answer.status_code == 400, query
        assert name in json.dumps(answer.json()), answer.json()
    assert counted_schemas == [] and len(api_schema._made) == 0


@pytest.mark.slow
def test_languages_are_kept_under_the_language_they_resolve_to_and_at_most_kept_many(
        client, counted_schemas, settings, monkeypatch):
    from config import api_schema

    monkeypatch.setattr(api_schema, "KEPT", 2)  # each schema made costs about 0.3 s
    settings.LANGUAGES = [(code, code) for code in ("en", "de", "fr", "es")]
    english = client.get("/api/schema/?lang=en", HTTP_ACCEPT="application/json").json()
    assert client.get("/api/schema/?lang=en-gb", HTTP_ACCEPT="application/json").json() \
        == english
    assert len(counted_schemas) == 1
    for code, _ in settings.LANGUAGES:
        assert client.get(f"/api/schema/?lang={code}").status_code == 200
    assert len(api_schema._made) == api_schema.KEPT < len(settings.LANGUAGES)


@pytest.mark.slow
def test_visitors_at_once_make_one_schema(transactional_db, live_server, counted_schemas):
    from tests.concurrent import at_once

    answers = at_once(lambda client, i: client.get(f"{live_server.url}/api/schema/?format=json"),
                      8, clients=8)
    assert {a.status_code for a in answers} == {200}
    assert len({a.content for a in answers}) == 1
    assert len(counted_schemas) == 1
