import pytest

from scoring.models import Benchmark

pytestmark = pytest.mark.django_db


def make(slug, version=1, synthetic=False):
    return Benchmark.objects.create(slug=slug, kind="mmae", version=version, title=slug,
                                    sha256=f"{slug}{version}".ljust(64, "0"),
                                    source_name="m.json", audio_root="/x", synthetic=synthetic,
                                    n_items=1, n_criteria=1)


def test_the_home_page_prefers_a_real_benchmark_over_a_synthetic_one(client):
    make("mmae-demo", synthetic=True)
    make("mmae")
    assert client.get("/")["Location"] == "/b/mmae/"


def test_the_home_page_opens_the_demo_when_it_is_all_there_is(client):
    make("mmae-demo", synthetic=True)
    assert client.get("/")["Location"] == "/b/mmae-demo/"


def test_the_home_page_says_how_to_import_when_empty(client):
    response = client.get("/")
    assert "No benchmark imported yet" in response.content.decode()


def test_a_board_shows_its_newest_version(client):
    make("mmae", 1)
    make("mmae", 2)
    html = client.get("/b/mmae/").content.decode()
    assert "v2" in html and "v1 " not in html
