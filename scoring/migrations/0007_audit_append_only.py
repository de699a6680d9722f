"""The audit log is append-only: the database refuses to change or delete an event.

The one change allowed is the actor's id becoming NULL with nothing else changed, which is
what deleting the actor's account does (AuditEvent.actor is SET_NULL; actor_name stays).
On SQLite, emptying the table with DELETE (as a test flush does) is refused too; PostgreSQL
flushes with TRUNCATE, which row triggers do not see.
"""

from django.db import migrations

FIELDS = ("id", "actor_name", "action", "benchmark_slug", "object_type", "object_id",
          "object_repr", "before", "after", "reason", "public", "created_at")

POSTGRES_UP = f"""
CREATE OR REPLACE FUNCTION scoring_auditevent_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.actor_id IS NULL
       AND ROW({", ".join(f"NEW.{f}" for f in FIELDS)})
           IS NOT DISTINCT FROM ROW({", ".join(f"OLD.{f}" for f in FIELDS)}) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only: % of an event is refused', TG_OP;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER scoring_auditevent_append_only
    BEFORE UPDATE OR DELETE ON scoring_auditevent
    FOR EACH ROW EXECUTE FUNCTION scoring_auditevent_append_only();
"""

POSTGRES_DOWN = """
DROP TRIGGER IF EXISTS scoring_auditevent_append_only ON scoring_auditevent;
DROP FUNCTION IF EXISTS scoring_auditevent_append_only();
"""

SQLITE_UP = [
    f"""
    CREATE TRIGGER scoring_auditevent_no_update BEFORE UPDATE ON scoring_auditevent
    WHEN NOT (NEW.actor_id IS NULL AND {" AND ".join(f"NEW.{f} IS OLD.{f}" for f in FIELDS)})
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: UPDATE of an event is refused');
    END;
    """,
    """
    CREATE TRIGGER scoring_auditevent_no_delete BEFORE DELETE ON scoring_auditevent
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: DELETE of an event is refused');
    END;
    """,
]

SQLITE_DOWN = ["DROP TRIGGER IF EXISTS scoring_auditevent_no_update",
               "DROP TRIGGER IF EXISTS scoring_auditevent_no_delete"]


def _run(statements: dict):
    def run(apps, schema_editor):
        vendor = schema_editor.connection.vendor
        if vendor not in statements:
            raise RuntimeError(f"no append-only triggers for the {vendor} database")
        for statement in statements[vendor]:
            schema_editor.execute(statement, params=None)  # no placeholders: % is literal
    return run


class Migration(migrations.Migration):

    dependencies = [
        ("scoring", "0006_airbench_values_and_options"),
    ]

    operations = [
        migrations.RunPython(
            _run({"postgresql": [POSTGRES_UP], "sqlite": SQLITE_UP}),
            _run({"postgresql": [POSTGRES_DOWN], "sqlite": SQLITE_DOWN}),
        ),
    ]
