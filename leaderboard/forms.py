from django import forms

from leaderboard.selectors import OVERALL, SORTS, BoardQuery
from scoring import mmae


class BoardForm(forms.Form):
    """The board's GET parameters; every state of the board is a shareable URL."""

    dimension = forms.ChoiceField(required=False, choices=[(OVERALL, "overall")] + [
        (d, d.replace("_", " ")) for d in mmae.DIMENSIONS])
    bucket = forms.CharField(required=False, max_length=200)
    q = forms.CharField(required=False, max_length=100, label="Search")
    open_weights = forms.ChoiceField(required=False, choices=[("", "any"), ("yes", "open"),
                                                              ("no", "closed")])
    licence = forms.CharField(required=False, max_length=100)
    sort = forms.ChoiceField(required=False, choices=[(s, s) for s in SORTS])
    desc = forms.BooleanField(required=False)

    def __init__(self, data, *, buckets: dict[str, list[str]]):
        super().__init__(data)
        self.buckets = buckets

    def clean(self):
        data = super().clean()
        dimension = data.get("dimension") or OVERALL
        bucket = data.get("bucket") or ""
        if dimension != OVERALL:
            known = self.buckets.get(dimension, [])
            if not bucket and known:
                bucket = known[0]
            elif bucket not in known:
                self.add_error("bucket", f"{bucket!r} is not a bucket of {dimension}; "
                                         f"choose one of: {', '.join(known) or 'none yet'}")
        data["dimension"], data["bucket"] = dimension, bucket if dimension != OVERALL else ""
        return data

    def query(self) -> BoardQuery:
        data = self.cleaned_data
        weights = {"yes": True, "no": False}.get(data.get("open_weights") or "")
        return BoardQuery(dimension=data["dimension"], bucket=data["bucket"],
                          search=data.get("q") or "", open_weights=weights,
                          licence=data.get("licence") or "", sort=data.get("sort") or "rank",
                          descending=bool(data.get("desc")))
