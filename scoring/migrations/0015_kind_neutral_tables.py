"""Kind-neutral tables: what was MMAE's in every kind's rows moves to JSON the kind defines.

Criterion.right_choice/wrong_choices become Criterion.spec, Answer.correct_letter/correct
become Answer.verdict, and ItemResult.ifr/cr/em/rubric_scores move into ItemResult.values
(MMAE's; AIR-Bench kept its own there already), with the two generic figures the compare
page counts (passed, score). Every stored row is copied in SQL (PostgreSQL or SQLite), so a
stored run reads back exactly as before; only AIR-Bench chat's verdicts, which were a
meaningless correct=False, are read again from the judge's reply.
"""

from django.db import migrations, models

CHAT = "airbench-chat"  # scoring.kinds.airbench.rules.CHAT
MMAE = "mmae"  # scoring.kinds.mmae.rules.KIND

# The kind of a row's benchmark, as a correlated subquery, from a criterion, a run.
CRITERION_KIND = ("(SELECT b.kind FROM scoring_item i JOIN scoring_benchmark b "
                  "ON b.id = i.benchmark_id WHERE i.id = scoring_criterion.item_id)")
RUNS_OF = ("SELECT r.id FROM scoring_scoringrun r JOIN scoring_benchmark b "
           "ON b.id = r.benchmark_id WHERE b.kind {}")

# vendor -> the statements that fill the new columns from the old ones
COPY = {
    "postgresql": [
        f"""UPDATE scoring_criterion SET spec = CASE WHEN {CRITERION_KIND} = '{CHAT}'
            THEN jsonb_build_object('reference', right_choice)
            ELSE jsonb_build_object('right', right_choice, 'wrong', wrong_choices) END""",
        f"""UPDATE scoring_answer SET verdict = jsonb_build_object(
            'correct_letter', correct_letter, 'correct', correct)
            WHERE run_id IN ({RUNS_OF.format(f"<> '{CHAT}'")})""",
        """UPDATE scoring_itemresult SET passed = (em <> 0), score = (
            SELECT avg(x::float8) FROM jsonb_array_elements_text(rubric_scores) AS t(x))""",
        f"""UPDATE scoring_itemresult SET "values" = jsonb_build_object(
            'IFR', ifr, 'CR', cr, 'EM', em, 'rubric_scores', rubric_scores) || "values"
            WHERE run_id IN ({RUNS_OF.format(f"= '{MMAE}'")})""",
    ],
    "sqlite": [
        f"""UPDATE scoring_criterion SET spec = CASE WHEN {CRITERION_KIND} = '{CHAT}'
            THEN json_object('reference', right_choice)
            ELSE json_object('right', right_choice, 'wrong', json(wrong_choices)) END""",
        f"""UPDATE scoring_answer SET verdict = json_object(
            'correct_letter', correct_letter,
            'correct', json(CASE WHEN correct THEN 'true' ELSE 'false' END))
            WHERE run_id IN ({RUNS_OF.format(f"<> '{CHAT}'")})""",
        """UPDATE scoring_itemresult SET passed = (em <> 0), score = (
            SELECT avg(value) FROM json_each(scoring_itemresult.rubric_scores))""",
        # MMAE's figures move into values in Python (_mmae_values): SQLite's JSON writes a
        # float with 15 digits, which would change IFR and CR.
    ],
}


def copy_forward(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        for statement in COPY[connection.vendor]:
            cursor.execute(statement)
    if connection.vendor != "postgresql":
        _mmae_values(apps)
    _chat_verdicts(apps)
    if connection.vendor == "postgresql":
        # The updates leave deferred foreign-key checks pending, and PostgreSQL alters no
        # table with pending checks: run them now, before the old columns are dropped.
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def _in_chunks(model, rows, fields):
    changed = []
    for row in rows.iterator(chunk_size=2000):
        yield row
        changed.append(row)
        if len(changed) == 2000:
            model.objects.bulk_update(changed, fields)
            changed = []
    model.objects.bulk_update(changed, fields)


def _mmae_values(apps):
    ItemResult = apps.get_model("scoring", "ItemResult")
    results = ItemResult.objects.filter(run__benchmark__kind=MMAE).order_by("id")
    for result in _in_chunks(ItemResult, results, ["values"]):
        result.values = {"IFR": result.ifr, "CR": result.cr, "EM": result.em,
                         "rubric_scores": result.rubric_scores, **result.values}


def _chat_verdicts(apps):
    """A chat pass's verdict is the judge's two scores: read again from its reply, which
    the pipeline only stored when it could be read (its model score is not null)."""
    from scoring.kinds.airbench.rules import parse_chat_reply

    Answer = apps.get_model("scoring", "Answer")
    answers = (Answer.objects.filter(run__benchmark__kind=CHAT, score__isnull=False)
               .only("id", "raw").order_by("id"))
    for answer in _in_chunks(Answer, answers, ["verdict"]):
        answer.verdict = {"scores": list(parse_chat_reply(answer.raw))}


class Migration(migrations.Migration):

    dependencies = [
        ('scoring', '0014_judge_limits_refusals'),
    ]

    operations = [
        migrations.AddField(
            model_name='criterion',
            name='spec',
            field=models.JSONField(default=dict),
        ),
        migrations.AddField(
            model_name='answer',
            name='verdict',
            field=models.JSONField(default=dict),
        ),
        migrations.AddField(
            model_name='itemresult',
            name='passed',
            field=models.BooleanField(null=True),
        ),
        migrations.AddField(
            model_name='itemresult',
            name='score',
            field=models.FloatField(null=True),
        ),
        migrations.RunPython(copy_forward, migrations.RunPython.noop, elidable=False),
        migrations.RemoveField(model_name='criterion', name='right_choice'),
        migrations.RemoveField(model_name='criterion', name='wrong_choices'),
        migrations.RemoveField(model_name='answer', name='correct_letter'),
        migrations.RemoveField(model_name='answer', name='correct'),
        migrations.RemoveField(model_name='itemresult', name='ifr'),
        migrations.RemoveField(model_name='itemresult', name='cr'),
        migrations.RemoveField(model_name='itemresult', name='em'),
        migrations.RemoveField(model_name='itemresult', name='rubric_scores'),
    ]
