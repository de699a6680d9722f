"""The audit log is append-only in the database, and read-only in the admin."""

import pytest
from django.db import DatabaseError, transaction

from audit.models import AuditEvent
from audit.services import audit_record


@pytest.fixture
def event(staff, author):
    return audit_record(actor=staff, action=AuditEvent.Action.QUOTA, obj=author,
                        before={}, after={"per_day": 9}, reason="a lab")


def refused(change) -> None:
    with pytest.raises(DatabaseError, match="the audit log is append-only"), \
            transaction.atomic():
        change()


def test_an_event_cannot_be_updated(event):
    refused(lambda: AuditEvent.objects.filter(pk=event.pk).update(reason="rewritten"))
    event.after = {"per_day": 1000}
    refused(event.save)
    assert AuditEvent.objects.get(pk=event.pk).reason == "a lab"


def test_an_event_cannot_be_deleted(event):
    refused(lambda: AuditEvent.objects.filter(pk=event.pk).delete())
    refused(event.delete)
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_nor_can_its_actor_be_changed_to_someone_else(event, other_author):
    refused(lambda: AuditEvent.objects.filter(pk=event.pk).update(actor=other_author))


def test_deleting_the_actors_account_keeps_the_event_and_its_actors_name(event, staff):
    staff.delete()
    kept = AuditEvent.objects.get(pk=event.pk)
    assert (kept.actor, kept.actor_name, kept.reason) == (None, "staff", "a lab")


@pytest.fixture
def admin_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", "r@example.com",
                                                                  "pw-root-1"))
    return client


def test_the_admin_shows_events_but_cannot_add_change_or_delete(admin_client, event):
    listing = admin_client.get("/admin/audit/auditevent/")
    assert listing.status_code == 200
    assert event.object_repr in listing.content.decode()
    view = admin_client.get(f"/admin/audit/auditevent/{event.pk}/change/")
    assert view.status_code == 200 and "View audit event" in view.content.decode()
    assert admin_client.get("/admin/audit/auditevent/add/").status_code == 403
    assert admin_client.post(f"/admin/audit/auditevent/{event.pk}/change/",
                             {"reason": "x"}).status_code == 403
    assert admin_client.post(f"/admin/audit/auditevent/{event.pk}/delete/",
                             {"post": "yes"}).status_code == 403
    assert AuditEvent.objects.get(pk=event.pk).reason == "a lab"
