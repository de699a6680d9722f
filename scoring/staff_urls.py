"""Staff pages that change scoring: the judge fleet and its configs, and the calibration
baselines. Under /staff/ (config.urls)."""

from django.urls import path

from scoring import views

urlpatterns = [
    path("fleet/", views.fleet, name="fleet"),
    path("fleet/stats/", views.fleet_stats, name="fleet-stats"),
    path("fleet/endpoint/", views.endpoint_switch, name="endpoint-switch"),
    path("fleet/probe/", views.probe_now, name="probe"),
    path("fleet/configs/new/", views.judge_config_new, name="judge-config-new"),
    path("fleet/configs/<int:config_id>/", views.judge_config_edit, name="judge-config-edit"),
    path("rescore/baselines/", views.baselines, name="baselines"),
]
