"""The read API of the boards; `?format=csv` gives the same rows as CSV."""


import hashlib

from django.conf import settings
from django.http import FileResponse, HttpResponse, QueryDict
from django.utils.cache import get_conditional_response, patch_cache_control
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from config import slots
from config.errors import ServiceError
from config.serializers import error_responses
from leaderboard.boards import (
    board_pages,
    dataset_files,
    datasets,
    model_pages,
    rank_ranges,
    selectors,
    serializers,
    state,
)
from leaderboard.boards.csvs import csv_text
from leaderboard.pages import responses
from leaderboard.pages.forms import ApiBoardForm, DatasetForm, normalised
from scoring import visibility
from scoring.kinds import Kind, get_kind
from scoring.models import ScoringRun
from submissions.selectors import submission_get


def columns(kind: Kind) -> tuple[str, ...]:
    """The CSV's columns: each of the kind's metrics with its interval's bounds."""
    figures = tuple(k for m in kind.metric_keys for k in (m, f"{m}_lo", f"{m}_hi"))
    return ("rank", "rank_best", "rank_worst", "model", "organisation", "submitted_by",
            "verified", "submission", *figures,
            "n", "coverage", "open_weights", "licence", "judge", "judge_config", "simulated",
            "refused", *(m.key for m in kind.judge_figures), "date", "attempts", "flag",
            "after_deadline", "clipping_share")


