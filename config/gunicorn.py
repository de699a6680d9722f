"""gunicorn's settings for the web server wherever it runs: the image's command, the compose
file's `web` service and `make run` all pass `-c python:config.gunicorn`. The worker reads each
request whole and sends each answer without holding a thread (config.web_worker), so threads
serve pages while slow clients upload or download. WEB_CONCURRENCY (gunicorn's own variable)
sets the number of worker processes."""

worker_class = "config.web_worker.BufferedThreadWorker"
threads = 4
sendfile = False  # answers go through the worker's buffer
accesslog = "-"
