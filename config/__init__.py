"""The project's plumbing: settings, Celery and its base tasks, the API's errors, rate limits,
caches, staff alerts, JSON as people send it, and `make run`. It imports no app but judge.

The Celery app (`config.celery`) is not imported here, as Celery's Django example does, but
when Django starts (scoring.apps): plain-Python users of this package, such as the `score`
command reading JSON through config.jsontext, then start without Celery's 0.15 s of imports.
`celery -A config` finds the app in config.celery either way."""


def __getattr__(name: str):
    if name == "celery_app":
        from config.celery import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
