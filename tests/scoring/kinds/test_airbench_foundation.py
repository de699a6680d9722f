"""AIR-Bench's foundation track as a benchmark kind: its judge jobs and its aggregation, by hand."""

import pytest

from scoring.kinds import get_kind
from scoring.kinds.airbench import rules as airbench
from tests.scoring.airbench_data import by_hand, foundation_meta

KIND = get_kind(airbench.FOUNDATION)


def jobs(items, outputs, **options):
    return KIND.jobs(items, outputs, rounds=KIND.rounds, seed=0, options=options,
                     output_path=str, input_path=str)


RESPONSES = {"1": "B", "2": "I think it is A.", "3": "male", "4": "D", "5": "A"}  # 6 missing


def test_foundation_accuracy_per_task_domain_and_overall():
    items = airbench.parse_foundation(foundation_meta())
    rows, summary = by_hand(airbench.FOUNDATION, items, RESPONSES, {})
    assert [r["letter"] for r in rows] == ["B", "A", None, "D", "A", None]
    tasks = summary["task"]
    assert tasks["Speech grounding"]["acc"] == 100 == tasks["Speech grounding"]["acc_strict"]
    assert tasks["Speaker gender recognition"]["acc"] is None
    assert tasks["Speaker gender recognition"]["acc_strict"] == 0
    assert (tasks["Sound question answering"]["acc"],
            tasks["Sound question answering"]["acc_strict"]) == (50, 50)
    assert tasks["Music question answering"]["missing"] == 1
    domains = summary["domain"]
    assert (domains["speech"]["acc"], domains["speech"]["acc_strict"]) == (100, 50)
    assert (domains["music"]["acc"], domains["music"]["acc_strict"]) == (None, 0)
    overall = summary["overall"]
    assert overall["acc"] == 75  # mean(100, 50); music has nothing parsed
    assert overall["acc_strict"] == pytest.approx(100 / 3)  # mean(50, 50, 0)
    assert (overall["n"], overall["parsed"], overall["unparsed"], overall["correct"]) == \
        (6, 4, 2, 3)


def test_an_aligned_letter_counts_only_where_the_rule_failed():
    items = airbench.parse_foundation(foundation_meta())
    answers = {("3", 0): {"choice": "B"}, ("1", 0): {"choice": "A"}}
    rows, summary = by_hand(airbench.FOUNDATION, items, RESPONSES, answers)
    assert rows[0]["source"] == "rule" and rows[0]["correct"]
    assert rows[2]["source"] == "judge" and rows[2]["letter"] == "B" and rows[2]["correct"]
    assert summary["domain"]["speech"]["acc_strict"] == 100
    assert summary["overall"]["acc_strict"] == pytest.approx(50)


def test_alignment_jobs_are_made_only_when_asked_and_only_for_unread_responses():
    items = airbench.parse_foundation(foundation_meta())
    assert jobs(items, RESPONSES) == []
    [job] = jobs(items, RESPONSES, align=True)
    assert job.item == "3" and job.round == 0
    assert job.messages == [{"role": "user", "content": airbench.alignment_prompt(
        "Question 3?", "male", ["female", "male"])}]
    assert job.parse("B") == "B"
    assert job.fields("B") == {"choices": ["female", "male"], "choice": "B", "reason": None,
                               "score": None,
                               "verdict": {"correct_letter": "B", "correct": True}}
