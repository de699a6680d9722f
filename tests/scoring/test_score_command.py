"""`manage.py score` as a user runs it: a real process against the simulator over loopback."""

import json
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from scoring.kinds.mmae import metrics as mmae_metrics
from tests.conftest import ROOT, free_ports, run_manage

pytestmark = pytest.mark.integration


def score_args(demo, out, base_urls, predictions=None, *extra):
    return ["score", "--meta", str(demo["meta"]),
            "--predictions", str(predictions or demo["predictions"]),
            "--audio_root", str(demo["root"]), "--base_urls", base_urls,
            "--output_dir", str(out), "--seed", "11", *extra]


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def expected_queries(demo, missing=()):
    return sum(len(s["rubrics"]) * 3 for s in demo["samples"] if s["id"] not in missing)


def check_outputs(demo, out, *, missing=()):
    """Every file of SPEC section 6 is there and consistent with the others."""
    meta = {s["id"]: s for s in demo["samples"]}
    results = read_jsonl(out / "results.jsonl")
    keys = Counter((r["id"], r["rubric_index"], r["round"]) for r in results)
    assert len(results) == expected_queries(demo, missing)
    assert set(keys.values()) == {1}
    for r in results:
        assert set(r) == {"id", "rubric_index", "round", "category", "choices",
                          "correct_letter", "choice", "correct", "reason", "raw", "error",
                          "endpoint", "attempts", "latency_ms"}
        rubric = meta[r["id"]]["rubrics"][r["rubric_index"]]
        assert sorted(r["choices"]) == sorted([rubric["right_choice"],
                                               *rubric["wrong_choices"]])
        assert r["choices"][ord(r["correct_letter"]) - 65] == rubric["right_choice"]
        assert r["correct"] == (r["choice"] == r["correct_letter"])
        assert r["category"] == rubric["category"]
    per_sample = json.loads((out / "per_sample.json").read_text())
    assert [row["id"] for row in per_sample] == [s["id"] for s in demo["samples"]]
    votes = {}
    for r in results:
        votes.setdefault((r["id"], r["rubric_index"]), []).append(r["correct"])
    for row in per_sample:
        assert set(row) == {"id", "IFR", "CR", "EM", "n_if", "n_cr", "rubric_scores", "missing",
                            "complexity", "modality", "granularity", "operations"}
        assert row["missing"] == (row["id"] in missing)
        expected = [0] * len(meta[row["id"]]["rubrics"]) if row["missing"] else [
            mmae_metrics.rubric_score(votes[(row["id"], i)])
            for i in range(len(meta[row["id"]]["rubrics"]))]
        assert row["rubric_scores"] == expected
    taxonomy = json.loads((out / "taxonomy.json").read_text())
    assert taxonomy == mmae_metrics.taxonomy(per_sample)
    assert taxonomy["overall"]["n"] == len(demo["samples"])
    return results, per_sample, json.loads((out / "run.json").read_text())


def test_a_full_run_writes_every_file(demo_set, thread_simulator_factory, tmp_path):
    sim = thread_simulator_factory(latency_ms=5)
    out = tmp_path / "out"
    result = run_manage(*score_args(demo_set, out, sim.base_urls))
    assert result.returncode == 0, result.stderr
    missing = {s["id"] for s in demo_set["samples"][-2:]}
    results, per_sample, run = check_outputs(demo_set, out, missing=missing)
    assert all(r["error"] is None and r["attempts"] == 1 for r in results)
    assert {r["endpoint"] for r in results} == set(sim.urls)
    assert run["simulated"] is True and run["failed_queries"] == 0
    assert set(run["missing"]) == missing
    assert run["inputs"]["seed"] == 11 and run["inputs"]["rounds"] == 3
    assert "these scores are simulated" in result.stdout
    assert "judging" in result.stderr  # the progress bar
    assert sim.completions() == len(results)


def test_the_jsonl_format_scores_the_same_way(demo_set, thread_simulator_factory, tmp_path):
    sim = thread_simulator_factory(latency_ms=5)
    out = tmp_path / "out"
    result = run_manage(*score_args(demo_set, out, sim.base_urls, demo_set["jsonl"]))
    assert result.returncode == 0, result.stderr
    check_outputs(demo_set, out)


def test_a_run_with_faults_still_gets_three_votes_per_rubric(demo_set, thread_simulator_factory,
                                                             tmp_path):
    sim = thread_simulator_factory(latency_ms=20, fail_rate=0.1, garbage_rate=0.05,
                                   slow_rate=0.03, slow_ms=4000, seed=2)
    out = tmp_path / "out"
    # The simulator's garbage is random, unlike a greedy judge's replies: asked again freely.
    result = run_manage(*score_args(demo_set, out, sim.base_urls, None, "--timeout", "1",
                                    "--max_attempts", "10", "--unparseable_retries", "9"))
    assert result.returncode == 0, result.stderr
    results, _, run = check_outputs(demo_set, out, missing={s["id"] for s in
                                                            demo_set["samples"][-2:]})
    assert all(r["error"] is None for r in results)
    assert max(r["attempts"] for r in results) > 1
    stats = sim.stats()
    assert sum(s["failed"] for s in stats) > 0
    assert sum(s["garbage"] for s in stats) > 0
    assert sum(s["slow"] for s in stats) > 0


