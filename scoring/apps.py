from django.apps import AppConfig
from django.conf import settings


class ScoringConfig(AppConfig):
    name = "scoring"

    def ready(self):
        # Every Django process (web, worker, commands) has the project's Celery app before a
        # task is sent, so that shared tasks are sent through it (config/__init__ says why
        # it is not imported there).
        import config.celery  # noqa: F401
        from scoring.kinds import register_module

        for path in settings.BENCHMARK_KINDS_EXTRA:
            register_module(path)
