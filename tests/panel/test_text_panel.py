"""A panel whose outputs are text (AIR-Bench chat): a rater reads the question, the reference
answer and the system's answer, says whether the answer is right, and the judge card sets
that against the judge's scores (right when the mean of its two passes is above 5.5)."""

from types import SimpleNamespace

import pytest
from django.utils import timezone

from panel.models import PanelAnswer, PanelTask
from scoring.kinds import get_kind
from scoring.kinds.airbench import rules as airbench
from scoring.models import ItemResult, ScoringRun, SliceResult
from scoring.services import benchmark_import
from tests.conftest import judge_config
from tests.html import parse, select
from tests.panel.conftest import submission_of
from tests.scoring.airbench_data import chat_meta, write

NEXT = "/api/panel/air-bench-chat/next/"
CARD = "/api/leaderboards/air-bench-chat/judge/"
RIGHT, WRONG = airbench.CHAT_PANEL_OPTIONS


@pytest.fixture
def chat_board(db, tmp_path, settings):
    """The chat track's six items, and a factory of published submissions whose finished runs
    gave each item the two passes' scores the test says."""
    settings.PANEL_RATERS_PER_TASK = 3
    settings.PANEL_REPEAT_EVERY = 100
    settings.PANEL_POOL_ITEMS = 100
    settings.PANEL_POOL_SHARE = 1.0
    settings.PANEL_SPREAD_SECONDS = 0
    settings.PANEL_RELEASE_SECONDS = 0
    benchmark, _ = benchmark_import(kind=airbench.CHAT, audio_root=None, slug="air-bench-chat",
                                    path=write(tmp_path / "Chat_meta.json", chat_meta()))
    config = judge_config(["http://127.0.0.1:9"], kind=airbench.CHAT, benchmark=benchmark)
    kind = get_kind(airbench.CHAT)

    def score_by_two_passes(name, owner, scores):
        """`scores(key)` -> (pass A, pass B) of the model's answer to item `key`."""
        items = list(benchmark.items.prefetch_related("criteria").order_by("position"))
        run = ScoringRun.objects.create(
            benchmark=benchmark, judge_config=config, audio_root="", rounds=2, max_attempts=5,
            outputs={item.key: f"{name} answers {item.key}." for item in items},
            judge_model=config.judge_model, prompt_sha256=config.prompt_sha256,
            status="finished", seed=config.seed,
            status_times={"finished": timezone.now().isoformat()})
        rows = []
        for item in items:
            a, b = scores(item.key)
            rows.append(kind.item_result(kind.from_rows(item.as_rows()), "answer",
                                         {(0, 0): {"score": a}, (0, 1): {"score": b}}))
            ItemResult.objects.create(run=run, item=item, position=item.position,
                                      **kind.item_columns(rows[-1]))
        SliceResult.objects.create(run=run, dimension="overall", bucket="", n=len(rows),
                                   values={**kind.summarize(rows)["overall"],
                                           "position_bias": 0.0, "judged": 2 * len(rows)})
        return submission_of(run, name, owner)

    return SimpleNamespace(benchmark=benchmark, score_by_two_passes=score_by_two_passes,
                           config=config)


def next_task(client, rater) -> dict:
    client.force_login(rater)
    response = client.get(NEXT)
    assert response.status_code == 200, response.content
    return response.json()


def answer(client, task: dict, *, right: bool, listened=None):
    letter = next(c["letter"] for c in task["choices"] if c["text"] == (RIGHT if right else WRONG))
    return client.post(f"/api/panel/air-bench-chat/tasks/{task['task']}/",
                       {"choice": letter, "listened": {} if listened is None else listened},
                       content_type="application/json")


def test_a_task_puts_the_reference_and_the_systems_answer_as_text(client, chat_board, author,
                                                                  raters):
    submission = chat_board.score_by_two_passes("Talker", author, lambda key: (8, 7))
    rater, = raters(1)
    task = next_task(client, rater)
    item = chat_board.benchmark.items.get(key=task["item"])
    assert PanelTask.objects.get(pk=task["task"]).submission == submission
    assert task["rubric"] == 0
    assert task["instruction"] == item.content["question"]
    assert task["question"] == airbench.CHAT_PANEL_QUESTION
    assert task["texts"] == [
        {"label": "reference answer", "text": item.content["answer_gt"]},
        {"label": "the system's answer", "text": f"Talker answers {item.key}."}]
    assert task["audio"] == {} and task["listen"] == {}  # nothing to hear: answered once read
    assert sorted(c["text"] for c in task["choices"]) == sorted(airbench.CHAT_PANEL_OPTIONS)
    assert item.content["meta_info"] not in str(task)  # the judge's description stays its own
    response = answer(client, task, right=True, listened={"output": 3})
    assert response.status_code == 400
    assert "no audio 'output' (its audio: none)" in response.json()["errors"][0]
    assert answer(client, task, right=False).status_code == 201
    saved = PanelAnswer.objects.get(rater=rater)
    assert (saved.chosen, saved.right, saved.listened) == (WRONG, False, {})
    page = parse(client.get("/b/air-bench-chat/panel/"))
    how = " ".join(get_kind(airbench.CHAT).panel_how.split())
    assert any(p.text.startswith(how) for p in page.select("p.meta"))
    assert page.select("#panel-texts")


