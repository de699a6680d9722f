"""Importing a challenge's benchmarks: `--hidden-rubrics` keeps its rubrics from everyone but
staff and its organizers (scoring.visibility.disclosure), `--where` keeps a track's items; a
filter naming a bucket no item has imports nothing."""

from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from challenges.models import Challenge, Organizer, Phase, PhaseBoard, Track
from scoring import synthetic
from scoring.kinds import get_kind
from scoring.models import Benchmark, Item
from scoring.visibility import Disclosure, disclosure

pytestmark = pytest.mark.django_db


@pytest.fixture
def meta(tmp_path):
    return synthetic.write_benchmark(tmp_path / "set", 24, seed=5)


def test_a_track_import_keeps_only_its_items_and_hides_its_rubrics(meta):
    call_command("import_benchmark", "mmae", str(meta), "--audio-root", str(meta.parent),
                 "--slug", "final-single", "--hidden-rubrics", "--where", "complexity=single")
    benchmark = Benchmark.objects.get(slug="final-single")
    kind = get_kind("mmae")
    everything = kind.load(meta)
    singles = [s for s in everything
               if ("complexity", "single") in set(kind.item_buckets(kind.to_rows(s).dimensions))]
    assert 0 < len(singles) < len(everything)
    assert benchmark.rubrics_hidden and benchmark.n_items == len(singles)
    assert sorted(Item.objects.filter(benchmark=benchmark).values_list("key", flat=True)) \
        == sorted(kind.to_rows(s).key for s in singles)


def test_a_filter_naming_a_bucket_no_item_has_imports_nothing(meta):
    with pytest.raises(CommandError, match="no item has complexity = 'singel'"):
        call_command("import_benchmark", "mmae", str(meta), "--audio-root", str(meta.parent),
                     "--slug", "final-single", "--where", "complexity=singel")
    assert not Benchmark.objects.filter(slug="final-single").exists()
    with pytest.raises(CommandError, match="expected DIMENSION=BUCKET"):
        call_command("import_benchmark", "mmae", str(meta), "--where", "complexity")


def test_disclosure_of_a_hidden_benchmark_follows_its_phase_and_organizers(
        meta, author, other_author, staff):
    call_command("import_benchmark", "mmae", str(meta), "--audio-root", str(meta.parent),
                 "--slug", "final-all", "--hidden-rubrics")
    call_command("import_benchmark", "mmae", str(meta), "--audio-root", str(meta.parent),
                 "--slug", "open")
    hidden, open_ = Benchmark.objects.get(slug="final-all"), Benchmark.objects.get(slug="open")
    # No challenge claims it yet: nobody but staff learns anything.
    assert disclosure(hidden) is Disclosure.NOTHING
    assert disclosure(hidden, author) is Disclosure.NOTHING
    assert disclosure(hidden, staff) is Disclosure.FULL
    assert disclosure(open_) is Disclosure.FULL
    challenge = Challenge.objects.create(slug="icassp", title="Challenge")
    now = timezone.now()
    phase = Phase.objects.create(challenge=challenge, slug="final", name="Final",
                                 kind=Phase.Kind.FINAL, opens_at=now,
                                 closes_at=now + timedelta(days=3),
                                 shown=Phase.Shown.OVERALL)
    track = Track.objects.create(challenge=challenge, slug="agent", name="Agent")
    PhaseBoard.objects.create(phase=phase, track=track, benchmark=hidden)
    Organizer.objects.create(challenge=challenge, user=author)
    assert disclosure(hidden, author) is Disclosure.FULL
    assert disclosure(hidden, other_author) is Disclosure.OVERALL
    assert disclosure(hidden) is Disclosure.OVERALL
    Benchmark.objects.filter(pk=hidden.pk).update(rubrics_hidden=False)  # as the reveal does
    hidden.refresh_from_db()
    assert disclosure(hidden) is Disclosure.FULL


def test_reveal_makes_the_phase_boards_public_once_and_only_after_closing(meta, capsys):
    call_command("import_benchmark", "mmae", str(meta), "--audio-root", str(meta.parent),
                 "--slug", "final-all", "--hidden-rubrics")
    hidden = Benchmark.objects.get(slug="final-all")
    challenge = Challenge.objects.create(slug="icassp", title="Challenge")
    now = timezone.now()
    phase = Phase.objects.create(challenge=challenge, slug="final", name="Final",
                                 kind=Phase.Kind.FINAL, opens_at=now - timedelta(days=2),
                                 closes_at=now + timedelta(hours=1))
    track = Track.objects.create(challenge=challenge, slug="agent", name="Agent")
    PhaseBoard.objects.create(phase=phase, track=track, benchmark=hidden)
    version = hidden.board_version
    with pytest.raises(CommandError, match="is open until"):
        call_command("reveal", "icassp")
    Phase.objects.filter(pk=phase.pk).update(closes_at=now - timedelta(minutes=1))
    call_command("reveal", "icassp")
    hidden.refresh_from_db()
    assert not hidden.rubrics_hidden and hidden.board_version > version
    assert disclosure(hidden) is Disclosure.FULL
    assert "revealed" in capsys.readouterr().out
    with pytest.raises(CommandError, match="was revealed at"):
        call_command("reveal", "icassp")
