"""Reading JSON and JSONL that people send (scoring/jsontext.py)."""

import json
import random

import pytest

from config import jsontext

DEEP = "[" * 100_000 + "]" * 100_000


class TestLoads:
    def test_it_reads_what_json_reads(self):
        text = '{"a": [1, 2.5, {"b": null}], "c": "x[{y"}'
        assert jsontext.loads(text) == json.loads(text)

    def test_nesting_past_the_limit_is_refused_where_it_goes_too_deep(self):
        text = "[\n" + "[" * jsontext.MAX_DEPTH + "]" * jsontext.MAX_DEPTH + "\n]"
        with pytest.raises(json.JSONDecodeError) as caught:
            jsontext.loads(text)
        assert caught.value.msg == f"nested too deeply (more than {jsontext.MAX_DEPTH} levels)"
        assert (caught.value.lineno, caught.value.colno) == (2, jsontext.MAX_DEPTH)

    def test_nesting_up_to_the_limit_is_read(self):
        depth = jsontext.MAX_DEPTH
        assert jsontext.loads("[" * depth + "]" * depth) is not None
        assert jsontext.loads('{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)) is not None

    def test_a_hundred_thousand_levels_are_refused_not_a_recursion_error(self):
        with pytest.raises(json.JSONDecodeError, match="nested too deeply"):
            jsontext.loads(DEEP)

    def test_brackets_inside_strings_do_not_count(self):
        text = json.dumps(["[" * 500, '{"\\"[[[' * 100, "\\"])
        assert jsontext.loads(text) == json.loads(text)

    def test_bytes_are_read_as_utf8(self):
        assert jsontext.loads('{"é": 1}'.encode()) == {"é": 1}

    def test_options_go_to_json(self):
        def strict(name):
            raise ValueError(f"{name} is not JSON")

        with pytest.raises(ValueError, match="NaN is not JSON"):
            jsontext.loads("[NaN]", parse_constant=strict)


class TestQuickDepthCheck:
    """`_shallow` lets a text through without the token scan only when the scan would too."""

    @pytest.mark.slow
    def test_it_never_passes_what_the_scan_refuses(self):
        rng = random.Random(7)
        passed = 0
        for _ in range(20_000):
            text = "".join(rng.choice('[]{}"a\\') for _ in range(rng.randint(0, 160)))
            if jsontext._shallow(text):
                passed += 1
                jsontext._check_depth(text)  # raises if the quick check was wrong
        assert passed > 100  # the quick path is taken, not only the scan

    def test_strings_with_escaped_quotes_and_brackets_are_cut(self):
        text = json.dumps({"a": '\\"[[[' * 100, "b": ["x\\", "]]]"]})
        assert jsontext._shallow(text)

    def test_depth_past_the_limit_goes_to_the_scan(self):
        depth = jsontext.MAX_DEPTH + 1
        assert not jsontext._shallow("[" * depth + "]" * depth)
        assert jsontext._shallow("[" * (depth - 1) + "]" * (depth - 1))

    def test_unbalanced_brackets_go_to_the_scan(self):
        assert not jsontext._shallow("]][[" + "[]" * 40)

    def test_an_unterminated_string_before_deep_brackets_is_an_error_not_a_crash(self):
        with pytest.raises(json.JSONDecodeError):
            jsontext.loads('["x' + DEEP)


class TestLines:
    def test_lines_end_at_newlines_as_pythons_file_iteration_reads_them(self):
        text = '{"a": "x\u2028y\u2029z\x85"}\r\n{"b": 2}\n\n{"c": 3}\r{"d": 4}'
        assert list(jsontext.lines(text)) == [
            (1, '{"a": "x\u2028y\u2029z\x85"}'), (2, '{"b": 2}'), (4, '{"c": 3}'),
            (5, '{"d": 4}')]

    def test_a_file_without_a_final_newline_keeps_its_last_line(self):
        assert list(jsontext.lines("1\n2")) == [(1, "1"), (2, "2")]
