"""The read API's responses: leaderboard.api.views answers `Serializer(data).data` from these, and
the OpenAPI schema describes them, so what is sent and what is described are one definition.

A row's figures are named by its benchmark kind's metrics (IFR, CR, EMR for MMAE; the AIR-Bench
kinds' own): they are fields of their own, made per kind (`KindFiguresOut`). Values reach the
fields as the selectors hold them, already JSON's types, and are sent as they are: a figure
stays the float or the count it is, a date the ISO 8601 text the API has always written."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import SkipField

from scoring.kinds import KINDS, Kind, get_kind

_MISSING = object()


class Figure(serializers.FloatField):
    """A figure of a row (percent, a score, or a count), sent as the selectors hold it."""

    def to_representation(self, value):
        return value


class _End:
    """One end of a (low, high) pair: `end` 0 or 1."""

    def __init__(self, end: int, **kwargs):
        self.end = end
        super().__init__(allow_null=True, **kwargs)

    def to_representation(self, value):
        return value[self.end]


class FigureEnd(_End, Figure):
    pass


class RankEnd(_End, serializers.IntegerField):
    pass


class OptionalText(serializers.CharField):
    """A text that is null when blank."""

    def __init__(self, **kwargs):
        super().__init__(allow_null=True, **kwargs)

    def to_representation(self, value):
        return value or None


class IsoDateTime(serializers.DateTimeField):
    """`isoformat()` as it is: DRF's own field would write UTC's +00:00 as Z."""

    def to_representation(self, value):
        return value.isoformat()


def _bounds(key: str) -> dict[str, serializers.Field]:
    return {f"{key}_lo": FigureEnd(0, source=f"{key}_interval",
                                   help_text=f"low end of {key}'s interval, or null"),
            f"{key}_hi": FigureEnd(1, source=f"{key}_interval",
                                   help_text=f"high end of {key}'s interval, or null")}


def _figure(kind: Kind, key: str) -> Figure:
    definition = next(m.definition for m in (*kind.metrics, *kind.judge_figures)
                      if m.key == key)
    return Figure(allow_null=True, help_text=f"{kind.name}: {definition}")


class KindFiguresOut(serializers.Serializer):
    """A row holding its benchmark kind's figures (`figure_fields`) beside its declared fields,
    before the field `figures_before` (or after them all). The kind is the context's `kind`,
    else the row's own `kind` (a name); with neither (the schema) the row is described with
    every kind's figures, none of them required."""

    figures_before: str | None = None

    def figure_fields(self, kind: Kind) -> dict[str, serializers.Field]:
        """The kind's figure fields of this row (each subclass names which)."""
        raise NotImplementedError(f"{type(self).__name__} must name its figure fields")

    def get_fields(self):
        fields = super().get_fields()
        kind = self.context.get("kind")
        if kind is not None:
            figures = self.figure_fields(kind)
        else:
            figures, kinds = {}, {}
            for each in KINDS.values():
                for name, field in self.figure_fields(each).items():
                    figures.setdefault(name, field)
                    kinds[name] = kinds.get(name, 0) + 1
            for name, field in figures.items():
                field.required = kinds[name] == len(KINDS)  # a figure of every kind
        if self.figures_before is None:
            return {**fields, **figures}
        names = list(fields)
        at = names.index(self.figures_before)
        return {**{n: fields[n] for n in names[:at]}, **figures,
                **{n: fields[n] for n in names[at:]}}

    def to_representation(self, row):
        if "kind" in self.context:
            if not isinstance(row, Mapping):
                return super().to_representation(row)
            return self._represent(row)
        # Rows of several kinds (a model's submissions): one serializer per kind.
        name = row["kind"]
        if name not in self._per_kind:
            self._per_kind[name] = type(self)(context={**self.context, "kind": get_kind(name)})
        return self._per_kind[name].to_representation(row)

    @cached_property
    def _per_kind(self) -> dict[str, KindFiguresOut]:
        return {}

    @cached_property
    def _keys(self) -> list[tuple[str, str | None, serializers.Field]]:
        """(name, the row's key it reads or None, field) of each readable field."""
        return [(f.field_name, f.source_attrs[0] if len(f.source_attrs) == 1 else None, f)
                for f in self._readable_fields]

    def _represent(self, row: Mapping) -> dict:
        """Serializer.to_representation of a row dict, its keys read directly (1,000 board
        rows: 27-29 ms through DRF's get_attribute, one call per field, 10 ms so). A missing
        key, a callable value or a field of another source goes DRF's own way."""
        out = {}
        for name, key, field in self._keys:
            value = row.get(key, _MISSING) if key is not None else _MISSING
            if value is _MISSING or callable(value):
                try:
                    value = field.get_attribute(row)
                except SkipField:
                    continue
            out[name] = None if value is None else field.to_representation(value)
        return out


