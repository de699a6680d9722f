"""The API's JSON request bodies (config/parsers.py), through POST /api/token/."""

from accounts.models import ApiToken
from tests.conftest import CAST_PASSWORD


def post_json(client, body: str):
    return client.post("/api/token/", body, content_type="application/json")


def test_a_body_nested_too_deeply_is_a_400_saying_so(client, author):
    response = post_json(client, '{"username": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert response.status_code == 400
    assert response.json() == {"errors": [
        "JSON parse error - nested too deeply (more than 64 levels): line 1 column 77 "
        "(char 76)"]}
    assert not ApiToken.objects.exists()


def test_a_number_too_long_to_convert_is_a_400_saying_so_without_pythons_hint(client, author):
    response = post_json(client, '{"username": "author", "password": ' + "9" * 5000 + "}")
    assert response.status_code == 400
    assert response.json() == {"errors": [
        "JSON parse error - a number of more than 4,300 digits: line 1 column 36 (char 35)"]}
    assert not ApiToken.objects.exists()


def test_a_body_that_is_not_json_is_a_400(client, author):
    response = post_json(client, '{"username": "author", ')
    assert response.status_code == 400
    assert response.json()["errors"][0].startswith("JSON parse error - Expecting property name")


def test_nan_is_refused_as_drf_refuses_it(client, author):
    response = post_json(client, '{"username": NaN}')
    assert response.status_code == 400
    assert response.json() == {"errors": [
        "JSON parse error - Out of range float values are not JSON compliant: 'NaN'"]}


def test_a_plain_body_is_read(client, author):
    response = post_json(client, f'{{"username": "author", "password": "{CAST_PASSWORD}"}}')
    assert response.status_code == 200
    assert ApiToken.objects.get().user == author
