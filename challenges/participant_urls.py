"""The participants' pages and API of a challenge, under /c/<slug>/ (challenges
.participant_views, challenges.participant_api)."""

from django.urls import path

from challenges import participant_api as api
from challenges import participant_views as views

urlpatterns = [
    path("<slug:slug>/team/", views.team_page, name="team"),
    path("<slug:slug>/teams/new/", views.team_new, name="team-new"),
    path("<slug:slug>/team/invite/", views.team_invite, name="team-invite"),
    path("<slug:slug>/team/entries/<int:pk>/choose/", views.entry_choose, name="entry-choose"),
    path("<slug:slug>/invitations/<int:pk>/", views.invitation, name="invitation"),
    path("<slug:slug>/tracks/<slug:track>/enter/", views.track_enter, name="track-enter"),
    path("<slug:slug>/<slug:phase>/<slug:track>/submit/", views.submit, name="submit"),
    path("<slug:slug>/<slug:phase>/<slug:track>/package/", views.task_package,
         name="package"),
    path("<slug:slug>/api/<slug:phase>/<slug:track>/entries/", api.EntryListCreateApi.as_view(),
         name="api-entries"),
    path("<slug:slug>/api/entries/<int:pk>/choose/", api.EntryChooseApi.as_view(),
         name="api-entry-choose"),
]
