import pytest
from django.core.management import CommandError, call_command

from scoring.models import Benchmark, Criterion, Item
from tests.scoring.airbench_data import chat_meta, foundation_meta, write

pytestmark = pytest.mark.django_db


def test_it_imports_the_foundation_track(tmp_path, capsys):
    path = write(tmp_path / "Foundation_meta.json", foundation_meta())
    call_command("import_airbench", "--foundation", str(path))
    assert "imported air-bench-foundation v1 (6 items)" in capsys.readouterr().out
    benchmark = Benchmark.objects.get()
    assert (benchmark.kind, benchmark.n_items, benchmark.n_criteria) == \
        ("airbench-foundation", 6, 6)
    item = Item.objects.get(benchmark=benchmark, key="3")
    assert item.dimensions == {"domain": "speech", "task": "Speaker gender recognition",
                               "task_name": "Speaker_Gender_Recognition", "dataset": "meld"}
    assert item.content == {"question": "Question 3?", "choices": ["female", "male"],
                            "answer_gt": "male", "path": "3.wav"}
    assert item.media == ["Foundation/Speaker_Gender_Recognition_meld/3.wav"]
    criterion = Criterion.objects.get(item=item)
    assert criterion.spec == {"right": "male", "wrong": ["female"]}


def test_it_imports_the_chat_track_under_its_own_slug(tmp_path):
    path = write(tmp_path / "Chat_meta.json", chat_meta())
    call_command("import_airbench", "--chat", str(path), "--slug", "air-chat")
    benchmark = Benchmark.objects.get()
    assert (benchmark.slug, benchmark.kind, benchmark.n_items) == ("air-chat", "airbench-chat",
                                                                  6)
    item = Item.objects.get(benchmark=benchmark, key="4")
    assert item.dimensions == {"category": "speech_and_sound", "task": "speech_and_sound_QA",
                               "dataset": "audiocaps_cv"}
    assert item.content["meta_info"] == "A description of clip 4."


def test_the_same_file_again_changes_nothing_and_a_changed_one_is_a_new_version(tmp_path,
                                                                                capsys):
    path = write(tmp_path / "Chat_meta.json", chat_meta())
    call_command("import_airbench", "--chat", str(path))
    call_command("import_airbench", "--chat", str(path))
    assert "unchanged" in capsys.readouterr().out
    assert Benchmark.objects.count() == 1
    write(path, chat_meta()[:4])
    call_command("import_airbench", "--chat", str(path))
    assert list(Benchmark.objects.values_list("version", "n_items")) == [(2, 4), (1, 6)]


def test_a_malformed_file_imports_nothing(tmp_path):
    data = foundation_meta()
    data[4]["answer_gt"] = "nope"
    path = write(tmp_path / "Foundation_meta.json", data)
    with pytest.raises(CommandError, match=r"item 5 \(uniq_id 5\): field 'answer_gt'"):
        call_command("import_airbench", "--foundation", str(path))
    assert not Benchmark.objects.exists() and not Item.objects.exists()


def test_with_an_audio_root_every_item_needs_its_audio(tmp_path):
    path = write(tmp_path / "Chat_meta.json", chat_meta())
    root = tmp_path / "audio"
    for item in chat_meta()[1:]:
        target = root / "Chat" / f"{item['task_name']}_{item['dataset_name']}" / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"RIFF")
    with pytest.raises(CommandError, match=r"sample 1 \(id 0\): input audio "
                                           r"'Chat/speech_QA_iemocap/0.wav' not found"):
        call_command("import_airbench", "--chat", str(path), "--audio-root", str(root))
    assert not Benchmark.objects.exists()
    (root / "Chat" / "speech_QA_iemocap").mkdir(parents=True, exist_ok=True)
    (root / "Chat" / "speech_QA_iemocap" / "0.wav").write_bytes(b"RIFF")
    call_command("import_airbench", "--chat", str(path), "--audio-root", str(root))
    assert Benchmark.objects.get().audio_root == str(root.resolve())


def test_a_slug_of_another_kind_is_refused(tmp_path):
    chat = write(tmp_path / "Chat_meta.json", chat_meta())
    foundation = write(tmp_path / "Foundation_meta.json", foundation_meta())
    call_command("import_airbench", "--chat", str(chat), "--slug", "air")
    with pytest.raises(CommandError, match="is of kind 'airbench-chat', not "
                                           "'airbench-foundation'"):
        call_command("import_airbench", "--foundation", str(foundation), "--slug", "air")


def test_a_track_is_required(tmp_path):
    with pytest.raises(CommandError):
        call_command("import_airbench")


def test_a_file_nested_too_deeply_imports_nothing_and_says_why(tmp_path):
    path = tmp_path / "Chat_meta.json"
    path.write_text('[{"uniq_id": ' + "[" * 100_000 + "]" * 100_000 + "}]")
    with pytest.raises(CommandError) as caught:
        call_command("import_airbench", "--chat", str(path))
    assert f"{path}: invalid JSON at line 1, column 76: nested too deeply (more than 64 " \
        "levels)" in str(caught.value)
    assert not Benchmark.objects.exists()
