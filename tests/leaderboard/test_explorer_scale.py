"""The explorer reads a page's own items only: its queries do not grow with the benchmark.

An AIR-Bench foundation benchmark of 300 and of 3,000 items, each with one synthetic submission
(`seed_board`), explored page by page with every filter.
"""

import pytest
from django.core.management import call_command
from django.db import connection

from scoring.kinds import get_kind
from scoring.kinds.airbench import rules as airbench
from scoring.models import ItemResult
from scoring.services import benchmark_import
from submissions.models import Submission
from tests.html import select
from tests.scoring.airbench_data import foundation_item, write

# seed_board draws its figures in a pool of forked processes.
pytestmark = pytest.mark.integration

TASKS = ("Speech_Grounding", "Sound_AQA", "Music_AQA")
URLS = ("", "?page=2", "?failed=on", "?failed=on&page=2", "?q=question+1",
        "?dimension=task&bucket={task}", "?dimension=task&bucket={task}&failed=on&q=question")


def explored(tmp_path, n: int) -> Submission:
    meta = [foundation_item(i, TASKS[i % len(TASKS)]) for i in range(n)]
    path = write(tmp_path / f"foundation-{n}.json", meta)
    benchmark, _ = benchmark_import(kind=airbench.FOUNDATION, path=path, audio_root=None,
                                    slug=f"foundation-{n}")
    call_command("seed_board", "--benchmark", benchmark.slug, "--submissions", "1",
                 "--resamples", "10", "--processes", "1")
    return Submission.objects.get(benchmark=benchmark)


def shown(html: str) -> list[str]:
    return [sample.get("id").removeprefix("sample-") for sample in select(html, "[id^=sample-]")]


def read(client, url: str):
    """(the response, how many rows its queries gave back)."""
    rows = []

    def counting(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        rows.append(max(context["cursor"].rowcount, 0))
        return result

    with connection.execute_wrapper(counting):
        response = client.get(url)
    assert response.status_code == 200, url
    return response, sum(rows)


def test_a_page_costs_the_same_queries_and_rows_at_300_and_3000_items(
        client, db, tmp_path, django_assert_max_num_queries):
    small, large = explored(tmp_path, 300), explored(tmp_path, 3000)
    task = get_kind(airbench.FOUNDATION).buckets("task", small.benchmark.items.first()
                                                  .dimensions)[0]
    for url in URLS:
        url = url.format(task=task.replace(" ", "+"))
        client.get(f"/s/{small.pk}/samples/{url}")  # the benchmark's buckets are cached
        client.get(f"/s/{large.pk}/samples/{url}")
        # One of them reads the board's state (the token the page cache keeps the page under).
        with django_assert_max_num_queries(7) as counted:
            _, small_rows = read(client, f"/s/{small.pk}/samples/{url}")
        with django_assert_max_num_queries(len(counted.captured_queries), info=url):
            response, large_rows = read(client, f"/s/{large.pk}/samples/{url}")
        assert shown(response.content.decode()), url
        assert large_rows <= small_rows, url


def test_the_failed_filter_keeps_what_the_kind_counts_as_failed(client, db, tmp_path):
    submission = explored(tmp_path, 60)
    kind = get_kind(airbench.FOUNDATION)
    expected = [r.item.key for r in ItemResult.objects.filter(run=submission.current_run)
                .select_related("item").order_by("item__position")
                if kind.failed({"missing": r.missing, "values": r.values, "passed": r.passed,
                                "score": r.score})]
    assert 0 < len(expected) < 60
    found = []
    for page in range(1, 5):
        response = client.get(f"/s/{submission.pk}/samples/?failed=on&page={page}")
        if response.status_code == 400:
            break
        found += shown(response.content.decode())
    assert found == expected


@pytest.mark.parametrize(("query", "keys"), [
    ("QUESTION 7?", ["7"]),  # the question, casefolded
    ("question 1", ["1"] + [str(i) for i in range(10, 20)]),
    ("nothing like it", []),
])
def test_the_search_reads_the_stored_text(client, db, tmp_path, query, keys):
    submission = explored(tmp_path, 30)
    html = client.get(f"/s/{submission.pk}/samples/", {"q": query}).content.decode()
    assert shown(html) == keys
