"""The staff audit log. Under /staff/ (config.urls)."""

from django.urls import path

from audit import views

urlpatterns = [
    path("audit/", views.staff_audit, name="audit"),
]
