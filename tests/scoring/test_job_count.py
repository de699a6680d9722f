"""Kind.job_count: the `score` command's progress total, known before any job is built, must
be the number of jobs the kind then builds."""

import subprocess
import sys

import pytest

from scoring import synthetic
from scoring.kinds import get_kind
from tests.scoring import airbench_data

pytestmark = pytest.mark.django_db(databases=[])


def built(kind, items, outputs, options, rounds):
    return len(kind.jobs(items, outputs, rounds=rounds, seed=0, options=options,
                         output_path=str, input_path=str))


def test_mmae_counts_rubrics_times_rounds_of_the_samples_with_an_output(tmp_path):
    kind = get_kind("mmae")
    meta = synthetic.write_benchmark(tmp_path, 12, seed=3, n_rubrics=90)
    samples = kind.load(meta)
    outputs = {s.id: f"{s.id}.wav" for s in samples[::2]}
    for rounds in (1, 3):
        assert kind.job_count(samples, outputs, rounds=rounds, options={}) == built(
            kind, samples, outputs, {}, rounds) > 0


def test_airbench_chat_counts_two_passes_per_answered_item(tmp_path):
    kind = get_kind("airbench-chat")
    items = kind.load(airbench_data.write(tmp_path / "chat.json", airbench_data.chat_meta()))
    outputs = {item.uniq_id: "An answer." for item in items[:4]}
    assert kind.job_count(items, outputs, rounds=kind.rounds, options={}) == built(
        kind, items, outputs, {}, kind.rounds) == 8


@pytest.mark.parametrize("align", [False, True])
def test_airbench_foundation_counts_the_answers_the_rule_cannot_read(tmp_path, align):
    kind = get_kind("airbench-foundation")
    items = kind.load(airbench_data.write(tmp_path / "f.json", airbench_data.foundation_meta()))
    outputs = {items[0].uniq_id: "B", items[1].uniq_id: "I think it is the second one",
               items[2].uniq_id: "(A) female"}
    options = {"align": align}
    assert kind.job_count(items, outputs, rounds=1, options=options) == built(
        kind, items, outputs, options, 1)


@pytest.mark.integration
def test_the_score_command_imports_only_the_asked_kind_and_no_django_or_celery():
    probe = ("import sys\nsys.argv = ['manage.py', 'score', '--kind', 'mmae', '--help']\n"
             "from scoring import cli\ncli.add_arguments(__import__('argparse').ArgumentParser())\n"
             "cli.kind_name('mmae')\n"
             "print(' '.join(sorted(m for m in sys.modules)))")
    loaded = set(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                                text=True).stdout.split())
    assert "scoring.kinds.mmae" in loaded
    assert not {m for m in loaded if m.startswith(("scoring.kinds.airbench", "django",
                                                   "celery", "click", "rich"))}
