"""The test databases' template (tests/database_template.py), on the suite's own PostgreSQL
server: which templates a run drops, and what a failed making leaves and says."""

import time
from types import SimpleNamespace

import pytest
from django.db import connection

from tests import database_template as template_module


@pytest.fixture
def server():
    """A connection to the suite's server outside any test transaction, and the databases
    named in `made` dropped at the end."""
    made: list[str] = []
    with template_module._connect(connection.settings_dict) as server:
        server.made = made
        yield server
        for name in made:
            server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database(server, name: str, stamp: int | None) -> str:
    server.execute(f'CREATE DATABASE "{name}"')
    server.made.append(name)
    if stamp is not None:
        server.execute(f"COMMENT ON DATABASE \"{name}\" IS '{stamp}'")
    return name


def names(server) -> set[str]:
    return {row[0] for row in server.execute("SELECT datname FROM pg_database")}


@pytest.mark.slow
def test_a_template_of_other_migrations_is_dropped_an_hour_after_its_last_use(server):
    prefix = template_module.PREFIX
    now = int(time.time())
    fresh = database(server, f"{prefix}zzfresh", now - 600)
    stale = database(server, f"{prefix}zzstale", now - 2 * 3600)
    unknown = database(server, f"{prefix}zzunknown", None)
    kept = database(server, f"{prefix}zzkept", now - 5 * 3600)
    template_module._drop_stale(server, kept)
    left = names(server)
    assert fresh in left and kept in left
    assert stale not in left and unknown not in left


@pytest.mark.slow
def test_a_template_in_use_elsewhere_is_left_and_nothing_is_raised(server):
    prefix = template_module.PREFIX
    busy = database(server, f"{prefix}zzbusy", int(time.time()) - 2 * 3600)
    url = template_module._url(connection.settings_dict, busy)
    import psycopg

    with psycopg.connect(url):  # another run copying it right now
        template_module._drop_stale(server, "none")
    assert busy in names(server)


def test_using_a_template_marks_it_used_now(server, monkeypatch):
    monkeypatch.setattr(template_module, "migrations_digest", lambda: "zzdigest")
    name = database(server, template_module.PREFIX + "zzdigest", int(time.time()) - 5000)
    assert template_module.template(connection.settings_dict) == name
    stamp = server.execute("SELECT shobj_description(oid, 'pg_database') FROM pg_database "
                           "WHERE datname = %s", (name,)).fetchone()[0]
    assert abs(int(stamp) - time.time()) < 60


class FailedMigrate:
    returncode = 1

    def communicate(self, timeout=None):
        return "", "django.db.utils.ProgrammingError: relation does not exist"


class HungMigrate:
    returncode = None

    def __init__(self):
        self.killed = False

    def communicate(self, timeout=None):
        if not self.killed:
            import subprocess

            raise subprocess.TimeoutExpired("manage.py migrate", timeout)
        return "", ""

    def kill(self):
        self.killed, self.returncode = True, -9


@pytest.mark.parametrize("migrate, said", [
    (FailedMigrate(), "relation does not exist"),
    (HungMigrate(), "still migrating after 600 s, stopped"),
])
def test_a_failed_or_hung_migrate_leaves_no_template_and_says_why(server, migrate, said):
    name = template_module.PREFIX + "zzfailed"
    database(server, template_module._partial(name), None)
    with pytest.raises(RuntimeError, match=said):
        template_module._end(server, name, migrate)
    left = names(server)
    assert name not in left and template_module._partial(name) not in left
    assert getattr(migrate, "killed", True)


def test_a_making_that_failed_is_said_at_the_end_not_raised():
    making = SimpleNamespace(thread=SimpleNamespace(join=lambda: None),
                             error=RuntimeError("migrating the test database template failed"))
    assert template_module.Making.wait(making) == "migrating the test database template failed"
    making.error = None
    assert template_module.Making.wait(making) is None


def test_the_templates_connection_takes_the_databases_options(db):
    # As Django connects: a DATABASE_URL's ?sslmode=... or application_name reaches the
    # server through OPTIONS, and so must the template's own connection.
    options = {**connection.settings_dict["OPTIONS"], "application_name": "template-check"}
    with template_module._connect({**connection.settings_dict, "OPTIONS": options}) as server:
        assert server.execute("SELECT current_setting('application_name'), "
                              "current_database()").fetchone() == ("template-check", "postgres")
