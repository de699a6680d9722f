"""The project's plumbing: settings, Celery and its base tasks, the API's errors, rate limits,
caches, staff alerts, JSON as people send it, and `make run`. It imports no app but judge.

The Celery app (`config.celery`) is not imported here, as Celery's Django example does, but
when Django starts (scoring.apps): plain-Python users of this package, such as the `score`
command reading JSON through config.jsontext, then start without Celery's 0.15 s of imports.
`celery -A config` finds the app in config.celery either way.

Each process of the site (web, worker, `manage.py`) imports this package before numpy and scipy,
so it sets their BLAS to one thread here unless the environment says otherwise: by default
OpenBLAS starts a thread per core in each library at import, in every process, though each
process draws or measures one audio at a time (the workers' pools give the parallelism). On
the 2-core machine a process's start took 0.10 s less CPU (django.setup(), six runs each,
alternately, 2026-12-07) with 2 threads fewer; on a machine of many cores each process would
have started that many, oversubscribing them."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def __getattr__(name: str):
    if name == "celery_app":
        from config.celery import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
