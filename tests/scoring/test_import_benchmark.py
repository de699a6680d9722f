"""`manage.py import_benchmark KIND PATH`: one command for every kind, the kind's own defaults
(its board's slug, whether it needs its audio root), and the old names as aliases."""

import pytest
from django.core.management import CommandError, call_command

from scoring.models import Benchmark
from scoring.synthetic import write_benchmark
from tests.scoring.airbench_data import chat_meta, write

pytestmark = pytest.mark.django_db


def test_it_imports_an_mmae_file_as_its_alias_does(tmp_path, capsys):
    root = tmp_path / "mmae"
    meta = write_benchmark(root, 6, seed=3)
    call_command("import_benchmark", "mmae", str(meta), "--audio-root", str(root))
    out = capsys.readouterr().out
    benchmark = Benchmark.objects.get()
    assert (benchmark.slug, benchmark.kind, benchmark.n_items) == ("mmae", "mmae", 6)
    assert f"imported {benchmark} (6 samples, {benchmark.n_criteria} rubrics)" in out
    call_command("import_mmae", str(meta), "--audio-root", str(root))
    assert "unchanged" in capsys.readouterr().out and Benchmark.objects.count() == 1


def test_a_text_kind_takes_its_own_slug_and_needs_no_audio(tmp_path, capsys):
    path = write(tmp_path / "Chat_meta.json", chat_meta())
    call_command("import_benchmark", "airbench-chat", str(path))
    benchmark = Benchmark.objects.get()
    assert (benchmark.slug, benchmark.kind) == ("air-bench-chat", "airbench-chat")
    assert "imported air-bench-chat v1 (6 items)" in capsys.readouterr().out


def test_a_kind_whose_judge_hears_the_inputs_needs_its_audio_root(tmp_path):
    meta = write_benchmark(tmp_path / "mmae", 2, seed=1)
    with pytest.raises(CommandError, match="needs its audio root"):
        call_command("import_benchmark", "mmae", str(meta))
    assert not Benchmark.objects.exists()


def test_an_unknown_kind_is_refused_naming_the_known_ones(tmp_path):
    with pytest.raises(CommandError, match="invalid choice: 'captions'.*mmae"):
        call_command("import_benchmark", "captions", str(tmp_path / "x.json"))