class CsvRenderer(BaseRenderer):
    """The board's rows as CSV (DRF picks it for `?format=csv` or `Accept: text/csv`)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if "rows" not in data:  # an error body
            return csv_text([["error"], *([e] for e in data.get("errors", []))])
        fieldnames = columns(get_kind(data["kind"]))
        # The first page also holds the board's diagnostic rows, unranked, marked in `row`.
        rows = [*({**r, "row": "ranked"} for r in data["rows"]),
                *({**r, "row": "diagnostic"} for r in
                  (data.get("diagnostic", []) if data.get("page") == 1 else []))]
        return csv_text([(*fieldnames, "row"),
                         *([row.get(f, "") for f in (*fieldnames, "row")] for row in rows)])


class LeaderboardApi(APIView):
    """GET /api/leaderboards/<slug>/?dimension=D&bucket=B[&page=P&page_size=S][&format=csv]:
    figures in percent, a page of rows at a time."""

    permission_classes = [AllowAny]
    authentication_classes = []
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CsvRenderer]

    @extend_schema(operation_id="leaderboard", parameters=[
        OpenApiParameter("dimension", str, description="complexity, complexity_group, "
                         "modality, granularity or operation; none for overall"),
        OpenApiParameter("bucket", str, description="a bucket of the dimension"),
        OpenApiParameter("page", int, description="the page of rows, from 1 (default 1); a "
                         "page past the last answers 400"),
        OpenApiParameter("page_size", int, description="rows per page, 1 to "
                         f"{ApiBoardForm.MAX_PAGE_SIZE} (default "
                         f"{ApiBoardForm.DEFAULT_PAGE_SIZE})"),
        OpenApiParameter("format", str, enum=["json", "csv"]),
    ], responses={200: OpenApiResponse(serializers.BoardOut, description=(
        "`count` (the rows over all pages), `page`, `page_size`, `next` and `previous` (the "
        "URLs of the pages around this one, or null), `rows` (this page's), `reported`, "
        "`diagnostic` (the calibration baselines scored here, unranked). The CSV holds this "
        "page's rows, marked `ranked` in its `row` column, and on the first page the "
        "diagnostic rows, marked `diagnostic`; its `Link` header names the next and previous "
        "pages. "
        "Responses carry an ETag and Last-Modified: If-None-Match with the ETag answers 304 while "
        "the board has not changed.")),
        **error_responses(described={400: "each bad parameter", 404: "no such benchmark"}),
    })
    def get(self, request, slug):
        benchmark = state.benchmark_current(slug)
        if benchmark is None:
            raise NotFound(f"no benchmark {slug!r}")
        now = state.board_state(benchmark)
        kind = get_kind(benchmark.kind)
        form = ApiBoardForm(request.query_params, kind=kind,
                            buckets=board_pages.board_buckets(benchmark))
        if not form.is_valid():
            raise ServiceError([f"{k}: {m}" for k, ms in form.errors.items() for m in ms])
        query = form.query()
        # A hidden-rubric board's rows are figures: none below OVERALL, no slice below
        # SLICES (scoring.visibility; the API reads no session: a visitor's level).
        visibility.require(benchmark, request.user, visibility.Disclosure.SLICES
                           if query.dimension != state.OVERALL else visibility.Disclosure.OVERALL)
        renderer = request.accepted_renderer
        if renderer.format not in ("json", "csv"):  # the browsable page renders per request
            return self._respond(request, benchmark, form, query, renderer)
        # JSON and CSV are served per board state and query (leaderboard.pages.responses): the
        # rows are serialized once for each, never per request (BoardOut takes some 20 ms for
        # 1,000 rows, the cached body a few).
        return responses.shared(
            request, state=now.key, changed_at=benchmark.board_changed_at,
            # The scheme and host too: the page links are absolute URLs; and whether the
            # format was asked in the query, which the links then carry on (else the format
            # came from Accept).
            parts=("api", request.scheme, responses.canonical_host(request), renderer.format,
                   "format" in request.query_params, _normal(form).urlencode()),
            vary=("Accept",), boards=now.versions, benchmark=benchmark,
            render=lambda: self._respond(request, benchmark, form, query, renderer))

    def _respond(self, request, benchmark, form, query, renderer):
        kind = get_kind(benchmark.kind)
        slug = benchmark.slug
        number, size = form.cleaned_data["page"], form.cleaned_data["page_size"]
        rows, count = board_pages.api_rows(benchmark, query, number=number, size=size)
        try:
            paged = board_pages.paging(number, size, count)
        except board_pages.PastTheLastPage as past:
            raise ServiceError(f"page: {number} is past the last page, {past.pages} ({count} "
                               f"row{'' if count == 1 else 's'} at {size} a page)") from None
        around = {way: _page_url(request, form, paged[way]) if paged[way] else None
                  for way in ("next", "previous")}
        headers = {}
        links = [f'<{link}>; rel="{rel}"' for rel, link in around.items() if link]
        if links:
            headers["Link"] = ", ".join(links)
        if renderer.format == "csv":
            name = "-".join(p for p in (slug, query.dimension, query.bucket) if p)
            safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
            headers["Content-Disposition"] = f'attachment; filename="{safe}.csv"'
        payload = serializers.BoardOut({
            "benchmark": benchmark, "kind": kind, "query": query, "count": count,
            "page": number, "page_size": size, **around, "rows": rows,
            "reported": selectors.reported_rows(slug=slug, dimension=query.dimension,
                                                bucket=query.bucket, kind=kind),
            "diagnostic": selectors.baseline_rows(benchmark=benchmark, kind=kind,
                                                  dimension=query.dimension,
                                                  bucket=query.bucket),
            "separable": rank_ranges.stored_separable(benchmark, query.dimension,
                                                      query.bucket),
        }, context={"kind": kind}).data
        if renderer.format not in ("json", "csv"):
            return Response(payload, headers=headers)
        content_type = f"{renderer.media_type}; charset=utf-8" if renderer.charset \
            else renderer.media_type
        return HttpResponse(renderer.render(payload), content_type=content_type,
                            headers=headers)


def _normal(form):
    return normalised(form, dimension=state.OVERALL, sort="rank", page=1)


def _page_url(request, form, number: int) -> str:
    """Another page of the same (normalised) query: a shared response must not carry the
    stray parameters of the request that made it."""
    query = QueryDict(mutable=True)
    if "format" in request.query_params:
        query["format"] = request.accepted_renderer.format
    query.update(_normal(form))
    query["page"] = str(number)
    return f"{request.scheme}://{responses.canonical_host(request)}{request.path}" \
        f"?{query.urlencode()}"


class _FileRenderer(BaseRenderer):
    """A dataset's format for DRF's negotiation (`?format=`); the view streams the file
    itself, so only an error body is rendered here, as JSON text."""

    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return JSONRenderer().render(data)


def _file_renderer(fmt: str) -> type[BaseRenderer]:
    return type(f"{fmt.title()}Renderer", (_FileRenderer,),
                {"format": fmt, "media_type": datasets.FORMATS[fmt].split(";")[0]})


ITEM_COLUMNS = (
    "One row per public representative and item: `model`, `submission`, `item`, each of the "
    "kind's dimensions (the item's bucket, or its buckets as a list where an item may be in "
    "several), `missing` (no output), then the kind's per-item figures under its names: for "
    "MMAE `IFR` and `CR` in 0-1 (null without such rubrics), `EM` 0 or 1 and `rubric_scores` "
    "(each rubric's vote, 0 or 1); for AIR-Bench foundation `letter`, `source`, `parsed`, "
    "`correct`; for AIR-Bench chat `score_A`, `score_B`, `failed_A`, `failed_B`. Lists are "
    "JSON text in the CSV. The file is named after the board state (benchmark, version, board "
    "version, slice); its ETag answers 304 while the board has not changed. Each file is built "
    f"once per board state: a small board's (at most {dataset_files.INLINE_ROWS:,} rows) by the "
    "first request for it, a larger one's by a worker, and until it is, 503 with Retry-After. "
    "Parameters other than these answer 400.")


class LeaderboardItemsApi(APIView):
    """GET /api/leaderboards/<slug>/items/?format=parquet|csv|jsonl[&dimension=D&bucket=B]:
    the board's per-item results as a dataset, streamed."""

    permission_classes = [AllowAny]
    authentication_classes = []
    renderer_classes = [JSONRenderer, *(_file_renderer(f) for f in datasets.FORMATS)]

    @extend_schema(operation_id="leaderboard_items", parameters=[
        OpenApiParameter("format", str, enum=list(datasets.FORMATS),
                         description="parquet (the default), csv or jsonl"),
        OpenApiParameter("dimension", str, description="a dimension of the benchmark's kind; "
                         "none for every item"),
        OpenApiParameter("bucket", str, description="a bucket of the dimension"),
    ], responses={
        **{(200, media.split(";")[0]): OpenApiResponse(OpenApiTypes.BINARY,
                                                       description=ITEM_COLUMNS)
           for media in datasets.FORMATS.values()},
        **error_responses(described={
            400: "each bad or unknown parameter", 404: "no such benchmark",
            429: "too many downloads at once (Retry-After)",
            503: "the file is being built (Retry-After)"}),
    })
    def get(self, request, slug):
        unknown = sorted(set(request.query_params) - DATASET_PARAMETERS)
        if unknown:  # refused before any work: junk parameters make no new answer
            raise ServiceError([f"{name}: not a parameter of this dataset (it takes "
                                "format, dimension and bucket)" for name in unknown])
        benchmark = state.benchmark_current(slug)
        if benchmark is None:
            raise NotFound(f"no benchmark {slug!r}")
        # Every row is a per-item result: of a hidden-rubric board, only once everyone may
        # learn them (the file is one for all: it reads no session).
        if not visibility.anyone_sees_items(benchmark):
            raise NotFound(visibility.NOT_YET)
        form = DatasetForm(request.query_params, kind=get_kind(benchmark.kind),
                           buckets=board_pages.board_buckets(benchmark))
        if not form.is_valid():
            raise ServiceError([f"{field}: {message}" for field, messages in
                                form.errors.items() for message in messages])
        data = form.cleaned_data
        fmt, where = data["format"], {"dimension": data["dimension"], "bucket": data["bucket"]}
        name = dataset_files.file_name(benchmark, fmt, **where)
        etag = f'"{hashlib.sha256(name.encode()).hexdigest()[:40]}"'
        not_modified = get_conditional_response(request._request, etag=etag)
        if not_modified is not None:
            return not_modified
        response = file_response(
            request, lambda: self._stored(benchmark, name, fmt, where),
            content_type=datasets.FORMATS[fmt], filename=name.rpartition("/")[2])
        if response is None:
            return being_built(f"the dataset of board version {benchmark.board_version} is "
                               "being built")
        if response.status_code == 200:
            response["ETag"] = etag
            patch_cache_control(response, public=True,
                                max_age=settings.BOARD_SHARED_MAX_AGE)
        return response

    @staticmethod
    def _stored(benchmark, name: str, fmt: str, where: dict):
        """The stored file `name`, built here first if the board is small
        (dataset_files.built_inline); else None, and the worker is asked to build it."""
        stored = dataset_files.opened(name)
        if stored is None and dataset_files.built_inline(benchmark):
            built = dataset_files.dataset_build(benchmark, fmt, **where)
            stored = dataset_files.opened(built) if built == name else None
        if stored is None:
            dataset_files.dataset_ask(benchmark, fmt, **where)
        return stored