@pytest.mark.slow
def test_the_judge_card_sets_the_raters_against_the_judges_scores(client, chat_board, author,
                                                                  other_author, raters):
    # The judge: Good's answers right (a mean above 5.5) but item 2's; Poor's all wrong, item
    # 0's at exactly 5.5 too. The raters: Good's all right; Poor's wrong but for rater 1.
    good = chat_board.score_by_two_passes("Good", author,
                                          lambda key: (3, 4) if key == "2" else (8, 7))
    poor = chat_board.score_by_two_passes("Poor", other_author,
                                          lambda key: (5, 6) if key == "0" else (2, 3))
    people = raters(3)
    for n, rater in enumerate(people):
        client.force_login(rater)
        while (response := client.get(NEXT)).status_code == 200:
            task = response.json()
            of_good = PanelTask.objects.get(pk=task["task"]).submission_id == good.pk
            assert answer(client, task, right=of_good or n == 0).status_code == 201
    assert PanelAnswer.objects.count() == 3 * 12  # every rater, each output of each item

    card = client.get(CARD).json()
    assert card["panel"]["open"] and card["panel"]["raters"] == 3
    current, = card["configs"]
    human = current["human"]
    assert (human["rubrics"], human["answers"], human["raters"]) == (12, 36, 3)
    assert human["agreement"] == pytest.approx(11 / 12)
    # Chance agreement: half the human verdicts right, 5 of 12 judge verdicts: 1/2.
    assert human["kappa"] == pytest.approx((11 / 12 - 0.5) / 0.5)
    assert human["human_human"] == pytest.approx(24 / 36)  # Good's 3 of 3 pairs, Poor's 1
    assert set(human["by"]) == {"category", "task"}  # the kind's category stands for the rubric's
    disagreement, = current["disagreements"]
    assert (disagreement["submission"], disagreement["item"]) == (good.pk, "2")
    assert (disagreement["human"], disagreement["judge"]) == (True, False)
    assert disagreement["url"] == f"/b/air-bench-chat/i/2/#s-{good.pk}-r0"
    assert poor.pk not in {d["submission"] for d in current["disagreements"]}

    page = client.get("/b/air-bench-chat/judge/").content.decode()
    assert f"{100 * 11 / 12:.1f}%" in page and "by category" in page
    assert "rubric category" not in page
    assert select(page, f'a[href="{disagreement["url"]}"]')


@pytest.mark.slow
def test_the_item_page_shows_the_panels_verdict_beside_the_judges(client, chat_board, author,
                                                                  raters, settings):
    settings.PANEL_RATERS_PER_TASK = 2  # each task rated, out of the pool, counted
    good = chat_board.score_by_two_passes("Good", author,
                                          lambda key: (3, 4) if key == "2" else (8, 7))
    # In the pool: the item page says the answer and its scores are withheld.
    side, = parse(client.get("/b/air-bench-chat/i/2/")).select(f"#s-{good.pk}")
    assert side.select(".withheld-note") and not side.select(".side-verdict")
    assert "Good answers 2." not in side.text
    for rater in raters(2):
        client.force_login(rater)
        while (response := client.get(NEXT)).status_code == 200:
            assert answer(client, response.json(), right=True).status_code == 201
    client.logout()
    body = client.get("/api/panel/air-bench-chat/items/2/").json()
    rubric, = body["rubrics"]
    assert (rubric["submission"], rubric["rubric"], rubric["anchor"]) == (good.pk, 0,
                                                                          f"s-{good.pk}-r0")
    assert (rubric["human"], rubric["judge"], rubric["disagrees"]) == (True, False, True)
    assert rubric["label"] == "panel: right (2 of 2)"
    page = parse(client.get("/b/air-bench-chat/i/2/"))
    assert page.select(f"#s-{good.pk}-r0")  # out of the pool: the judge's scores shown
    assert "Good answers 2." in page.select(f"#s-{good.pk}")[0].text
    assert page.select('[data-url="/api/panel/air-bench-chat/items/2/"]')
