"""AuditEvent moves here from `scoring` (scoring/0011_auditevent_to_audit_app). Its table,
`scoring_auditevent`, and the append-only triggers of scoring/0007_audit_append_only stay
as they are in the database: this migration changes Django's state only."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("scoring", "0010_run_vector"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AuditEvent",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                                   serialize=False, verbose_name="ID")),
                        ("actor_name", models.CharField(max_length=150)),
                        ("action", models.CharField(choices=[
                            ("rescore", "Rescore"), ("visibility", "Visibility"),
                            ("deletion", "Deletion"), ("flag", "Flag"), ("hide", "Hide"),
                            ("judge_config", "Judge Config"), ("quota", "Quota"),
                            ("endpoint", "Endpoint"), ("baseline", "Baseline")],
                            max_length=20)),
                        ("benchmark_slug", models.SlugField(blank=True)),
                        ("object_type", models.CharField(max_length=50)),
                        ("object_id", models.CharField(blank=True, max_length=50)),
                        ("object_repr", models.CharField(max_length=300)),
                        ("before", models.JSONField(blank=True, default=dict)),
                        ("after", models.JSONField(blank=True, default=dict)),
                        ("reason", models.TextField(blank=True)),
                        ("public", models.BooleanField(default=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("actor", models.ForeignKey(
                            blank=True, null=True,
                            on_delete=django.db.models.deletion.SET_NULL, related_name="+",
                            to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        "db_table": "scoring_auditevent",
                        "ordering": ["-created_at", "-id"],
                        "indexes": [models.Index(fields=["benchmark_slug", "public",
                                                         "created_at"],
                                                 name="audit_changelog")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
