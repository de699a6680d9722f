import json

import pytest

from scoring.kinds.audio_header import check_audio
from scoring.kinds.files import PredictionError
from scoring.kinds.mmae.predictions import load_predictions, parse_predictions
from scoring.synthetic import write_wav

IDS = {"a1", "b2", "c3"}


def official(sample_id, path="out/x.wav"):
    return {"id": sample_id, "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "edit"},
            {"type": "audio", "audio_url": f"wav/{sample_id}/audio1.wav"}]},
        {"role": "assistant", "content": [{"type": "audio", "audio_url": path}]},
    ]}


def problems(text, name="predictions.json"):
    with pytest.raises(PredictionError) as info:
        parse_predictions(text, name=name, known_ids=IDS)
    return info.value.problems


class TestFormats:
    def test_it_reads_the_official_predictions_json(self):
        text = json.dumps([official("a1", "out/a1.wav"), official("b2", "out/b2.wav")])
        result = parse_predictions(text, name="predictions.json", known_ids=IDS)
        assert [(p.sample_id, p.audio_path, p.where) for p in result] == [
            ("a1", "out/a1.wav", "entry 1"), ("b2", "out/b2.wav", "entry 2")]

    def test_it_reads_the_challenge_jsonl_and_skips_blank_lines(self):
        text = '{"id": "a1", "audio_path": "audio/a1.wav"}\n\n{"id": "c3", "audio_path": ' \
               '"audio/c3.wav"}\n'
        result = parse_predictions(text, name="submission.jsonl", known_ids=IDS)
        assert [(p.sample_id, p.audio_path, p.where) for p in result] == [
            ("a1", "audio/a1.wav", "line 1"), ("c3", "audio/c3.wav", "line 3")]

    def test_jsonl_lines_end_only_where_pythons_file_iteration_ends_them(self):
        rows = [{"id": "a1", "audio_path": "out/a\u2028\u2029\x85.wav"},
                {"id": "b2", "audio_path": "out/b.wav"}]
        text = json.dumps(rows[0], ensure_ascii=False) + "\r\n" + json.dumps(rows[1]) + "\r\n"
        result = parse_predictions(text, name="submission.jsonl", known_ids=IDS)
        assert [(p.sample_id, p.audio_path, p.where) for p in result] == [
            ("a1", "out/a\u2028\u2029\x85.wav", "line 1"), ("b2", "out/b.wav", "line 2")]

    def test_an_audio_url_object_is_accepted(self):
        entry = official("a1")
        entry["messages"][-1]["content"] = [{"type": "audio", "audio_url": {"url": "o.wav"}}]
        result = parse_predictions(json.dumps([entry]), name="p.json", known_ids=IDS)
        assert result[0].audio_path == "o.wav"


class TestBadInput:
    def test_a_json_array_nested_too_deeply_is_refused_naming_the_file(self):
        assert problems("[" * 100_000 + "]" * 100_000) == [
            "predictions.json: invalid JSON at line 1, column 65: nested too deeply (more than "
            "64 levels)"]

    def test_a_jsonl_line_nested_too_deeply_is_refused_naming_the_line(self):
        text = '{"id": "a1", "audio_path": "a.wav"}\n{"id": ' + "[" * 60_000 + "\n"
        assert problems(text, "submission.jsonl") == [
            "submission.jsonl line 2: invalid JSON at column 71: nested too deeply (more than "
            "64 levels)"]

    def test_a_jsonl_syntax_error_names_the_line(self):
        text = '{"id": "a1", "audio_path": "a.wav"}\n{"id": "b2", "audio_path": \n'
        assert problems(text, "submission.jsonl") == [
            "submission.jsonl line 2: invalid JSON at column 28: Expecting value"]

    def test_a_json_syntax_error_names_line_and_column(self):
        assert problems('[\n{"id": "a1",}\n]') == [
            "predictions.json: invalid JSON at line 2, column 13: Expecting property name "
            "enclosed in double quotes"]

    def test_unknown_and_duplicate_ids_are_named_with_their_lines(self):
        text = "\n".join(json.dumps(e) for e in [
            {"id": "a1", "audio_path": "a.wav"},
            {"id": "zz", "audio_path": "z.wav"},
            {"id": "a1", "audio_path": "a2.wav"},
        ])
        assert problems(text, "s.jsonl") == [
            "s.jsonl line 2: unknown id 'zz' (not in the benchmark)",
            "s.jsonl line 3: duplicate id 'a1', first on line 1",
        ]

    def test_wrong_shapes_are_named(self):
        no_assistant = official("b2")
        no_assistant["messages"].pop()
        two_audios = official("c3")
        two_audios["messages"][-1]["content"].append({"type": "audio", "audio_url": "y.wav"})
        text = json.dumps([["a1"], {"id": 7}, no_assistant, two_audios,
                           {"id": "a1", "audio_path": ""},
                           # another benchmark's line (AIR-Bench's), and an empty one
                           {"uniq_id": 1, "response": "A"}, {}])
        assert problems(text) == [
            'predictions.json entry 1: must be a JSON object, got ["a1"]',
            "predictions.json entry 2: 'id' must be a non-empty string, got 7",
            "predictions.json entry 3 (id b2): the last message must be the assistant's turn "
            "holding the edited audio",
            "predictions.json entry 4 (id c3): the assistant turn must hold exactly one audio "
            "item, found 2",
            "predictions.json entry 5 (id a1): 'audio_path' must be a non-empty string, got \"\"",
            "predictions.json entry 6: 'id' must be a non-empty string, got nothing (its keys: "
            '"uniq_id", "response")',
            "predictions.json entry 7: 'id' must be a non-empty string, got nothing (an empty "
            "object)",
        ]

    def test_an_empty_file_is_refused(self):
        assert problems("[]") == ["predictions.json: the file holds no predictions"]

    def test_an_unreadable_file_is_named(self, tmp_path):
        with pytest.raises(PredictionError, match="nope.json: cannot be read"):
            load_predictions(tmp_path / "nope.json", known_ids=IDS)

    def test_a_binary_file_is_refused_as_not_utf8(self, tmp_path):
        path = tmp_path / "p.json"
        path.write_bytes(b"\xff\xfe\x00garbage")
        with pytest.raises(PredictionError, match="not UTF-8"):
            load_predictions(path, known_ids=IDS)


