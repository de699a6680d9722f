import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("scoring", "0011_auditevent_to_audit_app"),
    ]

    operations = [
        migrations.AddField(
            model_name="benchmark",
            name="board_version",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="benchmark",
            name="board_changed_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
    ]
