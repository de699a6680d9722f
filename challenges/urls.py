"""A challenge's addresses under /c/<slug>/: the participants' pages (teams, entries, upload),
the organizers' pages, and the official results."""

from django.urls import include, path

app_name = "challenges"

urlpatterns = [
    path("", include("challenges.participant_urls")),
    path("", include("challenges.organizer_urls")),
]
