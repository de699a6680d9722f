from django.apps import AppConfig
from django.conf import settings


class ScoringConfig(AppConfig):
    name = "scoring"

    def ready(self):
        from scoring.kinds import register_module

        for path in settings.BENCHMARK_KINDS_EXTRA:
            register_module(path)
