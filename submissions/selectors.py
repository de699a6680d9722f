"""Reads that serve submission pages and the API."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Exists, OuterRef, Q
from django.http import Http404
from django.utils import timezone

from scoring.kinds import get_kind
from scoring.models import Answer, Benchmark, ScoringRun, SliceResult
from submissions.models import Submission


def boards_showing(**lookup) -> list[int]:
    """The benchmarks whose boards show the submissions matching `lookup` (of a model, of an
    owner): the boards that a change to their model or owner changes."""
    return list(Submission.objects.filter(**lookup).values_list("benchmark_id", flat=True)
                .distinct())


def submission_get(*, user, pk, write: bool = False) -> Submission:
    """The one access-checked lookup of a submission, for every page, API call, download and
    the explorer. A submission the user may not see (Submission.objects.visible_to) is a 404,
    as if it did not exist. With `write` (its status page, files, cancelling, the author's
    choices), one the user may see but neither owns nor, as staff, manages is a 403."""
    try:
        submission = (Submission.objects.visible_to(user)
                      .select_related("model", "reveal_as", "benchmark", "current_run").get(pk=pk))
    except (Submission.DoesNotExist, ValueError, TypeError):
        raise Http404("no such submission") from None
    if write and not manages(user, submission):
        raise PermissionDenied(f"submission {submission.pk} is not yours")
    return submission


def manages(user, submission: Submission) -> bool:
    """Whether the user is the submission's author or staff."""
    return user.is_staff or submission.owner_id == user.pk


def withheld(ids: set[int]) -> frozenset[int]:
    """Of these submission ids, those whose name public pages must not show: hidden by staff
    (who may have hidden it for that very name)."""
    return frozenset(Submission.objects.filter(id__in=ids, hidden=True)
                     .values_list("id", flat=True))


def submissions_of(user):
    return (Submission.objects.filter(owner=user)
            .select_related("model", "reveal_as", "benchmark", "current_run")
            .order_by("-created_at"))


def benchmark_latest(slug: str) -> Benchmark | None:
    return Benchmark.objects.filter(slug=slug).order_by("-version").first()


def benchmark_choices() -> list[tuple[str, str]]:
    latest: dict[str, Benchmark] = {}
    for benchmark in Benchmark.objects.order_by("slug", "-version"):
        latest.setdefault(benchmark.slug, benchmark)
    return [(b.slug, f"{b.title} (v{b.version})") for b in latest.values()]


def cache_hits_shown(*, owner_id) -> Q:
    """The answers (Answer) that count as cache hits to `owner_id`, the author of the
    submission they were scored for: copies of an answer scored for one of the author's own
    submissions, a published one, or a calibration baseline (made from the benchmark's own
    inputs). A copy from someone else's private upload is reused silently: counting it would
    tell the author that someone uploaded the same outputs."""
    sources = Submission.objects.filter(runs=OuterRef("source_run_id"))
    return Q(cached=True) & (Q(source_run__purpose=ScoringRun.Purpose.BASELINE)
                             | Q(Exists(sources.filter(owner_id=owner_id)))
                             | Q(Exists(sources.published())))


def run_progress(run: ScoringRun | None, *, owner_id) -> dict:
    """Queries done of total, rate, ETA, queue position and failed queries by kind, as the
    author `owner_id` is shown them: the rate behind the ETA leaves out answers copied from
    uploads the author may not know of (cache_hits_shown), so that no faster finish tells."""
    if run is None:
        return {"done": 0, "total": 0, "percent": 0, "eta_seconds": None,
                "queue_position": None, "failures": {}}
    answers = Answer.objects.filter(run=run)
    done = answers.count()
    total = run.total_queries
    eta = None
    started = run.status_times.get(ScoringRun.Status.SCORING)
    if run.status == ScoringRun.Status.SCORING and started and done:
        elapsed = (timezone.now() - timezone.datetime.fromisoformat(started)).total_seconds()
        silent = answers.filter(cached=True).exclude(cache_hits_shown(owner_id=owner_id))
        rate = (done - silent.count()) / elapsed if elapsed > 0 else 0
        if rate > 0:
            eta = round((total - done) / rate)
    position = None
    if run.status == ScoringRun.Status.QUEUED:
        position = ScoringRun.objects.filter(
            status__in=ScoringRun.ACTIVE, created_at__lt=run.created_at).count() + 1
    # By the kind judge.fleet gave each failure ("" for answers stored before it did).
    failures = {kind or "other": n for kind, n in (
        Answer.objects.filter(run=run, error__isnull=False).values_list("error_kind")
        .annotate(n=Count("id")).order_by("error_kind"))}
    return {
        "done": done, "total": total,
        "percent": round(100 * done / total, 1) if total else 100.0,
        "eta_seconds": eta, "queue_position": position, "failures": failures,
    }