def complete_lines(path):
    if not path.exists():
        return 0
    return sum(1 for line in path.read_bytes().splitlines(keepends=True) if line.endswith(b"\n"))


def test_a_killed_run_resumes_without_asking_a_finished_query_again(
        demo_set, thread_simulator_factory, tmp_path):
    sim = thread_simulator_factory(latency_ms=100, slots=4)
    out = tmp_path / "out"
    args = score_args(demo_set, out, sim.base_urls, None, "--concurrency", "4")
    process = subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while complete_lines(out / "results.jsonl") < 80 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    time.sleep(0.3)
    finished = complete_lines(out / "results.jsonl")
    total = expected_queries(demo_set, {s["id"] for s in demo_set["samples"][-2:]})
    assert 80 <= finished < total
    asked_before = sim.completions()

    result = run_manage(*args)
    assert result.returncode == 0, result.stderr
    assert sim.completions() - asked_before == total - finished
    check_outputs(demo_set, out, missing={s["id"] for s in demo_set["samples"][-2:]})


def test_one_endpoint_down_for_the_whole_run(demo_set, thread_simulator_factory, tmp_path):
    sim = thread_simulator_factory(latency_ms=5)
    dead = f"http://127.0.0.1:{free_ports(1)[0]}"
    out = tmp_path / "out"
    result = run_manage(*score_args(demo_set, out, f"{dead},{sim.urls[0]}"))
    assert result.returncode == 0, result.stderr
    results, _, run = check_outputs(demo_set, out, missing={s["id"] for s in
                                                            demo_set["samples"][-2:]})
    assert {r["endpoint"] for r in results} == {sim.urls[0]}
    assert all(r["error"] is None for r in results)
    down = next(e for e in run["fleet"] if e["endpoint"] == dead)
    assert down["healthy"] is False and "ConnectError" in down["last_error"]


def test_every_endpoint_down_stops_with_a_clear_message_and_keeps_nothing_wrong(demo_set,
                                                                               tmp_path):
    dead = ",".join(f"http://127.0.0.1:{p}" for p in free_ports(2))
    out = tmp_path / "out"
    result = run_manage(*score_args(demo_set, out, dead, None, "--down_wait", "2"))
    assert result.returncode == 1
    assert "every judge endpoint has been down for 2 s" in result.stderr
    assert "run the same command again to resume" in result.stderr
    assert not (out / "taxonomy.json").exists()


def write_lines(path, entries):
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


@pytest.mark.parametrize("entries, message", [
    (lambda ids: [{"id": ids[0], "audio_path": "a.wav"}, {"id": "nope", "audio_path": "b.wav"}],
     "bad.jsonl line 2: unknown id 'nope' (not in the benchmark)"),
    (lambda ids: [{"id": ids[0], "audio_path": "a.wav"}, {"id": ids[0], "audio_path": "b.wav"}],
     "bad.jsonl line 2: duplicate id '{0}', first on line 1"),
])
def test_bad_predictions_stop_before_any_query(demo_set, thread_simulator_factory, tmp_path,
                                               entries, message):
    sim = thread_simulator_factory(latency_ms=1)
    ids = [s["id"] for s in demo_set["samples"]]
    bad = write_lines(tmp_path / "bad.jsonl", entries(ids))
    result = run_manage(*score_args(demo_set, tmp_path / "out", sim.base_urls, bad))
    assert result.returncode == 1
    assert "nothing was sent to the judge" in result.stderr
    assert message.format(ids[0]) in result.stderr
    assert sim.completions() == 0
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_an_unreadable_predictions_file_stops_the_run(demo_set, thread_simulator_factory, tmp_path):
    sim = thread_simulator_factory(latency_ms=1)
    result = run_manage(*score_args(demo_set, tmp_path / "out", sim.base_urls,
                                    tmp_path / "absent.json"))
    assert result.returncode == 1
    assert "absent.json: cannot be read: No such file or directory" in result.stderr
    assert sim.completions() == 0


def test_a_malformed_meta_file_stops_the_run(demo_set, thread_simulator_factory, tmp_path):
    sim = thread_simulator_factory(latency_ms=1)
    demo_set["meta"].write_text("[{]")
    result = run_manage(*score_args(demo_set, tmp_path / "out", sim.base_urls))
    assert result.returncode == 1
    assert "invalid JSON at line 1, column 3" in result.stderr
    assert sim.completions() == 0


