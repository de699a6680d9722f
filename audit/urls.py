from django.urls import path

from audit import views

app_name = "audit"

urlpatterns = [
    path("staff/audit/", views.staff_audit, name="staff-audit"),
    path("b/<slug:slug>/changelog/", views.changelog, name="changelog"),
]
