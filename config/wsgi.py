import gc
import os

from django.core.wsgi import get_wsgi_application

from config.page_cache import PageCache

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Anonymous visitors' shared pages are answered before Django (config/page_cache.py); gunicorn
# serves this in `make run` and docker/.
application = PageCache(get_wsgi_application())


def _freeze_start_up() -> None:
    """What start-up made lives as long as the process (modules, settings, URL patterns,
    plotly's validators): out of the garbage collector's sight, so that a full collection
    walks only what requests made. At 10,000 submissions one came in about every fourth
    first visit of a board page after a change and took 118-123 ms of it; frozen, 7-21 ms."""
    import plotly.graph_objects as go
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 (the URL patterns are imported when first read)
    go.Scatter(x=[0])  # plotly's validators: 3 MB of JSON read on a process's first chart
    gc.collect()
    gc.freeze()


_freeze_start_up()
