# A separate migration: PostgreSQL cannot alter a table with pending trigger events, which the
# data step of 0004 leaves behind in its transaction.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("scoring", "0004_judge_configs_cache_audit"),
    ]

    operations = [
        migrations.AlterField(
            model_name="scoringrun",
            name="judge_config",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT,
                                    related_name="runs", to="scoring.judgeconfig"),
        ),
    ]
