"""The organizers' pages of a challenge (/c/<slug>/manage/...: challenges.organizer_views, 404
to anyone who may not organize it) and its public pages (/c/<slug>/, its results, the
finalists' package upload: challenges.public_views)."""

from django.urls import path

from challenges import organizer_views as manage
from challenges import public_views as public

urlpatterns = [
    path("", public.challenge_list, name="list"),
    path("<slug:slug>/", public.challenge_page, name="challenge"),
    path("<slug:slug>/results/", public.challenge_results, name="results"),
    path("<slug:slug>/verification/", public.finalist_package, name="finalist-package"),
    path("<slug:slug>/manage/", manage.overview, name="manage"),
    path("<slug:slug>/manage/organizers/", manage.organizers, name="manage-organizers"),
    path("<slug:slug>/manage/organizers/<int:pk>/remove/", manage.organizer_remove,
         name="manage-organizer-remove"),
    path("<slug:slug>/manage/phases/new/", manage.phase_edit, name="manage-phase-new"),
    path("<slug:slug>/manage/phases/<slug:phase>/", manage.phase_edit, name="manage-phase"),
    path("<slug:slug>/manage/phases/<slug:phase>/boards/", manage.board_attach,
         name="manage-board-attach"),
    path("<slug:slug>/manage/phases/<slug:phase>/import/", manage.benchmark_import,
         name="manage-import"),
    path("<slug:slug>/manage/boards/<int:pk>/detach/", manage.board_detach,
         name="manage-board-detach"),
    path("<slug:slug>/manage/phases/<slug:phase>/reveal/", manage.reveal,
         name="manage-reveal"),
    path("<slug:slug>/manage/phases/<slug:phase>/verification/", manage.verification,
         name="manage-verification"),
    path("<slug:slug>/manage/verification/<int:pk>/decide/", manage.verification_decide,
         name="manage-verification-decide"),
    path("<slug:slug>/manage/verification/<int:pk>/package/", manage.package_download,
         name="manage-package"),
    path("<slug:slug>/manage/tracks/", manage.tracks, name="manage-tracks"),
    path("<slug:slug>/manage/tracks/<slug:track>/", manage.tracks, name="manage-track"),
    path("<slug:slug>/manage/teams/", manage.teams, name="manage-teams"),
]
