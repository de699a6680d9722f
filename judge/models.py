from django.db import models


class Endpoint(models.Model):
    """A judge server as the fleet page sees it: whether staff let it take queries, and what
    its last probe found.

    One row per base URL, made on its first probe or the first time staff take it out. Health
    and load come from the periodic probe (judge.probe); `enabled` is staff's switch, and an
    endpoint taken out receives no new judge queries.
    """

    # Unique: also serves looking endpoints up by URL (run_endpoints, the fleet page).
    base_url = models.CharField(max_length=300, unique=True)
    enabled = models.BooleanField(default=True)
    enabled_changed_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.TextField(blank=True)  # why staff took it out, while it is out
    last_probe_at = models.DateTimeField(null=True, blank=True)
    healthy = models.BooleanField(null=True)  # null until the first probe
    probe_latency_ms = models.FloatField(null=True, blank=True)  # of GET /v1/models
    probe_error = models.TextField(blank=True)
    # vLLM's vllm:num_requests_running and vllm:num_requests_waiting at the last probe; null
    # when the server serves no /metrics or the probe failed.
    running = models.PositiveIntegerField(null=True, blank=True)
    waiting = models.PositiveIntegerField(null=True, blank=True)
    # The last probe was answered by the judge simulator (it says so in a header), not a model.
    simulator = models.BooleanField(default=False)
    # The model ids its last answered probe's GET /v1/models listed; null before one answered.
    served_models = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["base_url"]

    def __str__(self):
        return self.base_url
