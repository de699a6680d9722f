"""A whole challenge on the judge simulator, as its organizers and three teams run it: a
development phase on public boards, a final phase on a hidden-rubric set with two tracks (a
Single Model track of `single` items, an Agent track of every item), uploads through the
participants' API scored by a real Celery worker, a team over its daily limit, the deadline and
the freeze, a late upload, a disqualification, the reveal. The official boards equal what
`manage.py score` computes from the same outputs on each track's items."""

import io
import json
import zipfile
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from challenges import organizer_services, teams
from challenges.models import Challenge, Entry, Phase, PhaseBoard, RevealNotice
from challenges.official import official_ranking
from challenges.tasks import freeze_phases
from challenges.verification import finalists_invite, verification_decide
from scoring import synthetic
from scoring.kinds import get_kind
from scoring.models import Benchmark
from scoring.visibility import Disclosure, disclosure
from submissions.models import Submission
from tests.conftest import cast_member, free_ports, judge_config, run_manage
from tests.submissions.conftest import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SEED = 11  # the judge configs', and the clean scorings'
ATTESTATIONS = {
    "single": ["One end-to-end model, no external tools"],
    "agent": ["Open-source components only", "No human in the loop"],
}


def items_of(meta, where: str | None) -> list[dict]:
    """The samples of a metadata file, or those of one complexity."""
    samples = json.loads(meta.read_text())
    return [s for s in samples if where is None or s["complexity"] == where]


class Team:
    """A team's uploads through the participants' API, with its members' tokens."""

    def __init__(self, challenge, name, captain):
        self.name, self.captain = name, captain
        self.team = teams.team_create(challenge=challenge, user=captain, name=name)
        _, key = ApiToken.issue(user=captain, name="challenge")
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        self.uploads: dict[int, tuple] = {}  # submission id -> (manifest, its set's folder)

    def enter(self, track):
        teams.track_enter(team=self.team, track=track, user=self.captain,
                          attested=list(track.attestations))

    def upload(self, slug, phase, track, samples, *, root, system: str, seed: int):
        """POST the system's outputs of `samples` (a JSONL manifest and a zip of the audio),
        written beside the inputs of their set under `root`."""
        manifest = synthetic.write_system(root, samples, name=system, seed=seed, fmt="jsonl")
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as z:
            for sample in samples:
                relative = f"systems/{system}/{sample['id']}.wav"
                z.write(root / relative, relative)
        archive.seek(0)
        archive.name = "audio.zip"
        with manifest.open("rb") as predictions:
            response = self.client.post(
                f"/c/{slug}/api/{phase}/{track}/entries/",
                {"model_name": f"{self.name} {system}", "predictions": predictions,
                 "audio": archive}, format="multipart")
        if response.status_code == 201:
            self.uploads[response.json()["submission"]] = (manifest, root)
        return response


def finished(submission_ids, log):
    wait_for(lambda: all(Submission.objects.select_related("current_run").get(id=i).state
                         == "finished" for i in submission_ids),
             300, f"submissions {sorted(submission_ids)} to finish", log)


def clean_figures(tmp_path, meta_samples, team: Team, submission_id: int, urls: str) -> dict:
    """`manage.py score` of the submission's outputs on its board's items (a metadata file of
    those items alone): its overall figures."""
    manifest, root = team.uploads[submission_id]
    meta = tmp_path / f"meta-{submission_id}.json"
    meta.write_text(json.dumps(meta_samples))
    out = tmp_path / f"clean-{submission_id}"
    result = run_manage("score", "--meta", str(meta), "--predictions", str(manifest),
                        "--audio_root", str(root), "--base_urls", urls,
                        "--output_dir", str(out), "--seed", str(SEED))
    assert result.returncode == 0, result.stderr
    return json.loads((out / "taxonomy.json").read_text())["overall"]