def test_missing_and_unreadable_outputs_score_zero_and_are_never_sent(demo_set,
                                                                      thread_simulator_factory,
                                                                      tmp_path):
    sim = thread_simulator_factory(latency_ms=1)
    samples = demo_set["samples"]
    (tmp_path / "garbage.wav").write_bytes(b"not audio at all")
    entries = [{"id": samples[0]["id"], "audio_path": str(tmp_path / "garbage.wav")},
               {"id": samples[1]["id"], "audio_path": "systems/none/absent.wav"}]
    entries += [{"id": s["id"], "audio_path": f"systems/sys-b/{s['id']}.wav"}
                for s in samples[2:]]
    predictions = write_lines(tmp_path / "sub.jsonl", entries)
    out = tmp_path / "out"
    result = run_manage(*score_args(demo_set, out, sim.base_urls, predictions))
    assert result.returncode == 0, result.stderr
    missing = {samples[0]["id"], samples[1]["id"]}
    results, per_sample, run = check_outputs(demo_set, out, missing=missing)
    assert run["missing"][samples[0]["id"]].endswith(": unreadable audio: Error opening "
                                                     f"'{tmp_path / 'garbage.wav'}': Format "
                                                     "not recognised.")
    assert run["missing"][samples[1]["id"]] == "systems/none/absent.wav: file not found"
    assert per_sample[0]["EM"] == 0 and per_sample[0]["IFR"] == 0.0
    assert sim.completions() == len(results)


def test_an_output_folder_of_other_inputs_is_refused(demo_set, thread_simulator_factory, tmp_path):
    sim = thread_simulator_factory(latency_ms=1)
    out = tmp_path / "out"
    assert run_manage(*score_args(demo_set, out, sim.base_urls)).returncode == 0
    result = run_manage(*score_args(demo_set, out, sim.base_urls, demo_set["jsonl"]))
    assert result.returncode == 1
    assert "holds a run of other inputs (predictions_sha256 differ)" in result.stderr


@pytest.mark.parametrize("extra, message", [
    (["--base_urls", "ftp://x"], "'ftp://x' is not an http(s) URL"),
    (["--concurrency", "0"], "--concurrency and --max_attempts must be at least 1"),
])
def test_bad_options_are_refused(demo_set, tmp_path, extra, message):
    args = score_args(demo_set, tmp_path / "out", "http://127.0.0.1:9")
    result = run_manage(*args, *extra)
    assert result.returncode == 1
    assert message in result.stderr


@pytest.mark.parametrize("judge", [{"model": "Qwen2-Audio-7B-Instruct"},
                                   {"api_key": "the-judges-key"}])
def test_a_judge_that_cannot_serve_the_queries_sends_none_and_writes_no_figures(
        demo_set, thread_simulator_factory, tmp_path, judge):
    sim = thread_simulator_factory(latency_ms=5, **judge)
    out = tmp_path / "out"
    result = run_manage(*score_args(demo_set, out, sim.base_urls))
    assert result.returncode == 1
    assert "no judge endpoint can serve these queries, so none was sent" in result.stderr
    reason = "serves 'Qwen2-Audio-7B-Instruct'" if "model" in judge else \
        "refuses our API key"
    assert all(f"{url}: {reason}" in result.stderr for url in sim.urls)
    assert sim.completions() == 0
    assert not (out / "per_sample.json").exists() and not (out / "taxonomy.json").exists()


def test_the_right_api_key_is_sent(demo_set, thread_simulator_factory, tmp_path):
    sim = thread_simulator_factory(latency_ms=5, api_key="the-judges-key")
    out = tmp_path / "out"
    result = run_manage(*score_args(demo_set, out, sim.base_urls, None,
                                    "--api_key", "the-judges-key"))
    assert result.returncode == 0, result.stderr
    check_outputs(demo_set, out, missing={s["id"] for s in demo_set["samples"][-2:]})


def test_a_judge_refusing_the_queries_fails_the_command_until_it_takes_them(
        demo_set, thread_simulator_factory, tmp_path):
    ports = free_ports(2)
    sim = thread_simulator_factory(ports=ports, latency_ms=5, max_audio_seconds=0.1)
    out = tmp_path / "out"
    result = run_manage(*score_args(demo_set, out, sim.base_urls))
    assert result.returncode == 1
    assert "the judge refused" in result.stderr and "no figures were written" in result.stderr
    assert "exceeds the pre-allocated encoder cache size" in result.stderr  # vLLM's words
    assert not (out / "per_sample.json").exists()
    run = json.loads((out / "run.json").read_text())
    assert run["refused_queries"] == expected_queries(
        demo_set, {s["id"] for s in demo_set["samples"][-2:]}) > 0
    # the judge is fixed: the same command asks the refused queries again and finishes
    sim.stop()
    fixed = thread_simulator_factory(ports=ports, latency_ms=5)
    result = run_manage(*score_args(demo_set, out, sim.base_urls))
    assert result.returncode == 0, result.stderr
    assert "0 refused by the judge" in result.stdout
    results, _, run = check_outputs(demo_set, out,
                                    missing={s["id"] for s in demo_set["samples"][-2:]})
    assert all(r["error"] is None for r in results) and run["refused_queries"] == 0
    assert fixed.completions() == len(results)
