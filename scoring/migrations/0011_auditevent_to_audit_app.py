"""AuditEvent moves to the `audit` app (audit/0001_initial). Its table and the append-only
triggers of 0007_audit_append_only stay in the database: this removes it from `scoring`'s
state only."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("scoring", "0010_run_vector"),
        ("audit", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="AuditEvent")],
            database_operations=[],
        ),
    ]
