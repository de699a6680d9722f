"""The one gate of staff pages and actions."""

from functools import wraps

from django.http import Http404


def staff_only(view):
    """404 for anyone but active staff (anonymous visitors included): staff pages are not
    advertised to anyone else, GET and POST alike."""
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not (request.user.is_authenticated and request.user.is_active
                and request.user.is_staff):
            raise Http404("no such page")
        return view(request, *args, **kwargs)
    wrapped.staff_only = True  # found by tests/test_staff_pages.py: all under /staff/
    return wrapped
