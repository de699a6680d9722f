"""The judge card's figures against a count made here from what each rater answered and what
each run scored: agreement, kappa, human-human agreement and their bootstrap intervals, per
judge config and per bucket, over the tasks that have their raters (out of the panel's pool: a
task still in it counts nowhere, test_blind.py); a removed rater's answers and a private
submission's tasks leave every figure."""

import random

import numpy as np
import pytest

from panel.models import PanelTask
from panel.services import panel_rater_remove
from scoring.models import Criterion
from tests.conftest import judge_config, reread
from tests.html import one, select
from tests.panel.conftest import letter, listen

# `slow`: its shared set-up (five raters answering through the API) takes 3.5 s
pytestmark = [pytest.mark.django_db, pytest.mark.slow]
CARD = "/api/leaderboards/mmae/judge/"


def judge_a(item, criterion):
    return int(criterion.index % 2 == 0)


def judge_b(item, criterion):
    return int(item.position % 2 == 1)


def judge_a_other_config(item, criterion):
    return 1


def rate(client, raters, *, per_rater=8):
    """Each rater answers up to `per_rater` tasks, right or wrong by a fixed plan; the
    answers as {task id: [(rater id, right)]}."""
    given: dict[int, list] = {}
    for n, rater in enumerate(raters):
        client.force_login(rater)
        for k in range(per_rater):
            response = client.get("/api/panel/mmae/next/")
            if response.status_code == 204:
                break
            task = response.json()
            # By the task's order of first showing in this test, not its id (which other
            # tests' rows shift): the same plan in any run.
            ordinal = list(given).index(task["task"]) if task["task"] in given else len(given)
            right = (ordinal * 7 + n * 3 + k) % 5 < 3
            text = Criterion.objects.get(item__key=task["item"], index=task["rubric"]).spec["right"]
            assert client.post(f"/api/panel/mmae/tasks/{task['task']}/", {
                "choice": letter(task, text, right=right), "listened": listen(client, task)},
                content_type="application/json").status_code == 201
            given.setdefault(task["task"], []).append((rater.pk, right))
    return given


def expected(given, judge_verdict, *, seed, rated, keep=lambda task: True):
    """The human figures counted by hand over the `rated` tasks (those that had their
    raters, out of the pool): judge_verdict(task) -> the judge's verdict or None."""
    rubrics = []
    for task_id in sorted(given):
        task = PanelTask.objects.select_related("criterion__item").get(pk=task_id)
        judge = judge_verdict(task)
        if judge is None or not keep(task) or task_id not in rated:
            continue
        rubrics.append((task_id, bool(judge), [right for _, right in given[task_id]],
                        {rater for rater, _ in given[task_id]}, task.criterion.item.key))
    pairs, agree, all_pairs, items = [], 0, 0, []
    for _, judge, rights, _, item in rubrics:
        yes, no = rights.count(True), rights.count(False)
        all_pairs += len(rights) * (len(rights) - 1) // 2
        agree += yes * (yes - 1) // 2 + no * (no - 1) // 2
        if len(rights) >= 2 and yes != no:
            pairs.append((yes > no, judge))
            items.append(item)
    h = np.array([p[0] for p in pairs], dtype=float)
    j = np.array([p[1] for p in pairs], dtype=float)
    # Items resampled, each bringing all its rubrics (of every system).
    keys = sorted(set(items))
    members = {key: [i for i, item in enumerate(items) if item == key] for key in keys}
    draws = np.random.default_rng(seed).integers(0, len(keys), size=(1000, len(keys)))
    shares = []
    for row in draws:
        chosen = [i for k in row for i in members[keys[k]]]
        shares.append((h[chosen] == j[chosen]).mean())
    observed = (h == j).mean()
    chance = h.mean() * j.mean() + (1 - h.mean()) * (1 - j.mean())
    return {
        "rubrics": len(pairs), "answers": sum(len(r[2]) for r in rubrics),
        "raters": len(set().union(*(r[3] for r in rubrics))),
        "agreement": pytest.approx(observed),
        "agreement_lo": pytest.approx(np.percentile(shares, 2.5)),
        "agreement_hi": pytest.approx(np.percentile(shares, 97.5)),
        # Undefined (None) when chance agreement is certain: every verdict the same.
        "kappa": None if chance == 1 else pytest.approx((observed - chance) / (1 - chance)),
        "human_human": pytest.approx(agree / all_pairs),
        "disagreements": {r[0] for r in rubrics if len(r[2]) >= 2
                          and r[2].count(True) != r[2].count(False)
                          and (r[2].count(True) > r[2].count(False)) != r[1]},
    }


