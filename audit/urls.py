from django.urls import path

from audit import views

app_name = "audit"

urlpatterns = [
    path("b/<slug:slug>/changelog/", views.changelog, name="changelog"),
]
