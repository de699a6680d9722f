"""A database connection the server dropped (a restart, an idle timeout) is replaced before the
next request uses it: no visitor gets a 500 when a new connection succeeds."""

import psycopg
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection

from tests.config.test_page_cache import call


@pytest.mark.django_db(transaction=True)
def test_a_dropped_connection_is_replaced_before_the_next_request(settings):
    """Served as gunicorn serves it (Django's request signals run, as the test client's do
    not), the connection kept between requests (CONN_MAX_AGE)."""
    settings.ALLOWED_HOSTS = ["testserver"]
    app = WSGIHandler()
    assert connection.settings_dict["CONN_MAX_AGE"] > 0
    assert call(app, "/api/benchmarks/").status == 200
    dropped = connection.connection.info.backend_pid
    with psycopg.connect(connection.connection.info.dsn, dbname="postgres",
                         autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", [dropped]).fetchone()[0]
    assert call(app, "/api/benchmarks/").status == 200
    assert connection.connection.info.backend_pid != dropped
