import re
from urllib.parse import urlencode

from django import forms
from django.http import QueryDict

from leaderboard.boards import explorer_selectors
from leaderboard.boards.model_pages import visible_models
from leaderboard.boards.selectors import SORTS, BoardQuery
from leaderboard.boards.state import OVERALL
from scoring.kinds import KINDS, Kind


def dimension_choices(kind: Kind) -> list[tuple[str, str]]:
    return [(d.key, d.label) for d in kind.dimensions]


def default_dimension(kind: Kind) -> str:
    """The dimension a pivot or a model page opens on."""
    return kind.main_dimension or kind.dimensions[0].key


def normalised(form, **defaults) -> QueryDict:
    """A valid form's parameters in field order, leaving out empty and default values. A cached
    body is keyed on this and rendered from it (its links carry the query on), so unknown,
    reordered or spelled-out default parameters share one cache entry, and no visitor gets
    links holding another's stray parameters."""
    normal = QueryDict(mutable=True)
    for name in form.fields:
        value = form.cleaned_data.get(name)
        if value is None or value == "" or value is False or defaults.get(name) == value:
            continue
        normal[name] = "on" if value is True else str(value)
    return normal


class BoardForm(forms.Form):
    """The board's GET parameters; every state of the board is a shareable URL."""

    dimension = forms.ChoiceField(required=False)
    bucket = forms.CharField(required=False, max_length=200)
    q = forms.CharField(required=False, max_length=100, label="Search")
    open_weights = forms.ChoiceField(required=False, choices=[("", "any"), ("yes", "open"),
                                                              ("no", "closed")])
    licence = forms.CharField(required=False, max_length=100)
    sort = forms.ChoiceField(required=False)
    desc = forms.BooleanField(required=False)
    # Reported and diagnostic rows stand in the table unless the visitor hides them.
    hide_references = forms.BooleanField(required=False)
    judge = forms.BooleanField(required=False)  # show the judge's figures as columns
    no_clipping = forms.BooleanField(required=False)  # hide rows whose outputs clip
    judge_family = forms.ChoiceField(required=False, choices=[
        ("", "any family"), ("exclude", "not the judge's family"),
        ("only", "the judge's family only")])
    chart = forms.ChoiceField(required=False)  # the chart's metric (default: one that separates)
    page = forms.IntegerField(required=False, min_value=1)

    def __init__(self, data, *, buckets: dict[str, list[str]], kind: Kind):
        super().__init__(data)
        self.buckets = buckets
        self.fields["dimension"].choices = [(OVERALL, "overall"), *dimension_choices(kind)]
        self.fields["sort"].choices = [(s, s) for s in (*SORTS, *kind.metric_keys)]
        self.fields["chart"].choices = [(m.key, m.label) for m in kind.metrics if not m.count]

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

    def clean_q(self) -> str:
        """The search in one spelling (it matches case-insensitively): each spelling would
        otherwise be a cached page of its own."""
        return " ".join(self.cleaned_data["q"].split()).lower()

    def query(self) -> BoardQuery:
        data = self.cleaned_data
        weights = {"yes": True, "no": False}.get(data.get("open_weights") or "")
        return BoardQuery(dimension=data["dimension"], bucket=data["bucket"],
                          search=data.get("q") or "", open_weights=weights,
                          licence=data.get("licence") or "", sort=data.get("sort") or "rank",
                          descending=bool(data.get("desc")),
                          references=not data.get("hide_references"),
                          judge=bool(data.get("judge")),
                          no_clipping=bool(data.get("no_clipping")),
                          judge_family=data.get("judge_family") or "")


class ApiBoardForm(BoardForm):
    """The read API's parameters: the board's, and a page of `page_size` rows."""

    MAX_PAGE_SIZE = 1000
    DEFAULT_PAGE_SIZE = 100

    page = forms.IntegerField(required=False, min_value=1, error_messages={
        "invalid": "must be a whole number, 1 or more", "min_value": "must be 1 or more"})
    page_size = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_PAGE_SIZE, error_messages={
            "invalid": f"must be a whole number from 1 to {MAX_PAGE_SIZE}",
            "min_value": "must be 1 or more",
            "max_value": f"must be at most {MAX_PAGE_SIZE}"})

    def clean(self):
        data = super().clean()
        data["page"] = data.get("page") or 1
        data["page_size"] = data.get("page_size") or self.DEFAULT_PAGE_SIZE
        return data