# The items dataset's query parameters; any other is refused, naming it.
DATASET_PARAMETERS = {"format", "dimension", "bucket"}


def being_built(what: str) -> Response:
    """503 with Retry-After: a file a worker is building (asked once)."""
    seconds = dataset_files.RETRY_SECONDS
    return Response({"errors": [f"{what}: try again in {seconds} seconds."]}, status=503,
                    headers={"Retry-After": str(seconds)}, content_type="application/json")


def file_response(request, opened, *, content_type: str, filename: str):
    """A stored file sent as it is (FileResponse), within the downloads' concurrency caps
    (config.slots: per client address and in all); past one, 429 with Retry-After. `opened()`
    opens the file in the slot (building it, maybe); when it gives None, so does this, the
    slot given back."""
    give_back = slots.slot(request, group="datasets",
                           per_client=dataset_files.DOWNLOADS_PER_CLIENT,
                           overall=dataset_files.DOWNLOADS, seconds=dataset_files.SLOT_SECONDS)
    if give_back is None:
        seconds = dataset_files.RETRY_SECONDS
        return Response({"errors": [f"Too many downloads at once: try again in {seconds} "
                                    "seconds."]}, status=429,
                        headers={"Retry-After": str(seconds)}, content_type="application/json")
    stored = None
    try:
        stored = opened()
    finally:
        if stored is None:
            give_back()
    if stored is None:
        return None
    return FileResponse(slots.Returning(stored, give_back), content_type=content_type,
                        as_attachment=True, filename=filename)


