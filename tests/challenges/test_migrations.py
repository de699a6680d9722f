"""Boards attached before benchmarks were given to challenges (challenges 0005) stay their
challenges' once migrated (0006): each attached benchmark version is given to the challenge of
its phase, so its organizers may attach it again and no other challenge's may."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from challenges.models import ChallengeBenchmark
from tests.factories import board_benchmark
from tests.scoring.test_migration_neutral_tables import migrate

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.fixture
def before():
    apps = migrate([("challenges", "0005_alter_entry_options_alter_trackentry_options")])
    yield apps
    migrate(latest())


def test_each_attached_board_is_given_to_its_challenge(before):
    attached, loose = board_benchmark(slug="final-single"), board_benchmark(slug="loose")
    Challenge = before.get_model("challenges", "Challenge")
    now = timezone.now()
    for slug, benchmark in (("icassp", attached), ("other", None)):
        challenge = Challenge.objects.create(slug=slug, title=slug)
        phase = before.get_model("challenges", "Phase").objects.create(
            challenge=challenge, slug="final", name="Final", opens_at=now,
            closes_at=now + timedelta(days=1))
        track = before.get_model("challenges", "Track").objects.create(
            challenge=challenge, slug="single", name="Single")
        if benchmark is not None:
            before.get_model("challenges", "PhaseBoard").objects.create(
                phase=phase, track=track, benchmark_id=benchmark.id)
    migrate(latest())
    given = {g.benchmark.slug: g.challenge.slug for g in ChallengeBenchmark.objects.all()}
    assert given == {"final-single": "icassp"}
    assert loose.slug not in given
