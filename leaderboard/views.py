from django.http import Http404
from django.shortcuts import redirect, render

from leaderboard import selectors
from leaderboard.forms import BoardForm

COLUMNS = [("rank", "Rank"), ("model", "Model"), ("organisation", "Organisation"),
           ("IFR", "IFR"), ("CR", "CR"), ("EMR", "EMR"), ("coverage", "Coverage"),
           ("date", "Date")]


def home(request):
    benchmarks = selectors.benchmark_list()
    real = [b for b in benchmarks if not b.synthetic]
    if real or benchmarks:
        return redirect("leaderboard:board", slug=(real or benchmarks)[0].slug)
    return render(request, "leaderboard/home.html", {"benchmarks": benchmarks})


def _board_context(request, slug):
    benchmark = selectors.benchmark_current(slug)
    if benchmark is None:
        raise Http404("no such benchmark")
    buckets = selectors.bucket_choices(benchmark)
    form = BoardForm(request.GET, buckets=buckets)
    if not form.is_valid():
        return benchmark, form, None
    return benchmark, form, form.query()


def board(request, slug):
    benchmark, form, query = _board_context(request, slug)
    context = {"benchmark": benchmark, "benchmarks": selectors.benchmark_list(), "form": form,
               "buckets": form.buckets, "licences": selectors.licences(benchmark)}
    if query is None:
        return render(request, "leaderboard/board.html", {**context, "rows": [],
                                                          "reported": []}, status=400)
    rows = selectors.leaderboard_rows(benchmark=benchmark, query=query)
    for row in rows:  # display order of the figure cells
        row["figures"] = [(row[m], row[f"{m}_interval"]) for m in ("IFR", "CR", "EMR")]
    context.update(
        query=query,
        rows=rows,
        columns=COLUMNS,
        reported=selectors.reported_rows(slug=slug, dimension=query.dimension,
                                         bucket=query.bucket),
    )
    return render(request, "leaderboard/board.html", context)
