from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"

    def ready(self):
        from scoring import visibility
        from submissions.models import published_runs

        visibility.give_published_runs(published_runs)
        from submissions import owners

        owners.connect()
        # Its receiver of config.celery.broker_emptied, in whichever process notices.
        from submissions import tasks  # noqa: F401
