from django.urls import path

from scoring import views

app_name = "scoring"

urlpatterns = [
    path("staff/fleet/", views.fleet, name="fleet"),
    path("staff/fleet/stats/", views.fleet_stats, name="fleet-stats"),
    path("staff/fleet/endpoint/", views.endpoint_switch, name="endpoint-switch"),
    path("staff/fleet/probe/", views.probe_now, name="probe"),
    path("staff/fleet/configs/new/", views.judge_config_new, name="judge-config-new"),
    path("staff/fleet/configs/<int:config_id>/", views.judge_config_edit,
         name="judge-config-edit"),
]
