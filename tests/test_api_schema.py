import re

import pytest
from django.contrib.staticfiles import finders

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
    sources = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', html)
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