class BenchmarkListApi(APIView):
    """GET /api/benchmarks/: the newest version of every benchmark."""

    permission_classes = [AllowAny]
    authentication_classes = []

    @extend_schema(operation_id="benchmarks", responses=serializers.BenchmarkOut(many=True))
    def get(self, request):
        return Response(serializers.BenchmarkOut(state.benchmark_list(), many=True,
                                                 context={"request": request}).data)


class ModelApi(APIView):
    """GET /api/models/<id>/: a model's metadata and the submissions the caller may see
    (public ones for everyone), with their overall figures."""

    permission_classes = [AllowAny]

    @extend_schema(operation_id="model", responses={
        200: serializers.ModelOut, **error_responses(404)})
    def get(self, request, model_id):
        model = model_pages.model_for(request.user, model_id)
        model.shown_submissions = model_pages.submission_rows(model_pages.disclosed(
            request.user, model_pages.model_submissions(request.user, model)))
        return Response(serializers.ModelOut(model).data)


class SubmissionSlicesApi(APIView):
    """GET /api/submissions/<id>/slices/: every slice figure of a public, finished submission
    (or of one's own, or any for staff), with intervals; 404 otherwise."""

    permission_classes = [AllowAny]

    @extend_schema(operation_id="submissions_slices", responses={
        200: serializers.SubmissionSlicesOut, **error_responses(404)})
    def get(self, request, pk):
        submission = submission_get(user=request.user, pk=pk)
        visibility.require(submission.benchmark, request.user, visibility.Disclosure.SLICES)
        run = submission.current_run
        if run is None or run.status != ScoringRun.Status.FINISHED:
            raise NotFound(f"submission {pk} has no finished scoring yet")
        kind = get_kind(submission.benchmark.kind)
        submission.shown_slices = model_pages.slice_rows(run.id, kind)
        return Response(serializers.SubmissionSlicesOut(submission, context={"kind": kind}).data)
