"""The panel's rows stored while its models were the leaderboard's (leaderboard 0008) read the
same once migrated (leaderboard 0009, panel 0001 and 0002): no table moved, and a task's two
strata columns became its one stratum; and back again."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from panel.models import PanelAnswer, PanelTask
from tests.factories import board_benchmark, scored_submission
from tests.scoring.test_migration_neutral_tables import migrate

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BEFORE = [("leaderboard", "0008_rank_order")]


def latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.fixture
def before():
    apps = migrate(BEFORE)
    yield apps
    migrate(latest())


def old_answer(apps, author, rater) -> tuple[int, int]:
    """A task and an answer to it, as the leaderboard's models stored them; their ids."""
    benchmark = board_benchmark()
    submission = scored_submission(benchmark, author, "Echo", {("overall", ""): (50.0, 60.0, 40.0)})
    item = benchmark.items.create(key="s1", position=0, dimensions={}, content={})
    criterion = item.criteria.create(index=0, category="Instruction Following", question="q",
                                     spec={"right": "yes", "wrong": ["no"]})
    task = apps.get_model("leaderboard", "PanelTask").objects.create(
        benchmark_id=benchmark.id, submission_id=submission.id, criterion_id=criterion.id,
        category="Instruction Following", modality="sound", complexity="single")
    assignment = apps.get_model("leaderboard", "PanelAssignment").objects.create(
        task=task, rater_id=rater.id, answered=True)
    answer = apps.get_model("leaderboard", "PanelAnswer").objects.create(
        assignment=assignment, task=task, rater_id=rater.id, choices=["no", "yes"], letter="B",
        chosen="yes", right=True, listened={"output": 0.5})
    return task.id, answer.id


def test_the_rows_stay_and_a_tasks_strata_become_one(before, author, other_author):
    task_id, answer_id = old_answer(before, author, other_author)
    migrate(latest())
    task = PanelTask.objects.get(id=task_id)
    assert (task.category, task.stratum) == ("Instruction Following", "sound / single")
    answer = PanelAnswer.objects.get(id=answer_id)
    assert (answer.task_id, answer.chosen, answer.right, answer.listened) == (
        task_id, "yes", True, {"output": 0.5})
    assert ContentType.objects.get_for_model(PanelTask).app_label == "panel"

    apps = migrate([("panel", "0001_initial")])
    old = apps.get_model("panel", "PanelTask").objects.get(id=task_id)
    assert (old.modality, old.complexity) == ("sound", "single")
