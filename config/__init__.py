"""The project's plumbing: settings, Celery and its base tasks, the API's errors, rate limits,
caches, staff alerts, JSON as people send it, and `make run`. It imports no app but judge."""

from config.celery import app as celery_app

__all__ = ("celery_app",)