class TestCheckAudio:
    def test_a_wav_passes(self, tmp_path):
        write_wav(tmp_path / "ok.wav", seconds=0.1, frequency=440, seed=1)
        assert check_audio(tmp_path / "ok.wav") is None

    def test_absent_garbage_and_empty_files_are_named(self, tmp_path):
        (tmp_path / "bad.wav").write_bytes(b"RIFF not really")
        write_wav(tmp_path / "empty.wav", seconds=0, frequency=440, seed=1)
        assert check_audio(tmp_path / "none.wav") == "file not found"
        assert check_audio(tmp_path / "bad.wav").startswith("unreadable audio")
        assert check_audio(tmp_path / "empty.wav") == "empty audio (no frames)"


class TestLongValues:
    """No value an author sends comes back whole, and no line is held whole past its cap."""

    def test_an_over_long_line_is_refused_unread_and_the_next_line_is_still_read(self, tmp_path):
        import tracemalloc

        from scoring.kinds.files import MAX_LINE_CHARS, text_stream

        path = tmp_path / "submission.jsonl"
        long = json.dumps({"id": "s1", "audio_path": "a" * 20_000_000})
        path.write_text(f"{long}\n" + json.dumps({"id": "s9", "audio_path": "x.wav"}) + "\n")
        tracemalloc.start()
        with open(path, "rb") as binary, text_stream(binary) as stream, \
                pytest.raises(PredictionError) as info:
            parse_predictions(stream, name="submission.jsonl", known_ids=IDS)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 8 * 1024**2  # a 20 MB line never held whole
        assert info.value.problems[0] == (f"submission.jsonl line 1: {len(long):,} characters; "
                                          f"a line holds at most {MAX_LINE_CHARS:,}")
        assert "line 2: unknown id 's9'" in info.value.problems[1]

    def test_an_over_long_path_is_refused_saying_its_length(self):
        text = json.dumps([{"id": "s1", "audio_path": "a/" * 50_000}])
        with pytest.raises(PredictionError) as info:
            parse_predictions(text, name="predictions.json", known_ids=IDS)
        assert info.value.problems == ["predictions.json entry 1 (id s1): 'audio_path' is "
                                       "100,000 characters; a path is at most 1,024"]

    def test_an_unknown_id_is_quoted_cut(self):
        text = json.dumps([{"id": "z" * 1_000_000, "audio_path": "a.wav"}])
        with pytest.raises(PredictionError) as info:
            parse_predictions(text, name="predictions.json", known_ids=IDS)
        (problem,) = info.value.problems
        assert len(problem) < 300 and problem.startswith("predictions.json entry 1: unknown id")

    def test_a_service_error_cuts_a_reason_saying_by_how_much(self):
        from config.errors import ServiceError
        from config.text import MAX_PROBLEM_CHARS

        error = ServiceError(["short", "x" * 1_000_000])
        assert error.problems[0] == "short"
        assert len(error.problems[1]) <= MAX_PROBLEM_CHARS
        assert error.problems[1].endswith(f"... ({1_000_000 - MAX_PROBLEM_CHARS + 40:,} "
                                          "characters cut)")