def check(config_card, wanted):
    human = config_card["human"]
    for key in ("rubrics", "answers", "raters", "agreement", "agreement_lo", "agreement_hi",
                "kappa", "human_human"):
        assert human[key] == wanted[key], key
    assert {d["task"] for d in config_card["disagreements"]} == wanted["disagreements"]


@pytest.fixture(scope="module")
def module_rated(module_panel_board, module_cast, django_db_blocker):
    """Alpha's and Beta's runs on the panel board, a second judge config, and five raters'
    answers: made once for a module (module_db), each test's changes rolled back."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    from panel import assignment
    from tests.conftest import cast_member

    board = module_panel_board
    drawing = assignment.RANDOM
    assignment.RANDOM = random.Random(7)  # the drawing seeded: the same tasks each run
    try:
        with django_db_blocker.unblock():
            a = board.score_by_criteria("Alpha", module_cast["author"], judge_a)
            b = board.score_by_criteria("Beta", module_cast["other_author"], judge_b)
            second = judge_config(["http://127.0.0.1:9"], seed=99)
            a.runs.add(board.run("Alpha-rescored", judge_a_other_config, config=second))
            people = [cast_member(get_user_model(), f"rater{k}", f"rater{k}@example.com")
                      for k in range(1, 6)]
            given = rate(Client(), people)
    finally:
        assignment.RANDOM = drawing
    # A task with its PANEL_RATERS_PER_TASK answers left the pool (PANEL_RELEASE_SECONDS 0).
    rated = {task for task, answers in given.items()
             if len(answers) >= settings.PANEL_RATERS_PER_TASK}
    return {"a": a, "b": b, "second": second, "raters": people, "given": given,
            "rated": rated, "config": board.config}


@pytest.fixture
def panel_board(module_panel_board):
    return module_panel_board


@pytest.fixture
def rated_board(module_rated):
    """The module's rated board, its instances read again (what a test changes in memory
    stays with it, as its writes do)."""
    found = reread({k: module_rated[k] for k in ("a", "b", "second", "config")})
    a, b = found["a"], found["b"]

    def judge_verdict(task, *, config="current"):
        scores = {"current": {a.pk: judge_a, b.pk: judge_b},
                  "second": {a.pk: judge_a_other_config}}[config]
        score = scores.get(task.submission_id)
        return None if score is None else score(task.criterion.item, task.criterion)

    return {**module_rated, **found, "judge_verdict": judge_verdict}


def test_the_card_counts_agreement_kappa_and_human_pairs_per_config(client, rated_board):
    card = client.get(CARD).json()
    current, other = card["configs"]
    assert current["current"] and current["judge_config"] == rated_board["config"].name
    assert not other["current"] and other["judge_config"] == rated_board["second"].name
    wanted = expected(rated_board["given"], rated_board["judge_verdict"],
                      seed=rated_board["config"].seed, rated=rated_board["rated"])
    assert wanted["rubrics"] >= 5 and wanted["disagreements"]  # the plan makes both kinds
    check(current, wanted)
    check(other, expected(rated_board["given"],
                          lambda t: rated_board["judge_verdict"](t, config="second"),
                          seed=rated_board["second"].seed, rated=rated_board["rated"]))
    assert current["vote_unanimity"] == 75.0 and current["position_bias"] is None
    first = current["disagreements"][0]
    assert first["url"] == (f"/b/mmae/i/{first['item']}/"
                            f"#s-{first['submission']}-r{first['rubric']}")
    assert card["panel"]["answers"] == sum(len(v) for v in rated_board["given"].values())


def test_the_card_counts_each_bucket_alike(client, rated_board):
    human = client.get(CARD).json()["configs"][0]["human"]
    assert set(human["by"]) == {"category", "complexity", "complexity_group", "modality",
                                "granularity", "operation"}
    for category, figures in human["by"]["category"].items():
        wanted = expected(rated_board["given"], rated_board["judge_verdict"],
                          seed=rated_board["config"].seed, rated=rated_board["rated"],
                          keep=lambda t, c=category: t.criterion.category == c)
        for key in ("rubrics", "answers", "human_human"):
            assert figures[key] == wanted[key], (category, key)
        if wanted["rubrics"]:
            assert figures["agreement"] == wanted["agreement"]


def test_a_removed_raters_answers_leave_every_figure(client, rated_board, staff):
    removed = rated_board["raters"][0]
    panel_rater_remove(actor=staff, rater=removed, reason="answers at random")
    given = {task: [(r, right) for r, right in answers if r != removed.pk]
             for task, answers in rated_board["given"].items()}
    given = {task: answers for task, answers in given.items() if answers}
    card = client.get(CARD).json()
    check(card["configs"][0], expected(given, rated_board["judge_verdict"],
                                       seed=rated_board["config"].seed, rated=rated_board["rated"]))
    assert card["panel"]["raters"] == 4
    assert card["panel"]["answers"] == sum(len(v) for v in given.values())


def test_a_submission_made_private_leaves_the_card(client, rated_board):
    b = rated_board["b"]
    b.public = False
    b.save(update_fields=["public"])
    card = client.get(CARD).json()
    check(card["configs"][0], expected(rated_board["given"], rated_board["judge_verdict"],
                                       seed=rated_board["config"].seed, rated=rated_board["rated"],
                                       keep=lambda t: t.submission_id != b.pk))
    assert all(d["submission"] != b.pk for d in card["configs"][0]["disagreements"])
    assert "Beta" not in client.get("/b/mmae/judge/").content.decode()


def test_the_card_page_shows_the_figures_and_links_each_disagreement(client, rated_board):
    card = client.get(CARD).json()
    page = client.get("/b/mmae/judge/").content.decode()
    human = card["configs"][0]["human"]
    assert f"{100 * human['agreement']:.1f}%" in page
    assert f"{human['kappa']:.2f}" in page
    for d in card["configs"][0]["disagreements"]:
        assert select(page, f'a[href="{d["url"]}"]')
    # The replace-humans test, in words: this small panel is not enough for it.
    test = card["configs"][0]["replace_test"]
    assert test["epsilon"] == 0.1 and test["verdict"] in ("yes", "no", "not enough answers")
    said = one(page, "#replace-test-1").text
    if test["verdict"] == "not enough answers":
        assert said.startswith("Not enough answers yet")
    else:
        assert f"at \u03b5 = 0.1: {test['verdict']}" in said


def test_the_card_corrects_the_judges_pass_rate_by_people(client, rated_board, panel_board):
    """Per rubric category, over Alpha's and Beta's runs under the board's config: the
    judge's share of rubrics passed, and prediction-powered inference with the rated rubrics,
    computed here from its formula."""
    card = client.get(CARD).json()
    calibrated = card["configs"][0]["calibrated"]
    judged, labelled = {}, {}
    for criterion in Criterion.objects.filter(item__benchmark=panel_board.benchmark) \
            .select_related("item"):
        for judge in (judge_a, judge_b):
            judged.setdefault(criterion.category, []).append(
                bool(judge(criterion.item, criterion)))
    for task_id in sorted(rated_board["rated"]):
        task = PanelTask.objects.select_related("criterion__item").get(pk=task_id)
        verdict = rated_board["judge_verdict"](task)
        rights = [right for _, right in rated_board["given"][task_id]]
        yes, no = rights.count(True), rights.count(False)
        if verdict is None or len(rights) < 2 or yes == no:
            continue
        labelled.setdefault(task.criterion.category, []).append((yes > no, bool(verdict)))
    assert set(calibrated) == set(judged)
    for category, figures in calibrated.items():
        f = np.array(judged[category], dtype=float)
        assert figures["judge"] == pytest.approx(f.mean())
        assert figures["rubrics"] == len(f)
        pairs = labelled.get(category, [])
        assert figures["labelled"] == len(pairs)
        if len(pairs) < 2:
            assert figures["corrected"] is None
            continue
        rect = np.array([y - j for y, j in pairs], dtype=float)
        theta = f.mean() + rect.mean()
        half = 1.959963984540054 * np.sqrt(f.var(ddof=1) / len(f) + rect.var(ddof=1) / len(rect))
        assert figures["corrected"] == pytest.approx(theta)
        assert (figures["corrected_lo"], figures["corrected_hi"]) == pytest.approx(
            (theta - half, theta + half))
    assert any(f["corrected"] is not None for f in calibrated.values())
    page = client.get("/b/mmae/judge/").content.decode()
    assert one(page, "#calibrated-1")


def test_the_card_gives_the_judges_agreement_on_systems_of_its_family_apart(
        client, rated_board, monkeypatch):
    """Alpha's author declares the judge model's family: once enough of its rubrics are
    counted, the card's human figures by the system's family are those counted here over
    Alpha's tasks alone and over the others'; before, the card says how many it has."""
    from judge import families
    from panel import judge_card
    from scoring.boards import board_changed
    from submissions.services import model_family_set

    config = rated_board["config"]
    family = families.family_of(config.judge_model)
    assert family != families.OTHER  # the tests' judge is Qwen3-Omni
    model_family_set(user=rated_board["a"].owner, model_id=rated_board["a"].model_id,
                     family=family)
    alpha = rated_board["a"].pk
    ours = expected(rated_board["given"], rated_board["judge_verdict"], seed=config.seed,
                    rated=rated_board["rated"], keep=lambda t: t.submission_id == alpha)
    others = expected(rated_board["given"], rated_board["judge_verdict"], seed=config.seed,
                      rated=rated_board["rated"], keep=lambda t: t.submission_id != alpha)
    assert ours["rubrics"] >= 2 and others["rubrics"] >= 2

    monkeypatch.setattr(judge_card, "MIN_FAMILY_RUBRICS", ours["rubrics"] + 1)
    current = client.get(CARD).json()["configs"][0]
    assert current["judge_family"] == {"family": families.LABELS[family],
                                       "rubrics": ours["rubrics"],
                                       "needed": ours["rubrics"] + 1, "apart": False}
    assert "judge_family" not in current["human"]["by"]
    page = client.get("/b/mmae/judge/").content.decode()
    assert f"{ours['rubrics']} rubrics counted on them" in one(page, "#judge-family-1").text

    monkeypatch.setattr(judge_card, "MIN_FAMILY_RUBRICS", ours["rubrics"])
    board_changed(rated_board["a"].benchmark_id)  # pages made under the other threshold go
    current = client.get(CARD).json()["configs"][0]
    assert current["judge_family"]["apart"] is True
    by = current["human"]["by"]["judge_family"]
    for bucket, wanted in ((judge_card.SAME_FAMILY, ours), (judge_card.OTHER_FAMILIES, others)):
        for key in ("rubrics", "answers", "agreement", "kappa", "human_human"):
            assert by[bucket][key] == wanted[key], (bucket, key)
    page = client.get("/b/mmae/judge/").content.decode()
    assert "by system's model family" in [e.text for e in select(page, "tr.group th")]
    assert judge_card.SAME_FAMILY in [e.text for e in select(page, "table.human-figures th")]


def test_an_eee_record_carries_the_panels_figures_of_its_judge_config(client, rated_board,
                                                                      staff):
    """The Every Eval Ever record of a row (exports.eee) gives the human panel's figures of the
    judge config that scored it, as the judge card counts them; answers taken out since
    leave it too (its cache key holds the panel's state)."""
    human = client.get(CARD).json()["configs"][0]["human"]
    alpha = rated_board["a"]
    url = f"/api/leaderboards/mmae/eee/{alpha.model_id}.json"

    def details():
        record = client.get(url).json()
        overall = next(r for r in record["evaluation_results"]
                       if r["evaluation_result_id"] == "EMR:overall")
        return overall["metric_config"]["llm_scoring"]["additional_details"]

    found = details()
    assert found["human_panel_agreement"] == f"{human['agreement']:.4f}"
    assert found["human_panel_rubrics"] == str(human["rubrics"])
    assert found["human_panel_raters"] == str(human["raters"])
    panel_rater_remove(actor=staff, rater=rated_board["raters"][0], reason="at random")
    changed = client.get(CARD).json()["configs"][0]["human"]
    assert changed["raters"] == human["raters"] - 1
    assert details()["human_panel_raters"] == str(changed["raters"])
    assert details()["human_panel_agreement"] == f"{changed['agreement']:.4f}"


@pytest.mark.parametrize("system", ["a", "b"])
def test_a_rows_figures_are_corrected_by_people_on_its_own_outputs(client, rated_board,
                                                                   panel_board, system):
    """A board row's IFR and CR corrected by prediction-powered inference over samples: the
    judge's per-sample figure on every sample, and (people's verdict - the judge's) on the
    samples people rated of this system alone, computed here from the published formula."""
    from scoring.kinds.mmae.rules import IF_CATEGORY

    submission = rated_board[system]
    score = {"a": judge_a, "b": judge_b}[system]
    found = client.get(f"/api/leaderboards/mmae/judge/models/{submission.model_id}/").json()
    assert found["submission"] == submission.pk and found["model"] == submission.model.name
    per_sample = {"IFR": [], "CR": []}
    for item in panel_board.benchmark.items.prefetch_related("criteria"):
        for axis, mine in (("IFR", lambda c: c.category == IF_CATEGORY),
                           ("CR", lambda c: c.category != IF_CATEGORY)):
            scores = [score(item, c) for c in item.criteria.all() if mine(c)]
            if scores:
                per_sample[axis].append(sum(scores) / len(scores))
    gaps = {"IFR": {}, "CR": {}}
    for task_id in sorted(rated_board["rated"]):
        task = PanelTask.objects.select_related("criterion__item").get(pk=task_id)
        if task.submission_id != submission.pk:
            continue
        rights = [right for _, right in rated_board["given"][task_id]]
        yes, no = rights.count(True), rights.count(False)
        if len(rights) < 2 or yes == no:
            continue
        axis = "IFR" if task.criterion.category == IF_CATEGORY else "CR"
        judge = score(task.criterion.item, task.criterion)
        gaps[axis].setdefault(task.criterion.item_id, []).append(float(yes > no) - judge)
    assert set(found["figures"]) == {"IFR", "CR"}
    corrected = 0
    for axis, figure in found["figures"].items():
        f = np.array(per_sample[axis], dtype=float)
        d = np.array([np.mean(g) for g in gaps[axis].values()], dtype=float)
        assert figure["judge"] == pytest.approx(100 * f.mean())
        assert (figure["samples"], figure["labelled"]) == (len(f), len(d))
        assert figure["rubrics"] == sum(len(g) for g in gaps[axis].values())
        if len(d) < 2:
            assert figure["corrected"] is None and figure["interval"] is None
            continue
        corrected += 1
        theta = f.mean() + d.mean()
        half = 1.959963984540054 * np.sqrt(f.var(ddof=1) / len(f) + d.var(ddof=1) / len(d))
        assert figure["corrected"] == pytest.approx(100 * theta)
        assert figure["interval"] == pytest.approx([100 * (theta - half), 100 * (theta + half)])
    assert corrected, "the plan rates enough of each system for one axis at least"
    # On demand from the board's row, and as a page.
    board = client.get("/b/mmae/").content.decode()
    link = f"/b/mmae/judge/models/{submission.model_id}/"
    assert select(board, f'a[href="{link}"]')
    page = client.get(link).content.decode()
    assert one(page, "#corrected-IFR") and one(page, "#corrected-CR")
    assert select(client.get("/b/mmae/judge/").content.decode(),
                  f'#corrected-models a[href="{link}"]')


def test_a_model_without_a_row_has_no_corrected_figures(client, rated_board, author):
    from submissions.models import Submission

    Submission.objects.filter(pk=rated_board["a"].pk).update(public=False)
    from scoring.boards import board_changed

    board_changed(rated_board["a"].benchmark_id)
    model = rated_board["a"].model_id
    assert client.get(f"/api/leaderboards/mmae/judge/models/{model}/").status_code == 404
    assert client.get(f"/b/mmae/judge/models/{model}/").status_code == 404
    assert client.get("/b/mmae/judge/models/999999/").status_code == 404


def test_the_card_and_the_listening_page_answer_head_as_get(client, panel_board):
    """A link checker's or a proxy's HEAD gets what GET would, without the body."""
    for url in ("/b/mmae/judge/", "/b/mmae/panel/", "/b/nothing/judge/"):
        got, head = client.get(url), client.head(url)
        assert (head.status_code, head.content) == (got.status_code, b""), url
        assert head.status_code in (200, 404), url
