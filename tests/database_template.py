"""The suite's test databases are copies of one migrated template.

Each test process (pytest-xdist worker) needs its own test database. Migrated one by one, 63
migrations took each process 6-7 s, and four processes on two cores 13 s before the first test.
Instead the first process to get there migrates a template once (`manage.py migrate` on a
database of its own), and each process's test database is made from it by PostgreSQL's
`CREATE DATABASE ... TEMPLATE` (Django's TEST["TEMPLATE"] setting), after which Django's own
migrate finds nothing left to apply.

The template is named after a digest of every migration file Django loads (the project's and
the installed packages'): a changed or new migration names a new template, made afresh, and
older ones are dropped. A server that keeps its databases (the machine's PostgreSQL, as in
`.ci/run`) keeps the template for the next run; a throwaway one (`python -m tests.servers`
without TEST_DATABASE_URL) makes it once per run.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from importlib import import_module
from pathlib import Path

PREFIX = "test_template_"
# Another run may still be copying a template of other migrations (a checkout of another
# commit on the same server): one is dropped only an hour after it was last made or used.
STALE_SECONDS = 3600
ROOT = Path(__file__).resolve().parent.parent


def migrations_digest() -> str:
    """A digest of every migration file of every installed app, names and contents."""
    from django.apps import apps

    digest = hashlib.sha256()
    for config in sorted(apps.get_app_configs(), key=lambda c: c.label):
        try:
            module = import_module(f"{config.name}.migrations")
        except ModuleNotFoundError:
            continue
        folder = Path(module.__file__).parent
        for path in sorted(folder.glob("*.py")):
            digest.update(f"{config.label}/{path.name}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _connect(database: dict):
    """A connection to the server's `postgres` database with the parameters Django would use
    for `database` (its OPTIONS too, such as sslmode)."""
    import psycopg
    from django.db.backends.postgresql.base import DatabaseWrapper

    params = DatabaseWrapper({**database, "NAME": "postgres"}).get_connection_params()
    return psycopg.connect(**params, autocommit=True)


def _url(database: dict, name: str) -> str:
    from tests.servers import database_url_named

    return database_url_named(os.environ["DATABASE_URL"], name)


class Making:
    """The template for `database` made (when no run made it before) while pytest's workers
    start and collect: the lock is held and `manage.py migrate` started at once (so no worker
    looks before it is there, and no test has yet been barred from starting processes), and a
    thread waits for it, names the template and lets go."""

    def __init__(self, database: dict):
        self.database, self.error = database, None
        self.name = PREFIX + migrations_digest()
        self.server = _connect(database)
        self.server.execute("SELECT pg_advisory_lock(hashtext(%s))", (PREFIX,))
        self.migrate = None
        try:
            if not _exists(self.server, self.name):
                self.migrate = _begin(self.server, database, self.name)
        except BaseException:
            self._let_go()
            raise
        self.thread = threading.Thread(target=self._run, name="test-database-template",
                                       daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            if self.migrate is not None:
                _end(self.server, self.name, self.migrate)
            _drop_stale(self.server, self.name)
        except Exception as exc:  # the workers then migrate their own databases
            self.error = exc
        finally:
            self._let_go()

    def _let_go(self) -> None:
        self.server.execute("SELECT pg_advisory_unlock(hashtext(%s))", (PREFIX,))
        self.server.close()

    def wait(self) -> str | None:
        """Once the making has ended: what went wrong, or None. (The workers then migrated
        their own databases, where a broken migration fails the tests themselves.)"""
        self.thread.join()
        return None if self.error is None else str(self.error)


def template(database: dict) -> str | None:
    """The name of the migrated template for `database` (Django's settings of it) once it
    is whole (waiting for a Making of it to end); None where there is none to copy (not
    PostgreSQL, or its making failed): the test database is then migrated as usual."""
    if database.get("ENGINE") != "django.db.backends.postgresql":
        return None
    import psycopg

    name = PREFIX + migrations_digest()
    with _connect(database) as server:
        server.execute("SELECT pg_advisory_lock(hashtext(%s))", (PREFIX,))
        try:
            if not _exists(server, name):
                return None
            try:
                _touch(server, name)  # used now: no run of other migrations drops it for an hour
            except psycopg.Error:
                pass  # another role's: it can still be copied
            return name
        finally:
            server.execute("SELECT pg_advisory_unlock(hashtext(%s))", (PREFIX,))


def _exists(server, name: str) -> bool:
    return server.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                          (name,)).fetchone() is not None


def _partial(name: str) -> str:
    return f"{name}_partial"


def _begin(server, database: dict, name: str) -> subprocess.Popen:
    """Start migrating a database under a provisional name (a run stopped half-way leaves no
    template that looks whole)."""
    partial = _partial(name)
    # FORCE: a run killed half-way may have left its migrate connected to it.
    server.execute(f'DROP DATABASE IF EXISTS "{partial}" WITH (FORCE)')
    server.execute(f'CREATE DATABASE "{partial}"')
    return subprocess.Popen(
        [sys.executable, "manage.py", "migrate", "--no-input", "--verbosity", "0"], cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "DATABASE_URL": _url(database, partial)})


def _end(server, name: str, migrate: subprocess.Popen) -> None:
    """Once migrated, the provisional database becomes the template `name`."""
    try:
        _, errors = migrate.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        migrate.kill()
        _, errors = migrate.communicate()
        errors = f"still migrating after 600 s, stopped\n{errors}"
    partial = _partial(name)
    if migrate.returncode != 0:
        server.execute(f'DROP DATABASE IF EXISTS "{partial}" WITH (FORCE)')
        raise RuntimeError(f"migrating the test database template failed:\n{errors}")
    server.execute(f'ALTER DATABASE "{partial}" RENAME TO "{name}"')
    _touch(server, name)


def _touch(server, name: str) -> None:
    """Note on the template when it was last made or used (what _drop_stale reads)."""
    server.execute(f"COMMENT ON DATABASE \"{name}\" IS '{int(time.time())}'")


def _drop_stale(server, keep: str) -> None:
    """Drop the templates of other migrations last made or used more than STALE_SECONDS
    ago; one that cannot be dropped (being copied, another role's) is left."""
    import psycopg

    # One with a session open (being made or copied) is passed over here: DROP DATABASE
    # would wait 5 s for that session before refusing.
    for old, made in server.execute(
            "SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database d "
            "WHERE datname LIKE %s AND datname <> %s AND NOT EXISTS "
            "(SELECT 1 FROM pg_stat_activity a WHERE a.datname = d.datname)",
            (PREFIX.replace("_", r"\_") + "%", keep)).fetchall():
        if made and made.isdigit() and time.time() - int(made) < STALE_SECONDS:
            continue
        try:
            server.execute(f'DROP DATABASE IF EXISTS "{old}"')
        except psycopg.Error:
            pass  # being copied right now, or not ours to drop: a later run may
