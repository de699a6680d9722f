import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.cache import cache

from config.alerts import staff_alert

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _clear_cache():
    cache.clear()
    yield
    cache.clear()


def test_an_alert_emails_every_active_staff_user_once_per_key(settings):
    settings.ADMINS = [("ops", "ops@example.org")]
    users = get_user_model().objects
    users.create_user("boss", "boss@example.org", "pw", is_staff=True)
    users.create_user("gone", "gone@example.org", "pw", is_staff=True, is_active=False)
    users.create_user("author", "author@example.org", "pw")
    assert staff_alert("judge refuses", "every query got HTTP 404", key="fleet:1")
    assert not staff_alert("judge refuses", "every query got HTTP 404", key="fleet:1")
    assert len(mail.outbox) == 1
    assert sorted(mail.outbox[0].to) == ["boss@example.org", "ops@example.org"]
    assert "every query got HTTP 404" in mail.outbox[0].body
    assert staff_alert("another", "text", key="fleet:2")
    assert len(mail.outbox) == 2


def test_an_email_that_cannot_go_out_never_breaks_the_caller(settings, monkeypatch):
    get_user_model().objects.create_user("boss", "boss@example.org", "pw", is_staff=True)

    def broken(*args, **kwargs):
        raise OSError("SMTP server down")

    monkeypatch.setattr("config.alerts.send_mail", broken)
    assert staff_alert("run failed", "database gone")
