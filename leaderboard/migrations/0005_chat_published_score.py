from django.db import migrations


def published_score_is_answered(apps, schema_editor):
    """A published AIR-Bench chat score is over the answered items (the official
    cal_score.py): its figure is `score_answered`; `score` is the strict one, ranked by."""
    Benchmark = apps.get_model("scoring", "Benchmark")
    ReferenceFigure = apps.get_model("leaderboard", "ReferenceFigure")
    slugs = set(Benchmark.objects.filter(kind="airbench-chat").values_list("slug", flat=True))
    for figure in ReferenceFigure.objects.filter(result__benchmark_slug__in=slugs):
        if "score" in figure.values:
            figure.values = {("score_answered" if k == "score" else k): v
                             for k, v in figure.values.items()}
            figure.save(update_fields=["values"])


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0004_rank_ranges"),
        ("scoring", "0010_run_vector"),
    ]

    operations = [
        migrations.RunPython(published_score_is_answered, migrations.RunPython.noop),
    ]
