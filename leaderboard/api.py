"""The read API of the boards; `?format=csv` gives the same rows as CSV."""

import csv
import io

from django.core.cache import cache
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import selectors
from leaderboard.forms import BoardForm

COLUMNS = ("rank", "rank_best", "rank_worst", "model", "organisation", "submission", "IFR",
           "IFR_lo", "IFR_hi", "CR", "CR_lo", "CR_hi", "EMR", "EMR_lo", "EMR_hi", "n",
           "coverage", "open_weights", "licence", "judge", "simulated", "date")


def row_out(row: dict) -> dict:
    out = {"rank": row["rank"], "rank_best": row["rank_range"][0],
           "rank_worst": row["rank_range"][1]}
    for key in ("model", "organisation", "submission", "n", "coverage", "open_weights",
                "licence", "judge", "simulated"):
        out[key] = row[key]
    for metric in ("IFR", "CR", "EMR"):
        out[metric] = row[metric]
        interval = row[f"{metric}_interval"]
        out[f"{metric}_lo"], out[f"{metric}_hi"] = interval or (None, None)
    out["date"] = row["date"].isoformat()
    return out


class CsvRenderer(BaseRenderer):
    """The board's rows as CSV (DRF picks it for `?format=csv` or `Accept: text/csv`)."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        buffer = io.StringIO()
        if "rows" in data:
            writer = csv.DictWriter(buffer, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(data["rows"])
        else:  # an error body
            writer = csv.writer(buffer)
            writer.writerow(["error"])
            writer.writerows([e] for e in data.get("errors", []))
        return buffer.getvalue()


class LeaderboardApi(APIView):
    """GET /api/leaderboards/<slug>/?dimension=D&bucket=B[&format=csv]: figures in percent."""

    permission_classes = [AllowAny]
    authentication_classes = []
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CsvRenderer]

    @extend_schema(operation_id="leaderboard", parameters=[
        OpenApiParameter("dimension", str, description="complexity, complexity_group, "
                         "modality, granularity or operation; none for overall"),
        OpenApiParameter("bucket", str, description="a bucket of the dimension"),
        OpenApiParameter("format", str, enum=["json", "csv"]),
    ], responses=OpenApiTypes.OBJECT)
    def get(self, request, slug):
        benchmark = selectors.benchmark_current(slug)
        if benchmark is None:
            return Response({"errors": [f"no benchmark {slug!r}"]}, status=404)
        stamp = selectors.board_stamp(benchmark)
        form = BoardForm(request.query_params,
                         buckets=selectors.board_snapshot(benchmark, stamp)["buckets"])
        if not form.is_valid():
            errors = [f"{k}: {m}" for k, ms in form.errors.items() for m in ms]
            return Response({"errors": errors}, status=400)
        query = form.query()
        rows = cache.get_or_set(
            selectors.cache_key("board-api", stamp, query),
            lambda: [row_out(r) for r in selectors.leaderboard_rows(benchmark=benchmark,
                                                                    query=query)],
            300)
        headers = {}
        if request.accepted_renderer.format == "csv":
            name = "-".join(p for p in (slug, query.dimension, query.bucket) if p)
            safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
            headers["Content-Disposition"] = f'attachment; filename="{safe}.csv"'
        return Response({
            "benchmark": slug, "version": benchmark.version, "dimension": query.dimension,
            "bucket": query.bucket or None, "rows": rows,
            "reported": selectors.reported_rows(slug=slug, dimension=query.dimension,
                                                bucket=query.bucket),
        }, headers=headers)
