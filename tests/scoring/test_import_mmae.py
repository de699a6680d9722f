import json
import shutil

import pytest
from django.core.management import CommandError, call_command

from scoring.models import Benchmark, Criterion, Item
from scoring.synthetic import make_meta, write_benchmark, write_meta_with_empty_audio

pytestmark = pytest.mark.django_db


@pytest.fixture
def mmae_files(tmp_path):
    root = tmp_path / "mmae"
    meta = write_benchmark(root, 12, seed=2)
    return root, meta


def import_(meta, root, *extra):
    call_command("import_mmae", str(meta), "--audio-root", str(root), *extra)


def test_it_imports_samples_and_rubrics(mmae_files):
    root, meta = mmae_files
    data = json.loads(meta.read_text())
    import_(meta, root)
    benchmark = Benchmark.objects.get()
    assert (benchmark.slug, benchmark.kind, benchmark.version) == ("mmae", "mmae", 1)
    assert benchmark.n_items == 12 == Item.objects.count()
    assert benchmark.n_criteria == sum(len(s["rubrics"]) for s in data) == Criterion.objects.count()
    item = Item.objects.get(benchmark=benchmark, position=3)
    assert item.key == data[3]["id"]
    assert item.dimensions == {k: data[3][k]
                               for k in ("complexity", "modality", "granularity", "operations")}
    assert item.content["messages"] == data[3]["messages"]
    criterion = item.criteria.get(index=1)
    assert criterion.question == data[3]["rubrics"][1]["question"]
    assert criterion.spec == {"right": data[3]["rubrics"][1]["right_choice"],
                              "wrong": data[3]["rubrics"][1]["wrong_choices"]}


def test_multi_audio_samples_keep_every_input_in_order(mmae_files):
    root, meta = mmae_files
    import_(meta, root)
    item = Item.objects.get(dimensions__complexity="multi-audio", position=5)
    assert item.media == [f"wav/{item.key}/audio1.wav", f"wav/{item.key}/audio2.wav"]


def test_the_same_file_again_changes_nothing(mmae_files, capsys):
    root, meta = mmae_files
    import_(meta, root)
    first = Benchmark.objects.get()
    import_(meta, root)
    assert "unchanged" in capsys.readouterr().out
    assert list(Benchmark.objects.all()) == [first]
    assert Item.objects.count() == 12


def test_a_changed_file_becomes_a_new_version(mmae_files):
    root, meta = mmae_files
    import_(meta, root)
    data = json.loads(meta.read_text())
    data[0]["rubrics"][0]["question"] += " (revised)"
    meta.write_text(json.dumps(data))
    import_(meta, root)
    assert list(Benchmark.objects.values_list("version", flat=True).order_by("version")) == [1, 2]
    assert Item.objects.count() == 24


def test_a_slug_keeps_benchmarks_apart(mmae_files):
    root, meta = mmae_files
    import_(meta, root)
    import_(meta, root, "--slug", "mmae-copy")
    assert set(Benchmark.objects.values_list("slug", "version")) == {("mmae", 1),
                                                                     ("mmae-copy", 1)}


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d[4].pop("complexity"),
     "sample 5 (id {id4}): field 'complexity' must be a non-empty string, got nothing"),
    (lambda d: d[2]["rubrics"][1].update(wrong_choices="nope"),
     "sample 3 (id {id2}): field 'rubrics[1].wrong_choices' must be a non-empty list of "
     'strings, got "nope"'),
    (lambda d: d[5].update(granularity=[]),
     "sample 6 (id {id5}): field 'granularity' must be a non-empty list of strings, got []"),
    (lambda d: d[1]["operations"][0].pop("operation"),
     "sample 2 (id {id1}): field 'operations[0]' must be"),
    (lambda d: d[3]["rubrics"][0].update(question="Is <audio input3> kept?"),
     "sample 4 (id {id3}): field 'rubrics[0].question' names <audio input3> but the sample "
     "has 1 input audio item(s)"),
    (lambda d: d[6].update(id=d[0]["id"]),
     "sample 7 (id {id0}): duplicate id, first used by sample 1"),
    (lambda d: d[0]["messages"][0].update(content=[{"type": "text", "text": "no audio"}]),
     "sample 1 (id {id0}): field 'messages' holds no audio item"),
    (lambda d: d.__setitem__(8, "not an object"),
     'sample 9: must be a JSON object, got "not an object"'),
])
def test_a_malformed_file_names_sample_and_field_and_imports_nothing(mmae_files, mutate, message):
    root, meta = mmae_files
    data = json.loads(meta.read_text())
    ids = {f"id{i}": s["id"] for i, s in enumerate(data)}
    mutate(data)
    meta.write_text(json.dumps(data))
    with pytest.raises(CommandError) as info:
        import_(meta, root)
    assert "nothing imported" in str(info.value)
    assert message.format(**ids) in str(info.value)
    assert Benchmark.objects.count() == Item.objects.count() == Criterion.objects.count() == 0


def test_invalid_json_names_line_and_column(tmp_path):
    meta = tmp_path / "MMAE-meta.json"
    meta.write_text('[\n  {"id": "x",\n  "complexity" "single"}\n]')
    with pytest.raises(CommandError, match=r"invalid JSON at line 3, column 16"):
        import_(meta, tmp_path)
    assert Benchmark.objects.count() == 0


def test_a_top_level_object_is_refused(tmp_path):
    meta = tmp_path / "MMAE-meta.json"
    meta.write_text(json.dumps({"samples": make_meta(2)}))
    with pytest.raises(CommandError, match="the top level must be a JSON array"):
        import_(meta, tmp_path)


def test_missing_input_audio_is_named_and_nothing_imported(mmae_files):
    root, meta = mmae_files
    data = json.loads(meta.read_text())
    shutil.rmtree(root / "wav" / data[9]["id"])
    with pytest.raises(CommandError) as info:
        import_(meta, root)
    assert (f"sample 10 (id {data[9]['id']}): input audio 'wav/{data[9]['id']}/audio1.wav' "
            f"not found under {root}") in str(info.value)
    assert Benchmark.objects.count() == Item.objects.count() == 0


def test_an_unreadable_path_is_named(tmp_path):
    with pytest.raises(CommandError, match="nope.json: cannot be read"):
        import_(tmp_path / "nope.json", tmp_path)


@pytest.mark.slow
def test_a_full_size_file_imports(tmp_path):
    """2,000 samples and 17,741 rubrics, as the real benchmark has."""
    # Empty files are enough: the importer checks existence only.
    meta = write_meta_with_empty_audio(make_meta(2000, seed=1, n_rubrics=17741),
                                       tmp_path / "MMAE-meta.json", tmp_path)
    import_(meta, tmp_path)
    assert Benchmark.objects.get().n_criteria == 17741 == Criterion.objects.count()
    assert Item.objects.count() == 2000


def test_a_file_nested_too_deeply_imports_nothing_and_says_why(tmp_path):
    meta = tmp_path / "MMAE-meta.json"
    meta.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CommandError) as caught:
        import_(meta, tmp_path)
    assert f"{meta}: invalid JSON at line 1, column 65: nested too deeply (more than 64 " \
        "levels)" in str(caught.value)
    assert not Benchmark.objects.exists()
