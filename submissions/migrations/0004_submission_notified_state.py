from django.db import migrations, models


def mark_ended_as_notified(apps, schema_editor):
    """Submissions that ended before notifications existed are not emailed about now."""
    Submission = apps.get_model("submissions", "Submission")
    Submission.objects.filter(status="rejected").update(notified_state="rejected")
    for state in ("finished", "failed"):
        Submission.objects.filter(status="queued", current_run__status=state) \
            .update(notified_state=state)


class Migration(migrations.Migration):

    dependencies = [
        ("submissions", "0003_submission_options"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="notified_state",
            field=models.CharField(blank=True, max_length=20),
        ),
        migrations.RunPython(mark_ended_as_notified, migrations.RunPython.noop),
    ]
