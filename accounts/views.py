"""The API tokens page. Sign-up, log-in, email addresses and passwords are allauth's pages."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts.forms import TokenCreateForm
from accounts.models import ApiToken


@login_required
def tokens(request):
    form = TokenCreateForm(request.POST or None)
    new_key = None
    if request.method == "POST" and form.is_valid():
        # The key is rendered in this response and nowhere else: only its hash is stored.
        _, new_key = ApiToken.issue(user=request.user, name=form.cleaned_data["name"])
        form = TokenCreateForm()
    context = {"form": form, "new_key": new_key, "tokens": request.user.api_tokens.all()}
    return render(request, "accounts/tokens.html", context)


@login_required
@require_POST
def token_revoke(request, pk):
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    ApiToken.objects.filter(pk=token.pk, revoked_at=None).update(revoked_at=timezone.now())
    return redirect("accounts:tokens")
