# The listening panel's models, moved here from `leaderboard` (leaderboard 0009 lets go of them):
# their tables exist already, made by leaderboard 0007 and named in each model's Meta.db_table,
# so this only takes them into the app's state, and gives their content types to this app.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


MODELS = ("paneltask", "panelassignment", "panelanswer", "panelremoval")


def content_types_to(app_label: str, from_label: str):
    """Re-label the models' content types (their permissions hang on them), unless the
    target app has its own already."""
    def move(apps, schema_editor):
        types = apps.get_model("contenttypes", "ContentType").objects.using(
            schema_editor.connection.alias)
        for model in MODELS:
            if not types.filter(app_label=app_label, model=model).exists():
                types.filter(app_label=from_label, model=model).update(app_label=app_label)
    return move


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('leaderboard', '0009_panel_models_moved'),
        ('scoring', '0015_kind_neutral_tables'),
        ('submissions', '0010_deleted_attempt'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='PanelRemoval',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('reason', models.TextField()),
                        ('answers_removed', models.PositiveIntegerField(default=0)),
                        ('removed_at', models.DateTimeField(auto_now_add=True)),
                        ('rater', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('removed_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'leaderboard_panelremoval',
                    },
                ),
                migrations.CreateModel(
                    name='PanelTask',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('category', models.CharField(max_length=100)),
                        ('modality', models.CharField(max_length=100)),
                        ('complexity', models.CharField(max_length=100)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('benchmark', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='scoring.benchmark')),
                        ('criterion', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='scoring.criterion')),
                        ('submission', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='submissions.submission')),
                    ],
                    options={
                        'db_table': 'leaderboard_paneltask',
                    },
                ),
                migrations.CreateModel(
                    name='PanelAssignment',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('repeat', models.BooleanField(default=False)),
                        ('answered', models.BooleanField(default=False)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('rater', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('task', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='assignments', to='panel.paneltask')),
                    ],
                    options={
                        'db_table': 'leaderboard_panelassignment',
                    },
                ),
                migrations.CreateModel(
                    name='PanelAnswer',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('repeat', models.BooleanField(default=False)),
                        ('choices', models.JSONField()),
                        ('letter', models.CharField(max_length=1)),
                        ('chosen', models.TextField()),
                        ('right', models.BooleanField()),
                        ('listened', models.JSONField(default=dict)),
                        ('answered_at', models.DateTimeField(auto_now_add=True)),
                        ('rater', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('assignment', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='answer', to='panel.panelassignment')),
                        ('task', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='answers', to='panel.paneltask')),
                    ],
                    options={
                        'db_table': 'leaderboard_panelanswer',
                    },
                ),
                migrations.AddIndex(
                    model_name='paneltask',
                    index=models.Index(fields=['benchmark', 'category', 'modality', 'complexity'], name='paneltask_stratum'),
                ),
                migrations.AddConstraint(
                    model_name='paneltask',
                    constraint=models.UniqueConstraint(fields=('submission', 'criterion'), name='paneltask_submission_criterion'),
                ),
                migrations.AddIndex(
                    model_name='panelassignment',
                    index=models.Index(fields=['rater', 'answered'], name='panelassignment_rater_open'),
                ),
                migrations.AddConstraint(
                    model_name='panelassignment',
                    constraint=models.UniqueConstraint(fields=('task', 'rater', 'repeat'), name='panelassignment_task_rater_repeat'),
                ),
                migrations.AddIndex(
                    model_name='panelanswer',
                    index=models.Index(condition=models.Q(('repeat', False)), fields=['task'], name='panelanswer_task_first'),
                ),
                migrations.AddConstraint(
                    model_name='panelanswer',
                    constraint=models.UniqueConstraint(fields=('task', 'rater', 'repeat'), name='panelanswer_task_rater_repeat'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_to("panel", "leaderboard"),
                             content_types_to("leaderboard", "panel")),
    ]