class DatasetForm(BoardForm):
    """The items dataset's parameters: the board's slice, and the file's format."""

    format = forms.ChoiceField(required=False, choices=[
        ("parquet", "Parquet"), ("csv", "CSV"), ("jsonl", "JSON lines")])

    def clean(self):
        data = super().clean()
        data["format"] = data.get("format") or "parquet"
        return data


class PivotForm(forms.Form):
    """The pivot's GET parameters: which dimension's buckets and which metric."""

    dimension = forms.ChoiceField(required=False)
    metric = forms.ChoiceField(required=False)
    page = forms.IntegerField(required=False, min_value=1)

    def __init__(self, data, *, kind: Kind):
        super().__init__(data)
        self.kind = kind
        self.fields["dimension"].choices = dimension_choices(kind)
        self.fields["metric"].choices = [(m.key, m.label) for m in kind.metrics]

    def clean(self):
        data = super().clean()
        data["dimension"] = data.get("dimension") or default_dimension(self.kind)
        data["metric"] = data.get("metric") or ""  # the view picks one that separates
        data["page"] = data.get("page") or 1
        return data


class ModelPageForm(forms.Form):
    """The model page's GET parameters: which board's figures, and the chart over which
    dimension, as bars or a radar."""

    benchmark = forms.ChoiceField(required=False)
    dimension = forms.ChoiceField(required=False)
    chart = forms.ChoiceField(required=False, choices=[("bars", "bars"), ("radar", "radar")])

    def __init__(self, data, *, kinds: dict[str, Kind]):
        super().__init__(data)
        self.fields["benchmark"].choices = [(b, b) for b in kinds]
        # The kinds registered now, not at import: a kind may be registered later.
        self.fields["dimension"].choices = sorted(
            {c for kind in KINDS.values() for c in dimension_choices(kind)})
        self.kinds = kinds

    def clean(self):
        data = super().clean()
        data["benchmark"] = data.get("benchmark") or next(iter(self.kinds), "")
        kind = self.kinds.get(data["benchmark"])
        if kind is None:  # the model has no submission the viewer may see
            data["dimension"] = data.get("dimension") or ""
            data["chart"] = data.get("chart") or "bars"
            return data
        if data.get("dimension") and data["dimension"] not in kind.dimension_keys:
            self.add_error("dimension", f"{data['dimension']!r} is not a dimension of "
                                        f"{data['benchmark']}; choose one of: "
                                        f"{', '.join(kind.dimension_keys)}")
        data["dimension"] = data.get("dimension") or default_dimension(kind)
        data["chart"] = data.get("chart") or "bars"
        return data


MODEL_ID = r"[0-9]{1,18}"


class CompareForm(forms.Form):
    """`models=ID1,ID2[,...]` (or the parameter repeated, as checkboxes send it): two or more
    models with a public scored submission on this board."""

    MAX_MODELS = 8

    models = forms.CharField(required=False, max_length=500)

    def __init__(self, data, *, board: dict, user):
        if hasattr(data, "getlist"):
            data = {"models": ",".join(data.getlist("models"))}
        super().__init__(data)
        self.board, self.user = board, user

    @staticmethod
    def canonical(data: QueryDict) -> str:
        """The `models` of a query as one spelling: the first model (the one the others are
        set against) first, the others in id order, each once and without leading zeros.
        Text that is not a list of ids comes back as it is, for clean_models to refuse."""
        parts = [p.strip() for p in ",".join(data.getlist("models")).split(",") if p.strip()]
        if not all(re.fullmatch(MODEL_ID, p) for p in parts):
            return ",".join(parts)
        ids = list(dict.fromkeys(int(p) for p in parts))
        return ",".join(map(str, ids[:1] + sorted(ids[1:])))

    def clean_models(self) -> list[int]:
        ids: list[int] = []
        for part in (p.strip() for p in self.cleaned_data["models"].split(",")):
            if not part:
                continue
            if not re.fullmatch(MODEL_ID, part):
                raise forms.ValidationError(f"{part!r} is not a model id")
            if int(part) not in ids:
                ids.append(int(part))
        if len(ids) < 2:
            raise forms.ValidationError(f"choose at least two models to compare "
                                        f"(got {len(ids)})")
        if len(ids) > self.MAX_MODELS:
            raise forms.ValidationError(f"compare at most {self.MAX_MODELS} models at once "
                                        f"(got {len(ids)})")
        absent = [i for i in ids if i not in self.board]
        # Name only models the user may know of: a model with private submissions only
        # reads as unknown, exactly as its page 404s.
        known = {m.id: m.name for m in visible_models(self.user).filter(pk__in=absent)}
        errors = [f"{known[i]!r} (model {i}) has no public scored submission on this board"
                  if i in known else f"no model with id {i}" for i in absent]
        if errors:
            raise forms.ValidationError(errors)
        return ids

    def submissions(self) -> list:
        return [self.board[i] for i in self.cleaned_data["models"]]


