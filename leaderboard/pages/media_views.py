"""The spectrogram images beside a submission's players, served under the submission's own
address (`/s/<id>/spectrogram/<item>/<which>.png`) like its audio: looked up with
`submission_get`, the one access check (another user gets 404 for a private submission's),
with the audio's cache headers. An image not drawn yet is a 404 too; the page says so. An
output withheld (submissions.withheld) has none on this address, nor has a hidden-rubric
benchmark's item for a viewer below its FULL disclosure (scoring.visibility).
"""

from __future__ import annotations

import re

from django.http import Http404
from django.views.decorators.http import require_safe

from leaderboard.boards.explorer_selectors import output_withheld
from leaderboard.pages.explorer import ranged_file_response
from scoring import spectrogram_store, visibility
from scoring.models import Item
from submissions.selectors import submission_get
from submissions.services import spectrograms_folder

SPECTROGRAM_WHICH = re.compile(r"output|diff|input[1-9][0-9]{0,2}")


@require_safe
def submission_spectrogram(request, pk, item_key, which):
    """The image of one of a sample's players ("inputN", "output") or the output's
    difference from its input ("diff")."""
    submission = submission_get(user=request.user, pk=pk)
    visibility.require(submission.benchmark, request.user)
    if not SPECTROGRAM_WHICH.fullmatch(which) or not Item.objects.filter(
            benchmark_id=submission.benchmark_id, key=item_key).exists():
        raise Http404("no such spectrogram")
    if which in ("output", "diff") and output_withheld(submission, item_key):
        raise Http404("this output is withheld while the listening panel rates it")
    folder = (spectrogram_store.inputs_folder(submission.benchmark) if which.startswith("input")
              else spectrograms_folder(submission))
    path = spectrogram_store.image_file(folder, item_key, which)
    if path is None:
        raise Http404("this spectrogram is not drawn (yet)")
    return ranged_file_response(request, path, content_type="image/png")
