"""Who submitted a row, in Chromium at a desktop's width (1366 px) and a phone's (390 px): the
"by" line sits under the model's name inside its cell, the column stays as narrow as before,
the attempts column (each author's scored submissions) is reached inside the table's own
scroller, and nothing scrolls the page sideways. Screenshots:
artifacts/screenshots/by-<width>.png and by-<width>-attempts.png."""

import pytest
from allauth.socialaccount.models import SocialAccount
from django.core.management import call_command

from scoring.boards import board_changed
from scoring.services import benchmark_import
from scoring.synthetic import write_benchmark
from submissions.models import ModelEntry
from tests.browser.conftest import SCREENSHOTS
from tests.conftest import cast_member

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True),
              pytest.mark.timeout(120)]

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}
# The widest a board's model cell is (static/css/site.css), padding included.
WIDEST = {"desktop": 26 * 16 + 16, "phone": 12 * 16 + 15}


@pytest.fixture
def lab_owned_board(tmp_path, django_user_model):
    root = tmp_path / "bench"
    write_benchmark(root, 8, seed=3)
    benchmark, _ = benchmark_import(kind="mmae", path=root / "MMAE-meta.json",
                                    audio_root=root, slug="mmae", synthetic=True)
    call_command("seed_board", "--benchmark", "mmae", "--submissions", "6", "--processes", "1",
                 "--resamples", "20")
    owner = cast_member(django_user_model, "a-rather-long-username-of-a-lab",
                        "lab@example.com")
    SocialAccount.objects.create(user=owner, provider="github", uid="7")
    model = ModelEntry.objects.order_by("name").first()
    ModelEntry.objects.filter(pk=model.pk).update(
        owner=owner, name="Echo Editor Large v2 (instruction-tuned)",
        organisation="Example Audio Research Laboratory")
    model.submissions.update(owner=owner)
    board_changed(benchmark.id)


def attempts_seen(page) -> dict:
    """The table's scroller turned to its far right: the attempts cells' texts, and where
    their header and the scroller lie (the header must be inside it, not clipped)."""
    return page.evaluate("""() => {
        const scroller = document.querySelector("#board").closest(".scroll");
        scroller.scrollLeft = scroller.scrollWidth;
        const header = document.querySelector("#board th.col-attempts");
        return {cells: [...document.querySelectorAll("#board td.attempts")]
                    .map(td => td.textContent.trim()),
                header: header.getBoundingClientRect().toJSON(),
                scroller: scroller.getBoundingClientRect().toJSON()};
    }""")


@pytest.mark.parametrize("device", WIDTHS)
def test_the_submitter_shows_under_the_name_in_a_narrow_column(lab_owned_board, browser,
                                                               live_server, device):
    width, height = WIDTHS[device]
    context = browser.new_context(base_url=live_server.url,
                                  viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        assert page.goto("/b/mmae/").status == 200
        cells = page.evaluate("""() => [...document.querySelectorAll("#board td.model")]
            .map(td => { const box = e => e.getBoundingClientRect();
                         const by = td.querySelector("small.by"), name = td.querySelector("a");
                         return {cell: box(td).toJSON(), name: box(name).toJSON(),
                                 by: box(by).toJSON(), text: by.textContent.trim()}; })""")
        scroll, inner = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"by-{width}.png"), full_page=True)
        attempts = attempts_seen(page)
        page.screenshot(path=str(SCREENSHOTS / f"by-{width}-attempts.png"), full_page=True)
        scroll_after, _ = page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    finally:
        context.close()
    assert scroll <= inner and scroll_after <= inner, f"the board scrolls sideways at {width} px"
    assert len(cells) == 6
    # seed_board's user owns five of the models; the lab's author made one attempt.
    assert sorted(attempts["cells"]) == ["1", "5", "5", "5", "5", "5"], attempts
    assert attempts["header"]["left"] >= attempts["scroller"]["left"] - 1, attempts
    assert attempts["header"]["right"] <= attempts["scroller"]["right"] + 1, attempts
    texts = sorted(c["text"] for c in cells)
    assert texts[0] == ("by a-rather-long-username-of-a-lab verified, Example Audio Research "
                        "Laboratory")
    assert all(t == "by synthetic-board, Synthetic" for t in texts[1:]), texts
    for c in cells:
        assert c["by"]["top"] >= c["name"]["bottom"] - 1, c  # under the name
        assert c["cell"]["left"] <= c["by"]["left"] and c["by"]["right"] <= c["cell"]["right"]
        assert c["cell"]["width"] <= WIDEST[device] + 0.5, c  # (sub-pixel layout)
