import pytest
from django.urls import reverse

from scoring.models import Benchmark

pytestmark = pytest.mark.django_db


def test_the_home_page_lists_the_newest_version_of_each_benchmark(client):
    for version in (1, 2):
        Benchmark.objects.create(slug="mmae", kind="mmae", version=version, title="MMAE",
                                 sha256=str(version) * 64, source_name="m.json",
                                 audio_root="/x", n_items=2000, n_criteria=17741 + version)
    Benchmark.objects.create(slug="mmae-demo", kind="mmae", version=1, title="MMAE demo",
                             sha256="d" * 64, source_name="m.json", audio_root="/x",
                             synthetic=True, n_items=40, n_criteria=360)
    response = client.get(reverse("leaderboard:home"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<td>v2</td>" in html and "<td>v1</td>" in html
    assert "17743" in html and "17742" not in html
    assert html.count('class="badge synthetic"') == 1


def test_the_home_page_says_how_to_import_when_empty(client):
    response = client.get(reverse("leaderboard:home"))
    assert "No benchmark imported yet" in response.content.decode()
