import pytest

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


def test_the_api_docs_page_renders(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    assert "/api/schema/" in response.content.decode()


def test_every_api_error_has_one_shape(client):
    body = client.get("/api/submissions/").json()
    assert body == {"errors": ["Authentication credentials were not provided."]}
