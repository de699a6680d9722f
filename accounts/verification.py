"""Uploads need a confirmed email address, unless the site confirms none
(ACCOUNT_EMAIL_VERIFICATION=none)."""

from functools import wraps

from allauth.account.decorators import verified_email_required
from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.urls import reverse

# Log-ins whose provider vouches for the account ("verified" beside its name on the boards).
VERIFYING_PROVIDERS = ("github", "huggingface")


def verification_needed(user) -> bool:
    return (settings.ACCOUNT_EMAIL_VERIFICATION != "none"
            and not EmailAddress.objects.filter(user=user, verified=True).exists())


def verification_problem(request) -> str:
    """Why the API refuses the caller's upload, and where to get a new link."""
    email = request.user.email or "(none yet: add one)"
    return (f"confirm your email address {email} before uploading: open the link emailed to "
            f"you, or send a new one from {request.build_absolute_uri(reverse('account_email'))}")


def verified_email_for_uploads(view):
    """Log-in required, and then a confirmed email address: allauth's verified_email_required
    emails a new link and shows account/verified_email_required.html (403 to a POST, which
    is not run) to a user who has none."""
    gated = verified_email_required(view)
    signed_in = login_required(view)

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if settings.ACCOUNT_EMAIL_VERIFICATION == "none":
            return signed_in(request, *args, **kwargs)
        response = gated(request, *args, **kwargs)
        if (request.method == "POST" and request.user.is_authenticated
                and verification_needed(request.user)):
            response.status_code = 403
        return response

    return wrapped
