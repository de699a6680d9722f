"""gunicorn's settings for the web server wherever it runs: the image's command, the compose
file's `web` service and `make run` all pass `-c python:config.gunicorn`. The worker reads each
request whole and sends each answer without holding a thread (config.web_worker), so threads
serve pages while slow clients upload or download. WEB_CONCURRENCY (gunicorn's own variable)
sets the number of worker processes."""

worker_class = "config.web_worker.BufferedThreadWorker"
threads = 4
sendfile = False  # answers go through the worker's buffer
accesslog = "-"
# The application is imported once, in the master, and each worker forked from it: config.wsgi's
# start-up (Django's set-up, the URL patterns, plotly's validators, then gc.freeze) is shared
# copy-on-write instead of repeated per worker, and a worker that replaces one starts at once.
# Nothing at import opens a connection (the database's, Redis's and the broker's open on first
# use, in each worker). Two workers starting: CPU 0.55 of each worker importing it (1.87 s
# against 3.39 s), the first answer 0.88 of its time (1.54 s against 1.75 s); 0.61 and 1.15
# with the suite running beside, when two workers importing at once no longer overlap
# (`bench/web_start.py`, 2026-12-07 04:05 and 03:51).
preload_app = True
