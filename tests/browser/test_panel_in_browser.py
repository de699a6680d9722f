"""The listening page in Chromium at a desktop's width and a phone's: the choices stay locked
until each audio was played through (timeupdate), then an answer goes to the panel API and
the next task loads; nothing scrolls sideways and the Content-Security-Policy blocks nothing.
Screenshots: artifacts/screenshots/panel-<width>-<step>.png."""

import json

import pytest
from playwright.sync_api import expect

from panel.models import PanelAnswer, PanelAssignment
from panel.services import options, panel_question
from scoring.models import Criterion
from scoring.synthetic import write_system
from tests.browser.conftest import SCREENSHOTS
from tests.browser.test_layout_in_browser import RECORD_VIOLATIONS
from tests.conftest import CAST_PASSWORD
from tests.panel.conftest import panel_board, played_since, raters  # noqa: F401 - fixtures

pytestmark = [pytest.mark.integration, pytest.mark.browser,
              pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}


def log_in(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(CAST_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("button", name="Log out")).to_be_attached()


def fits(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    boxes = page.evaluate("""() => [...document.querySelectorAll(
        '#panel-task audio, #panel-task button, .panel-option, #panel-question')]
        .map(el => el.getBoundingClientRect().right)""")
    assert boxes and max(boxes) <= width


def shot(page, width: int, step: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"panel-{width}-{step}.png"), full_page=True)


@pytest.mark.parametrize("device", WIDTHS)
def test_the_choices_unlock_after_listening_and_the_answer_is_stored(
        page, panel_board, author, raters, device):  # noqa: F811 - fixtures
    width, height = WIDTHS[device]
    panel_board.score_by_criteria("Echo Editor Large v2 (instruction-tuned)", author)
    Criterion.objects.update(question="Is the edit audible in <audio output[-0.25s:]>?")
    rater, = raters(1)
    page.set_viewport_size({"width": width, "height": height})
    page.add_init_script(RECORD_VIOLATIONS)
    log_in(page, rater.username)
    page.goto("/b/mmae/panel/")
    expect(page.locator("#panel-task")).to_be_visible()
    expect(page.locator("#panel-notes li")).to_have_text(
        ["<audio output[-0.25s:]>: the last 0.25 s of output"])
    expect(page.locator(".panel-option input").first).to_be_disabled()
    expect(page.locator("#panel-submit")).to_be_disabled()
    fits(page, width)
    shot(page, width, "locked")

    assignment = PanelAssignment.objects.select_related("task__criterion").get(rater=rater)
    question = panel_question(assignment.task)
    right = next(n for n, (position, _) in enumerate(options(assignment, question))
                 if position == 0)
    play_every_clip(page)
    page.locator(".panel-option input").nth(right).check()
    expect(page.locator("#panel-submit")).to_be_enabled()
    fits(page, width)
    shot(page, width, "unlocked")
    page.locator("#panel-submit").click()
    expect(page.locator("#panel-status")).to_have_text("Listen to each audio, then choose.")
    expect(page.locator(".panel-option input").first).to_be_disabled()  # the next, locked

    answer = PanelAnswer.objects.get(rater=rater)
    assert answer.task_id == assignment.task_id and answer.right
    assert all(seconds >= 0.49 for seconds in answer.listened.values())
    assert set(answer.listened) == set(question.audio)
    assert page.evaluate("window.__violations") == []


# Each player's state and what the page says it heard, for a failure's message.
PLAYERS = """() => [...document.querySelectorAll(".panel-player")].map(p => {
  const a = p.querySelector("audio");
  return {readyState: a.readyState, networkState: a.networkState, paused: a.paused,
          ended: a.ended, currentTime: a.currentTime, duration: a.duration,
          error: a.error && `${a.error.code} ${a.error.message}`,
          heard: p.querySelector(".panel-heard").textContent};
})"""


def play_every_clip(page) -> None:
    """Press each player's Play and wait for the choices to unlock (real playback: on a
    loaded machine it may start late); a failure names what each player did."""
    for button in page.locator(".panel-play").all():
        button.click()
    try:
        expect(page.locator(".panel-option input").first).to_be_enabled(timeout=30_000)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\nplayers: {page.evaluate(PLAYERS)}") from None


# Pages on which each clip played through must still count whole.
HARD_PAGES = {
    # A clock as coarse as a browser that resists fingerprinting keeps it (100 ms steps): a
    # step of the play head may outrun the clock's; the rest is carried to the next, and the
    # end forgiven a clock's step.
    "coarse-clock": """(() => {
  const now = performance.now.bind(performance);
  performance.now = () => Math.floor(now() / 100) * 100;
})();""",
    # A page too busy to run its handlers while the sound starts (a loaded machine; seen in
    # CI): it hears of `playing` after the play head has moved on.
    "late-playing": """document.addEventListener("playing", () => {
  const until = performance.now() + 300;
  while (performance.now() < until) {}
}, true);""",
    # A page still busy in the task that asked for playback (seen in CI): the sound starts at
    # once, and the `play` event's task waits behind the click's, whose last listener (the
    # document's, after the button's own) is busy. Firefox stamps the event only then.
    "busy-after-play": """document.addEventListener("click", () => {
  const until = performance.now() + 300;
  while (performance.now() < until) {}
});""",
    # The same in a browser that stamps an event when it is dispatched (Firefox): only the Play
    # button's own reading of when it asked is early enough.
    "busy-after-play-stamped-late": """Object.defineProperty(Event.prototype, "timeStamp", {
  get() { return performance.now(); },
});
document.addEventListener("click", () => {
  const until = performance.now() + 300;
  while (performance.now() < until) {}
});""",
    # A page too busy to run its `play` handler at once: the play head moves on meanwhile.
    "late-play": """document.addEventListener("play", () => {
  const until = performance.now() + 300;
  while (performance.now() < until) {}
}, true);""",
}


@pytest.mark.parametrize("hard", HARD_PAGES)
def test_each_clip_played_through_unlocks_the_choices(
        page, panel_board, author, raters, hard):  # noqa: F811 - fixtures
    panel_board.score_by_criteria("Echo Editor", author)
    rater, = raters(1)
    page.add_init_script(HARD_PAGES[hard])
    log_in(page, rater.username)
    page.goto("/b/mmae/panel/")
    expect(page.locator("#panel-task")).to_be_visible()
    expect(page.locator(".panel-option input").first).to_be_disabled()
    play_every_clip(page)
    assert set(page.locator(".panel-heard").all_inner_texts()) == {"heard"}


def open_a_task_of_4_seconds(page, panel_board, author, raters):  # noqa: F811 - fixtures
    """A rater's first task on a board whose output lasts 4 s; the notes of its count."""
    name = "Echo Editor"
    panel_board.score_by_criteria(name, author)
    samples = json.loads((panel_board.root / "MMAE-meta.json").read_text())
    write_system(panel_board.root, samples, name=name, seed=len(name), seconds=4.0)
    rater, = raters(1)
    log_in(page, rater.username)
    page.goto("/b/mmae/panel/")
    expect(page.locator("#panel-task")).to_be_visible()
    long = page.locator(".panel-heard", has_text="of 4.0 s")
    expect(long.first).to_be_visible()
    return long


def test_a_clip_played_faster_counts_no_more_than_the_clock(
        page, panel_board, author, raters):  # noqa: F811 - fixtures
    """Each advance of the play head counts only as far as the time that passed: a 4 s output
    played at 16 times its speed (a quarter of a second) leaves the choices locked and its
    count far short of its length."""
    long = open_a_task_of_4_seconds(page, panel_board, author, raters)
    page.locator(".panel-player audio").evaluate_all(
        "audios => audios.forEach(a => { a.playbackRate = 16; })")
    for button in page.locator(".panel-play").all():
        button.click()
    page.wait_for_function("""() => [...document.querySelectorAll(".panel-player audio")]
        .every(a => a.ended)""", timeout=30_000)
    expect(page.locator(".panel-option input").first).to_be_disabled()
    counted = [float(text.split()[1]) for text in long.all_inner_texts()]
    assert counted and all(seconds < 2.0 for seconds in counted), counted


def test_events_a_page_dispatches_count_nothing(
        page, panel_board, author, raters):  # noqa: F811 - fixtures
    """Only the browser's own events of an audio count: a clip played a moment and paused, then
    sent a synthetic `ended` (and `timeupdate`) by a script after a wait, stays short of its
    length, and the choices locked (on the code before, the wait counted as heard)."""
    long = open_a_task_of_4_seconds(page, panel_board, author, raters)
    for button in page.locator(".panel-play").all():
        button.click()
    page.wait_for_function("""() => [...document.querySelectorAll(".panel-player audio")]
        .every(a => a.currentTime > 0.3)""", timeout=30_000)
    page.locator(".panel-player audio").evaluate_all(
        "audios => audios.forEach(a => a.pause())")
    page.wait_for_timeout(4_500)
    page.locator(".panel-player audio").evaluate_all("""audios => audios.forEach(a => {
        a.dispatchEvent(new Event("timeupdate"));
        a.dispatchEvent(new Event("ended"));
    })""")
    expect(page.locator(".panel-option input").first).to_be_disabled()
    counted = [float(text.split()[1]) for text in long.all_inner_texts()]
    assert counted and all(seconds < 2.0 for seconds in counted), counted


def answer_all(benchmark, people) -> None:
    """Each rater answers every task they are given (right when the task id is even), each
    audio sent to them and played through first."""
    from panel.assignment import panel_next
    from panel.services import audio_url, panel_answer, panel_audio

    for rater in people:
        for _ in range(6):
            assignment = panel_next(benchmark=benchmark, rater=rater)
            if assignment is None:
                break
            question = panel_question(assignment.task)
            for label in question.audio:
                panel_audio(rater=rater, token=audio_url(assignment, label).split("/")[3])
            played_since(assignment.pk)
            shown = options(assignment, question)
            pick = next(n for n, (position, _) in enumerate(shown)
                        if (position == 0) == (assignment.task_id % 2 == 0))
            panel_answer(rater=rater, task_id=assignment.task_id, choice="ABCDEFG"[pick],
                         listened={label: 0.5 for label in question.audio})


@pytest.mark.parametrize("device", WIDTHS)
def test_the_judge_card_fits_and_links_its_disagreements(
        page, panel_board, author, other_author, raters, device):  # noqa: F811 - fixtures
    width, height = WIDTHS[device]
    panel_board.score_by_criteria("Echo Editor Large v2 (instruction-tuned)", author)
    panel_board.score_by_criteria("Other", other_author,
                                  lambda item, criterion: criterion.index % 2)
    answer_all(panel_board.benchmark, raters(4))
    page.set_viewport_size({"width": width, "height": height})
    page.add_init_script(RECORD_VIOLATIONS)
    page.goto("/b/mmae/judge/")
    expect(page.locator(".human-figures").first).to_be_visible()
    links = page.locator(".disagreements a")
    assert links.count() >= 1
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot(page, width, "judge-card")
    links.first.click()
    expect(page.locator("h1")).to_be_visible()
    assert "/b/mmae/i/" in page.url
    assert page.evaluate("window.__violations") == []


@pytest.mark.parametrize("device", WIDTHS)
def test_the_staff_raters_page_fits_and_removes_a_rater(
        page, panel_board, author, staff, raters, device):  # noqa: F811 - fixtures
    width, height = WIDTHS[device]
    panel_board.score_by_criteria("Echo", author)
    people = raters(2)
    answer_all(panel_board.benchmark, people)
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, staff.username)
    page.goto("/staff/panel/raters/")
    rows = page.locator("#raters tbody tr")
    expect(rows).to_have_count(2)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot(page, width, "staff-raters")
    rows.first.get_by_label("Reason").fill("answers at random")
    rows.first.get_by_role("button", name="Remove with their answers").click()
    expect(page.locator("#removals li")).to_have_count(1)
    assert not PanelAnswer.objects.filter(rater=people[0]).exists()
    assert PanelAnswer.objects.filter(rater=people[1]).exists()


