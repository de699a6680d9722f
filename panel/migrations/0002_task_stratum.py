# A task's stratum, besides its rubric's category, is one string the benchmark's kind names
# (Kind.panel_stratum) instead of two columns named after one kind's dimensions. Existing tasks
# keep theirs: "<modality> / <complexity>", as that kind names it now.

from django.db import migrations, models
from django.db.models import Value
from django.db.models.functions import Concat

SEPARATOR = " / "


def joined(apps, schema_editor):
    tasks = apps.get_model("panel", "PanelTask").objects.using(schema_editor.connection.alias)
    tasks.update(stratum=Concat("modality", Value(SEPARATOR), "complexity"))


def split(apps, schema_editor):
    tasks = apps.get_model("panel", "PanelTask").objects.using(schema_editor.connection.alias)
    for task in tasks.only("id", "stratum"):
        modality, _, complexity = task.stratum.partition(SEPARATOR)
        tasks.filter(id=task.id).update(modality=modality, complexity=complexity)


class Migration(migrations.Migration):

    dependencies = [
        ('panel', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='paneltask',
            name='stratum',
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.RunPython(joined, split),
        migrations.RemoveIndex(
            model_name='paneltask',
            name='paneltask_stratum',
        ),
        # A default, so that going back re-adds the columns to rows that exist by then.
        migrations.AlterField(
            model_name='paneltask',
            name='complexity',
            field=models.CharField(default='', max_length=100),
        ),
        migrations.AlterField(
            model_name='paneltask',
            name='modality',
            field=models.CharField(default='', max_length=100),
        ),
        migrations.RemoveField(
            model_name='paneltask',
            name='complexity',
        ),
        migrations.RemoveField(
            model_name='paneltask',
            name='modality',
        ),
        # Serves counting a benchmark's tasks per stratum when a new one is drawn.
        migrations.AddIndex(
            model_name='paneltask',
            index=models.Index(fields=['benchmark', 'category', 'stratum'], name='paneltask_stratum'),
        ),
    ]