def moderation_queue(*, benchmark_slug: str = "", state: str = "", flagged: bool = False,
                     hidden: bool = False, search: str = ""):
    """Every submission for the staff moderation page, newest first, narrowed by benchmark,
    state (an upload state or a run state), flag, hidden, and model or author name."""
    queryset = (Submission.objects.select_related("model", "benchmark", "current_run", "owner")
                .defer("report", "current_run__outputs", "current_run__missing")
                .order_by("-created_at", "-id"))
    if benchmark_slug:
        queryset = queryset.filter(benchmark__slug=benchmark_slug)
    if state == Submission.Status.FAILED:  # on our side: in validation or in its run
        queryset = queryset.filter(Q(status=state) | Q(status=Submission.Status.QUEUED,
                                                       current_run__status=state))
    elif state in ScoringRun.Status.values:  # from queued on, the run's status is the state
        queryset = queryset.filter(status=Submission.Status.QUEUED, current_run__status=state)
    elif state:
        queryset = queryset.filter(status=state)
    if flagged:
        queryset = queryset.exclude(flag_reason="")
    if hidden:
        queryset = queryset.filter(hidden=True)
    if search.strip():
        needle = search.strip()
        queryset = queryset.filter(Q(model__name__icontains=needle)
                                   | Q(owner__username__icontains=needle))
    return queryset


def submission_runs(submission: Submission) -> list[dict]:
    """Every run of a submission, newest first, with its judge config and overall figures:
    runs under older configs and superseded rescores stay viewable here."""
    metrics = get_kind(submission.benchmark.kind).metrics
    runs = list(submission.runs.select_related("judge_config").defer("outputs", "missing")
                .order_by("-id"))
    cached = run_cache_hits(runs, owner_id=submission.owner_id)
    overall = {s.run_id: s.figures() for s in SliceResult.objects.filter(
        run__in=runs, dimension=SliceResult.OVERALL)}
    return [{"run": run, "current": run.id == submission.current_run_id,
             "figures": [(m.label, m.format(overall.get(run.id, {}).get(m.key)))
                         for m in metrics]
             if run.id in overall else [],
             "cached": cached.get(run.id, 0)} for run in runs]


def run_cache_hits(runs, *, owner_id) -> dict[int, int]:
    """run id -> the answers its author is shown as taken from the judgment cache."""
    return dict(Answer.objects.filter(cache_hits_shown(owner_id=owner_id), run__in=runs)
                .values_list("run_id").annotate(n=Count("id")).order_by())


def headline_figures(submissions) -> dict[int, tuple[str, str, str]]:
    """submission id -> (label, formatted value, definition) of the figure its board ranks by
    first, for the finished ones (one query)."""
    overall = {s.run_id: s.figures() for s in SliceResult.objects.filter(
        run_id__in=[s.current_run_id for s in submissions if s.state == "finished"],
        dimension=SliceResult.OVERALL)}
    found = {}
    for submission in submissions:
        if submission.current_run_id in overall:
            kind = get_kind(submission.benchmark.kind)
            metric = kind.metric(kind.ranking[0])
            found[submission.id] = (metric.label, metric.format(
                overall[submission.current_run_id].get(metric.key)), metric.definition)
    return found