@pytest.mark.parametrize("device", WIDTHS)
def test_a_disagreement_leads_to_both_verdicts_side_by_side_on_the_item_page(
        page, panel_board, author, other_author, raters, device):  # noqa: F811 - fixtures
    width, height = WIDTHS[device]
    panel_board.score_by_criteria("Echo Editor Large v2 (instruction-tuned)", author)
    panel_board.score_by_criteria("Other", other_author,
                                  lambda item, criterion: criterion.index % 2)
    answer_all(panel_board.benchmark, raters(4))
    page.set_viewport_size({"width": width, "height": height})
    page.add_init_script(RECORD_VIOLATIONS)
    page.goto("/b/mmae/judge/")
    link = page.locator(".disagreements a").first
    anchor = link.get_attribute("href").split("#")[1]
    link.click()
    page.wait_for_url(f"**/b/mmae/i/**#{anchor}")
    cell = page.locator(f"#{anchor}")
    expect(cell.locator(".panel-verdict")).to_contain_text("panel: ")
    expect(cell.locator(".disagrees")).to_have_text("disagrees with the judge")
    judge = cell.locator(".score").inner_text().strip().lower()
    panel = cell.locator(".panel-verdict").inner_text()
    # Both verdicts in the one cell, and opposite: a judge's pass against a panel's wrong.
    assert (judge == "pass") == ("panel: wrong" in panel)
    expect(cell).to_be_in_viewport()
    expect(page.locator("#panel-status")).to_contain_text("disagreeing")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    box = cell.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width
    shot(page, width, "item-disagreement")
    assert page.evaluate("window.__violations") == []