def test_a_whole_challenge_from_development_to_the_reveal(
        tmp_path, settings, worker_factory, thread_simulator_factory, django_user_model,
        staff):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SCORING_BATCH_ITEMS = 4
    settings.SUBMISSIONS_IN_FLIGHT = 10  # the site's own limits, under which the team's apply
    settings.SUBMISSIONS_PER_DAY = 50
    ports = free_ports(2)
    thread_simulator_factory(ports=ports, latency_ms=2, slots=8)
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    worker = worker_factory(ports, SCORING_BATCH_ITEMS="4")()

    # The released set (development) and the organizers' unreleased one (final).
    public_root, final_root = tmp_path / "public", tmp_path / "final"
    public_meta = synthetic.write_benchmark(public_root, 14, seed=31)
    final_meta = synthetic.write_benchmark(final_root, 14, seed=32)
    imports = [("dev-agent", public_meta, []), ("dev-single", public_meta, ["single"]),
               ("final-agent", final_meta, []), ("final-single", final_meta, ["single"])]
    for slug, meta, where in imports:
        hidden = ["--hidden-rubrics"] if slug.startswith("final") else []
        call_command("import_benchmark", "mmae", str(meta), "--audio-root", str(meta.parent),
                     "--slug", slug, *hidden,
                     *(["--where", f"complexity={where[0]}"] if where else []))
        judge_config(urls, seed=SEED, benchmark=Benchmark.objects.get(slug=slug))

    # Staff make the challenge and its organizer; the organizer sets it up.
    organizer = cast_member(django_user_model, "organizer", "org@example.com")
    challenge = Challenge.objects.create(slug="icassp", title="Audio Editing Challenge",
                                         time_zone="America/Los_Angeles")
    organizer_services.organizer_grant(challenge=challenge, actor=staff, who="organizer")
    call_command("challenge_benchmark", "icassp", *(slug for slug, *_ in imports))
    now = timezone.now()
    tracks = {slug: organizer_services.track_save(
        challenge=challenge, actor=organizer, fields={
            "slug": slug, "name": {"single": "Single Model", "agent": "Agent"}[slug],
            "rules": "", "attestations": ATTESTATIONS[slug],
            "where": {"complexity": ["single"]} if slug == "single" else {},
            "position": position}) for position, slug in enumerate(["single", "agent"])}
    phases = {}
    for slug, kind, closes in (("dev", Phase.Kind.DEVELOPMENT, timedelta(days=30)),
                               ("final", Phase.Kind.FINAL, timedelta(days=2))):
        phases[slug] = organizer_services.phase_save(
            challenge=challenge, actor=organizer, fields={
                "slug": slug, "name": slug.title(), "kind": kind,
                "opens_at": now - timedelta(hours=1), "closes_at": now + closes,
                "per_day": 3, "total": 10, "late_uploads": True,
                "shown": Phase.Shown.OVERALL})
        for track in tracks:
            organizer_services.board_attach(phase=phases[slug], track=tracks[track],
                                            benchmark_slug=f"{slug}-{track}", actor=organizer)

    # Three teams: A in both tracks, B in the Agent track, C in the Single Model track.
    people = {n: cast_member(django_user_model, n, f"{n}@example.com") for n in ("a", "b", "c")}
    team = {n: Team(challenge, f"Team {n.upper()}", people[n]) for n in people}
    team["a"].enter(tracks["single"])
    team["a"].enter(tracks["agent"])
    team["b"].enter(tracks["agent"])
    team["c"].enter(tracks["single"])

    public = {w: items_of(public_meta, w) for w in (None, "single")}
    final = {w: items_of(final_meta, w) for w in (None, "single")}
    assert 0 < len(final["single"]) < len(final[None])

    sets = {"dev": (public_root, public), "final": (final_root, final)}

    def upload(who, phase, track, system, seed):
        root, samples = sets[phase]
        return team[who].upload("icassp", phase, track,
                                samples["single" if track == "single" else None], root=root,
                                system=system, seed=seed)

    # Development: every team on its tracks' public boards.
    development = [upload("a", "dev", "single", "dev-a1", 1),
                   upload("a", "dev", "agent", "dev-a2", 2),
                   upload("b", "dev", "agent", "dev-b", 3),
                   upload("c", "dev", "single", "dev-c", 4)]
    assert [r.status_code for r in development] == [201] * 4, [r.content for r in development]

    # Final: A uses its three uploads of the day; the fourth is refused with the next instant.
    finals = [upload("a", "final", "agent", "fa1", 5), upload("a", "final", "agent", "fa2", 6),
              upload("a", "final", "single", "fa3", 7), upload("b", "final", "agent", "fb", 8),
              upload("c", "final", "single", "fc", 9)]
    assert [r.status_code for r in finals] == [201] * 5, [r.content for r in finals]
    over = upload("a", "final", "single", "fa4", 10)
    assert over.status_code == 429, over.content
    assert "Retry-After" in over and int(over["Retry-After"]) > 0
    first = Entry.objects.filter(team=team["a"].team, board__phase=phases["final"]) \
        .order_by("received_at").first()
    # the instant a day after the first, rounded up to the second (never earlier than it is)
    next_at = first.received_at + timedelta(days=1)
    next_at = next_at.replace(microsecond=0) + timedelta(seconds=bool(next_at.microsecond))
    assert f"possible at {next_at:%Y-%m-%d %H:%M:%S} UTC" in over.content.decode()
    scored = [r.json()["submission"] for r in development + finals]
    finished(scored, worker.log_path)

    # While the phase runs: participants and visitors see overall figures, never rubrics.
    agent_board = PhaseBoard.objects.get(phase=phases["final"], track=tracks["agent"])
    assert disclosure(agent_board.benchmark, people["a"]) is Disclosure.OVERALL
    assert disclosure(agent_board.benchmark, organizer) is Disclosure.FULL
    rubric = final[None][0]["rubrics"][0]["question"]
    page = team["a"].client.get("/b/final-agent/")
    assert page.status_code == 200 and rubric not in page.content.decode()
    assert team["a"].client.get(f"/b/final-agent/i/{final[None][0]['id']}/").status_code == 404

    # The deadline passes: Celery beat's sweep freezes the official boards.
    Phase.objects.filter(pk=phases["final"].pk).update(
        closes_at=timezone.now() - timedelta(seconds=1))
    assert freeze_phases() == 1
    frozen = {b.track.slug: b for b in PhaseBoard.objects.filter(phase=phases["final"])}
    assert all(b.frozen_version is not None for b in frozen.values())

    # A late upload is scored and on the open board, never on the official one.
    late = upload("b", "final", "agent", "fb-late", 11)
    assert late.status_code == 201, late.content
    late_id = late.json()["submission"]
    assert late.json()["late"] is True
    finished([late_id], worker.log_path)

    # Verification: the finalists are invited; C is disqualified with a public reason.
    checks = {v.team.name: v for v in finalists_invite(phase=phases["final"], actor=organizer)}
    assert set(checks) == {"Team A", "Team B", "Team C"}
    verification_decide(verification=checks["Team C"], actor=organizer, state="disqualified",
                        reason="its package did not reproduce the outputs")

    # The reveal.
    call_command("reveal", "icassp")
    assert all(not b.benchmark.rubrics_hidden for b in PhaseBoard.objects.filter(
        phase=phases["final"]).select_related("benchmark"))
    # The worker mails every participant once (each recorded as it is sent).
    wait_for(lambda: set(RevealNotice.objects.filter(phase=phases["final"]).values_list(
        "membership__user__username", flat=True)) == {"a", "b", "c"}, 60,
        "the reveal's e-mails", worker.log_path)

    # The official boards: counting entries only (A's latest on time on each board, B's
    # on-time one, not its late one), C apart, figures as `manage.py score` computes them on
    # each track's items.
    kind = get_kind("mmae")
    agent = official_ranking(frozen["agent"])
    single = official_ranking(frozen["single"])
    by_id = {submission: t for t in team.values() for submission in t.uploads}
    assert sorted(r.team for r in agent.ranked) == ["Team A", "Team B"]
    assert [r.team for r in single.ranked] == ["Team A"]
    assert [(r.team, r.reason) for r in single.disqualified] == [
        ("Team C", "its package did not reproduce the outputs")]
    assert late_id not in {r.submission for r in agent.ranked}
    assert {r.submission for r in agent.ranked} == {finals[1].json()["submission"],
                                                    finals[3].json()["submission"]}
    for ranking, items in ((agent, final[None]), (single, final["single"])):
        for row in ranking.ranked:
            clean = clean_figures(tmp_path, items, by_id[row.submission], row.submission,
                                  ",".join(urls))
            for metric in kind.ranking:
                assert row.figures[metric] == pytest.approx(clean[metric]), (row, metric)
        keys = [kind.rank_key(r.figures) for r in ranking.ranked]
        assert keys == sorted(keys)
    # Rank Delta: development rank minus final rank, for teams on both boards.
    development_agent = official_ranking(
        PhaseBoard.objects.get(phase=phases["dev"], track=tracks["agent"]))
    before = {r.team: r.rank for r in development_agent.ranked}
    assert {r.team: r.rank_delta for r in agent.ranked} == {
        r.team: before[r.team] - r.rank for r in agent.ranked}
