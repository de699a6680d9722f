"""Every kind's figures over bootstrap replicates: with every item drawn once they are exactly
the kind's own summary, on every slice, for every model at once."""

import math
import random
import warnings

import numpy as np
import pytest

from scoring import synthetic
from scoring.kinds import get_kind
from scoring.kinds.airbench import rules as airbench
from scoring.kinds.mmae import rules as mmae
from scoring.kinds.resample import mean_of

N_MODELS = 4


def mmae_items():
    return mmae.parse_meta(synthetic.make_meta(60, seed=4))


def foundation_items():
    tasks = list(airbench.TASKS)
    return airbench.parse_foundation([
        {"path": f"{i}.wav", "question": "q", "choice_a": "a", "choice_b": "b",
         "choice_c": "c" if i % 3 else None, "choice_d": "d" if i % 3 else None,
         "answer_gt": "b", "task_name": tasks[i % len(tasks)], "dataset_name": f"d{i % 2}",
         "uniq_id": i} for i in range(120)])


def chat_items():
    tasks = list(airbench.CHAT_CATEGORIES)
    return airbench.parse_chat([
        {"meta_info": "m", "question": "q", "answer_gt": "a", "path": "p.wav",
         "task_name": tasks[i % len(tasks)], "dataset_name": "x", "uniq_id": i}
        for i in range(80)])


def rows_of(kind, items, rng):
    """Each model's per-item rows, with some missing outputs and failed judge replies."""
    models = []
    for m in range(N_MODELS):
        rows = []
        for item in items:
            row = kind.synthetic_row(item, rng, 0.2 + 0.2 * m)
            if rng.random() < 0.1:  # a missing output
                row = kind.item_result(item, None, {})
            elif kind.name == airbench.CHAT and rng.random() < 0.1:
                row = {**row, "score_A": None, "failed_A": True}
            rows.append(row)
        models.append(rows)
    return models


@pytest.mark.parametrize("name, make", [(mmae.KIND, mmae_items),
                                        (airbench.FOUNDATION, foundation_items),
                                        (airbench.CHAT, chat_items)])
def test_drawing_every_item_once_gives_the_summary_of_every_slice(name, make):
    kind = get_kind(name)
    items = make()
    dims = [kind.to_rows(item).dimensions for item in items]
    models = rows_of(kind, items, random.Random(7))
    summaries = [kind.summarize(rows) for rows in models]
    vectors = np.array([[kind.item_vector(row) for row in rows] for rows in models])
    slices = [("overall", "")] + [(d, b) for d, buckets in summaries[0].items()
                                  if d != "overall" for b in buckets]
    metrics = [m.key for m in kind.metrics if not m.count]
    for dimension, bucket in slices:
        at = [i for i, d in enumerate(dims)
              if dimension == "overall" or bucket in kind.buckets(dimension, d)]
        values = {name: vectors[:, at, k].T for k, name in enumerate(kind.vector_names)}
        figures = kind.replicate_figures(np.ones((1, len(at))), values,
                                         [dims[i] for i in at])
        assert set(figures) == set(metrics)
        for m, summary in enumerate(summaries):
            expected = summary["overall"] if dimension == "overall" \
                else summary[dimension][bucket]
            for metric in metrics:
                got, want = figures[metric][0, m], expected[metric]
                if want is None:
                    assert math.isnan(got), (dimension, bucket, metric)
                else:
                    assert got == pytest.approx(want, abs=1e-9), (dimension, bucket, metric)


def test_a_replicate_that_draws_an_item_twice_weighs_it_twice():
    kind = get_kind(mmae.KIND)
    values = {"IFR": np.array([[1.0], [0.0]]), "CR": np.array([[np.nan], [1.0]]),
              "EM": np.array([[1.0], [0.0]])}
    figures = kind.replicate_figures(np.array([[2.0, 1.0], [0.0, 3.0]]), values, [{}, {}])
    assert figures["IFR"][:, 0] == pytest.approx([200 / 3, 0.0])
    assert figures["EMR"][:, 0] == pytest.approx([200 / 3, 0.0])
    assert figures["CR"][:, 0] == pytest.approx([100.0, 100.0])


@pytest.mark.parametrize("name, make", [(airbench.FOUNDATION, foundation_items),
                                        (airbench.CHAT, chat_items)])
def test_air_bench_intervals_are_percentiles_of_the_official_summary_over_resamples(name,
                                                                                    make):
    """AIR-Bench's 95% intervals: the overall figures of the official aggregation
    (summarize: per task, a domain the mean of its tasks, ...) over 1,000 resamples of the
    items drawn with replacement, seeded, as percentiles; every slice has one around its
    figure."""
    kind = get_kind(name)
    rows = rows_of(kind, make(), random.Random(9))[1]
    found = kind.intervals(rows, seed=21)
    rng = np.random.default_rng(21)  # the overall slice draws first, 100 replicates a time
    replicates = []
    for _ in range(10):
        picks = rng.integers(0, len(rows), size=(100, len(rows)))
        replicates += [kind.summarize([rows[i] for i in pick])["overall"] for pick in picks]
    for metric, (lo, hi) in found["overall"].items():
        values = np.array([r[metric] for r in replicates if r[metric] is not None], dtype=float)
        assert (lo, hi) == pytest.approx(tuple(np.percentile(values, [2.5, 97.5]))), metric
    assert set(found["overall"]) >= set(kind.ranking)
    summary = kind.summarize(rows)
    for dimension in kind.dimension_keys:
        assert set(found[dimension]) == set(summary[dimension])
        for bucket, figures in summary[dimension].items():
            for metric in kind.ranking:
                lo, hi = found[dimension][bucket][metric]
                assert lo - 1e-9 <= figures[metric] <= hi + 1e-9, (dimension, bucket, metric)


def test_mean_of_skips_nan_parts_as_nanmean_and_warns_nothing_on_an_all_nan_column():
    rng = np.random.default_rng(3)
    parts = [rng.random(50) for _ in range(4)]
    for part in parts:
        part[rng.random(50) < 0.4] = np.nan
    for part in parts:
        part[7] = np.nan  # a column no part has a value for
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        got = mean_of(parts)
    assert np.isnan(got[7])
    kept = ~np.isnan(np.stack(parts)).all(axis=0)
    assert np.allclose(got[kept], np.nanmean(np.stack(parts)[:, kept], axis=0), rtol=0,
                       atol=1e-15)
    with pytest.raises(ValueError, match="no parts"):
        mean_of([])
