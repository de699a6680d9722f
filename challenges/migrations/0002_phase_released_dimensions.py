from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("challenges", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="phase",
            name="released_dimensions",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
