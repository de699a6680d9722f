import os

from django.core.wsgi import get_wsgi_application

from config.front import Front

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Anonymous visitors' shared pages are answered before Django (config/front.py); gunicorn
# serves this in `make run` and docker/.
application = Front(get_wsgi_application())