class BoardRowOut(KindFiguresOut):
    figures_before = "date"

    rank = serializers.IntegerField(help_text="shared by rows equal on the whole ranking key")
    rank_best = RankEnd(0, source="rank_range", help_text="rank range from the paired "
                        "bootstrap (null until a worker computed it)")
    rank_worst = RankEnd(1, source="rank_range")
    model = serializers.CharField()
    organisation = serializers.CharField()
    submitted_by = serializers.CharField(help_text="the username of the model's owner")
    verified = serializers.BooleanField(help_text="the owner logged in through GitHub or "
                                        "Hugging Face")
    submission = serializers.IntegerField()
    n = serializers.IntegerField(help_text="items counted")
    coverage = serializers.FloatField(help_text="share of the items with an output")
    open_weights = serializers.BooleanField()
    base_family = serializers.CharField(help_text="the base model family its author declared "
                                        "(\"\": not declared, \"other\": none of the list)")
    judge_family = serializers.BooleanField(help_text="built on the judge's own model family "
                                            "(a judge may favour it)")
    licence = serializers.CharField()
    judge = serializers.CharField(help_text="who judged: the judge simulator when it did")
    simulated = serializers.BooleanField()
    refused = serializers.IntegerField(allow_null=True, help_text="judge queries refused by "
                                       "the judge (HTTP 400), each counted as a wrong vote; "
                                       "null for published results")
    judge_config = serializers.CharField()
    date = IsoDateTime()
    attempts = serializers.IntegerField(help_text="submissions the model's author made to "
                                        "this benchmark and had scored, public and private, "
                                        "deleted ones included")
    flag = OptionalText(help_text="staff's public reason")
    after_deadline = serializers.BooleanField(
        help_text="received after its challenge phase's deadline: listed on this open "
        "board, never on the phase's official ranking (false off a challenge)")
    clipping_share = serializers.FloatField(
        allow_null=True, help_text="the share of its outputs that clip (over 0.1% of their "
        "samples at full scale; GET /api/submissions/<id>/signals/), null before they are "
        "measured or for a kind without audio outputs")

    class Meta:
        ref_name = "BoardRow"

    def figure_fields(self, kind):
        """The judge's own figures, then each metric with its interval's bounds."""
        fields = {m.key: _figure(kind, m.key) for m in kind.judge_figures}
        for key in kind.metric_keys:
            fields |= {key: _figure(kind, key), **_bounds(key)}
        return fields


class ReportedOut(KindFiguresOut):
    """A published result shown beside the ranking, never ranked."""

    model = serializers.CharField()
    note = serializers.CharField()
    scope = serializers.CharField(help_text="what the published figures cover")
    n_samples = serializers.IntegerField(allow_null=True)
    source = serializers.CharField(help_text="where they were published")

    def figure_fields(self, kind):
        return {key: _figure(kind, key) for key in kind.metric_keys}


class DiagnosticOut(KindFiguresOut):
    """A calibration baseline scored here (Identity returns each input unchanged, Noise white
    noise), shown on the board marked diagnostic, never ranked."""

    model = serializers.CharField(help_text="Identity, Noise, Silence, Reversed or Shuffled")
    diagnostic = serializers.SerializerMethodField(help_text="always true: not a submission")
    n = serializers.IntegerField(source="n_samples", allow_null=True)
    judge = serializers.CharField()
    judge_config = serializers.CharField()
    simulated = serializers.BooleanField()

    def figure_fields(self, kind):
        return {key: _figure(kind, key) for key in kind.metric_keys}

    def get_diagnostic(self, row) -> bool:
        return True


