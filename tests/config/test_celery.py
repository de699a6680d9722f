"""The task base: a task queued inside a transaction leaves only when it commits."""

import pytest
from celery import Task
from django.db import transaction

from submissions.tasks import validate_submission


@pytest.fixture
def sent(monkeypatch):
    calls = []
    monkeypatch.setattr(Task, "apply_async", lambda self, *args, **kwargs: calls.append(args))
    return calls


def test_a_task_queued_in_a_transaction_leaves_when_it_commits(transactional_db, sent):
    with transaction.atomic():
        validate_submission.delay(7)
        assert sent == []
    assert sent == [((7,), {})]


def test_a_task_queued_in_a_transaction_that_rolls_back_never_leaves(transactional_db, sent):
    with pytest.raises(RuntimeError), transaction.atomic():
        validate_submission.delay(7)
        raise RuntimeError("the upload failed")
    assert sent == []


def test_a_task_queued_outside_a_transaction_leaves_at_once(transactional_db, sent):
    validate_submission.delay(8)
    assert sent == [((8,), {})]