class SliceForm(forms.Form):
    """A slice of a benchmark's items as GET parameters: a dimension and one of its buckets
    (a dimension alone takes its first bucket), or neither for every item."""

    dimension = forms.ChoiceField(required=False)
    bucket = forms.CharField(required=False, max_length=200)

    def __init__(self, data, *, buckets: dict[str, list[str]], kind):
        super().__init__(data)
        self.buckets = buckets
        self.fields["dimension"].choices = [("", f"all {kind.item_noun}s")] + [
            (d, kind.dimension_label(d)) for d in buckets]

    def clean(self):
        data = super().clean()
        if "dimension" in self.errors:
            return data
        dimension, bucket = data.get("dimension") or "", data.get("bucket") or ""
        known = self.buckets.get(dimension, [])
        if dimension and not bucket and known:
            bucket = known[0]
        elif dimension and bucket not in known:
            self.add_error("bucket", f"{bucket!r} is not a bucket of {dimension}; "
                                     f"choose one of: {', '.join(known) or 'none'}")
        elif bucket and not dimension:
            self.add_error("bucket", f"bucket {bucket!r} needs a dimension")
        data["dimension"], data["bucket"] = dimension, bucket if dimension else ""
        return data


class ExplorerForm(SliceForm):
    """The explorer's GET parameters; every state of it is a shareable URL."""

    failed = forms.BooleanField(required=False)
    q = forms.CharField(required=False, max_length=200, label="Search")
    page = forms.IntegerField(required=False, min_value=1)

    def query(self) -> explorer_selectors.ExplorerQuery:
        data = self.cleaned_data
        return explorer_selectors.ExplorerQuery(
            dimension=data["dimension"], bucket=data["bucket"], failed=bool(data["failed"]),
            search=data["q"].strip(), page=data["page"] or 1)

    def querystring(self, **changes) -> str:
        """The filters as a query string (empty values left out), with `changes` applied."""
        data = {"dimension": self.cleaned_data["dimension"],
                "bucket": self.cleaned_data["bucket"],
                "failed": "on" if self.cleaned_data["failed"] else "",
                "q": self.cleaned_data["q"].strip(), **changes}
        pairs = [(k, v) for k, v in data.items() if v not in ("", None, 1)]
        return f"?{urlencode(pairs)}" if pairs else ""


class CompareItemsForm(SliceForm):
    """The items where two models differ: `models=A&models=B` (or `models=A,B`), a slice, and
    optionally only those one of them wins (`winner`) on the item's pass or its score (`by`,
    as the compare page counts wins)."""

    models = forms.CharField(max_length=100)
    by = forms.ChoiceField(required=False, choices=[("passed", "passed"), ("score", "score")])
    winner = forms.ChoiceField(required=False, choices=[("a", "A"), ("b", "B")])
    page = forms.IntegerField(required=False, min_value=1)

    field_order = ("models", "dimension", "bucket", "by", "winner", "page")

    def __init__(self, data, *, board: dict, **slices):
        if hasattr(data, "getlist"):
            data = {**data.dict(), "models": ",".join(data.getlist("models"))}
        super().__init__(data, **slices)
        self.board = board

    def clean_models(self) -> str:
        parts = [p.strip() for p in self.cleaned_data["models"].split(",") if p.strip()]
        if len(parts) != 2 or not all(re.fullmatch(MODEL_ID, p) for p in parts):
            raise forms.ValidationError("give exactly two model ids, A and B")
        ids = [int(p) for p in parts]
        if ids[0] == ids[1]:
            raise forms.ValidationError("A and B must be two different models")
        absent = [i for i in ids if i not in self.board]
        if absent:
            raise forms.ValidationError([f"model {i} has no public scored submission on this "
                                         f"board" for i in absent])
        return ",".join(map(str, ids))

    def clean(self):
        data = super().clean()
        if bool(data.get("by")) != bool(data.get("winner")):
            self.add_error("winner", "give both `by` and `winner`, or neither")
        data["page"] = data.get("page") or 1
        return data

    def submissions(self) -> list:
        return [self.board[int(i)] for i in self.cleaned_data["models"].split(",")]


class ItemPageForm(SliceForm):
    """An item's page: the slice its previous and next items are taken from, and the page
    of systems."""

    page = forms.IntegerField(required=False, min_value=1)