class BoardOut(serializers.Serializer):
    """A page of a board: `benchmark`, `kind` and `query` (leaderboard.pages.forms.BoardQuery) say
    which board and slice; `rows` and `reported` are the selectors' rows (the context's `kind`
    names their figures)."""

    benchmark = serializers.CharField(source="benchmark.slug")
    version = serializers.IntegerField(source="benchmark.version")
    kind = serializers.CharField(source="kind.name")
    metrics = serializers.ListField(child=serializers.CharField(), source="kind.metric_keys",
                                    help_text="the keys of each row's figures")
    dimension = serializers.CharField(source="query.dimension")
    bucket = OptionalText(source="query.bucket")
    count = serializers.IntegerField(help_text="rows over all pages")
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    rows = BoardRowOut(many=True, help_text="this page's rows")
    reported = ReportedOut(many=True, help_text="published results shown beside the ranking")
    diagnostic = DiagnosticOut(many=True, help_text="the calibration baselines scored here, "
                               "shown on the board marked diagnostic, never ranked")
    separable = serializers.JSONField(
        allow_null=True, help_text="what the slice's paired bootstrap can tell apart: "
        '{"items": n, "metrics": {metric: {"difference", "pairs"}}}, where difference is the '
        "median half-width of the 95% interval of a paired difference between neighbouring "
        "rows; null while a worker computes it")


class BenchmarkOut(serializers.Serializer):
    slug = serializers.CharField()
    kind = serializers.CharField()
    version = serializers.IntegerField()
    title = serializers.CharField()
    samples = serializers.IntegerField(source="n_items")
    criteria = serializers.IntegerField(source="n_criteria")
    synthetic = serializers.BooleanField()
    sha256 = serializers.CharField()
    board = serializers.SerializerMethodField()

    @extend_schema_field(serializers.URLField())
    def get_board(self, benchmark) -> str:
        return self.context["request"].build_absolute_uri(
            f"/api/leaderboards/{benchmark.slug}/")


class IntervalFiguresOut(KindFiguresOut):
    """A row with each metric, `n`, then each metric's interval's bounds."""

    def figure_fields(self, kind):
        fields = {key: _figure(kind, key) for key in kind.metric_keys}
        fields["n"] = serializers.IntegerField(allow_null=True, help_text="items counted")
        for key in kind.metric_keys:
            fields |= _bounds(key)
        return fields


class ModelSubmissionOut(IntervalFiguresOut):
    """One of a model's submissions with its overall figures (the row's `kind` names them)."""

    id = serializers.IntegerField(source="submission")
    benchmark = serializers.CharField(source="slug")
    version = serializers.IntegerField()
    public = serializers.BooleanField()
    date = IsoDateTime()
    hidden = serializers.BooleanField()
    flag = OptionalText()
    coverage = serializers.FloatField()
    judge = serializers.CharField()
    simulated = serializers.BooleanField()


class ModelOut(serializers.Serializer):
    """A model, with the submissions its viewer may see (`shown_submissions`: the selectors'
    rows)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    organisation = serializers.CharField()
    link = serializers.CharField()
    parameters = serializers.CharField()
    licence = serializers.CharField()
    open_weights = serializers.BooleanField()
    base_family = serializers.CharField()
    description = serializers.CharField()
    submissions = ModelSubmissionOut(many=True, source="shown_submissions")


class SliceOut(IntervalFiguresOut):
    """One slice of a run with its figures."""

    dimension = serializers.CharField()
    bucket = OptionalText()


class SubmissionSlicesOut(serializers.Serializer):
    """A submission's slices under its current run (`shown_slices`: the selectors' rows; the
    context's `kind` names their figures)."""

    id = serializers.IntegerField()
    model = serializers.CharField(source="model.name")
    model_id = serializers.IntegerField()
    benchmark = serializers.CharField(source="benchmark.slug")
    version = serializers.IntegerField(source="benchmark.version")
    judge = serializers.CharField(source="current_run.judge_name")
    simulated = serializers.BooleanField(source="current_run.simulated")
    coverage = serializers.FloatField()
    slices = SliceOut(many=True, source="shown_slices")
