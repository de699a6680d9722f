"""The read API's responses, as the OpenAPI schema describes them. A board's figures are named
by its kind's metrics (IFR, CR, EMR for MMAE; the AIR-Bench kinds' own), so a row holds them
as further keys beside the fields below."""

from rest_framework import serializers


class BoardRowOut(serializers.Serializer):
    rank = serializers.IntegerField(help_text="shared by rows equal on the whole ranking key")
    rank_best = serializers.IntegerField(allow_null=True, help_text="rank range from the "
                                         "paired bootstrap (null until a worker computed it)")
    rank_worst = serializers.IntegerField(allow_null=True)
    model = serializers.CharField()
    organisation = serializers.CharField()
    submitted_by = serializers.CharField(help_text="the username of the model's owner")
    verified = serializers.BooleanField(help_text="the owner logged in through GitHub or "
                                        "Hugging Face")
    submission = serializers.IntegerField()
    n = serializers.IntegerField(help_text="items counted")
    coverage = serializers.FloatField(help_text="share of the items with an output")
    open_weights = serializers.BooleanField()
    licence = serializers.CharField()
    judge = serializers.CharField(help_text="who judged: the judge simulator when it did")
    simulated = serializers.BooleanField()
    judge_config = serializers.CharField()
    refused = serializers.IntegerField(allow_null=True, help_text="judge queries refused by "
                                       "the judge (HTTP 400), each counted as a wrong vote; "
                                       "null for published results")
    date = serializers.DateTimeField()
    flag = serializers.CharField(allow_null=True, help_text="staff's public reason")

    class Meta:
        ref_name = "BoardRow"


class BoardOut(serializers.Serializer):
    benchmark = serializers.CharField()
    version = serializers.IntegerField()
    kind = serializers.CharField()
    metrics = serializers.ListField(child=serializers.CharField(),
                                    help_text="the keys of each row's figures, in percent")
    dimension = serializers.CharField()
    bucket = serializers.CharField(allow_null=True)
    count = serializers.IntegerField(help_text="rows over all pages")
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    rows = BoardRowOut(many=True, help_text="this page's rows; each also holds its figures "
                                            "under the metric keys, with _lo and _hi")
    reported = serializers.ListField(child=serializers.DictField(),
                                     help_text="published results shown beside the ranking")


class BenchmarkOut(serializers.Serializer):
    slug = serializers.CharField()
    kind = serializers.CharField()
    version = serializers.IntegerField()
    title = serializers.CharField()
    samples = serializers.IntegerField()
    criteria = serializers.IntegerField()
    synthetic = serializers.BooleanField()
    sha256 = serializers.CharField()
    board = serializers.URLField()


class FiguresOut(serializers.Serializer):
    n = serializers.IntegerField(required=False, help_text="items counted")


class ModelSubmissionOut(FiguresOut):
    id = serializers.IntegerField()
    benchmark = serializers.CharField()
    version = serializers.IntegerField()
    public = serializers.BooleanField()
    date = serializers.DateTimeField()
    hidden = serializers.BooleanField()
    flag = serializers.CharField(allow_null=True)
    coverage = serializers.FloatField()
    judge = serializers.CharField()
    simulated = serializers.BooleanField()


class ModelOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    organisation = serializers.CharField()
    link = serializers.CharField()
    parameters = serializers.CharField()
    licence = serializers.CharField()
    open_weights = serializers.BooleanField()
    description = serializers.CharField()
    submissions = ModelSubmissionOut(many=True, help_text="overall figures under the metric "
                                                          "keys, with _lo and _hi")


class SliceOut(FiguresOut):
    dimension = serializers.CharField()
    bucket = serializers.CharField(allow_null=True)


class SubmissionSlicesOut(serializers.Serializer):
    id = serializers.IntegerField()
    model = serializers.CharField()
    model_id = serializers.IntegerField()
    benchmark = serializers.CharField()
    version = serializers.IntegerField()
    judge = serializers.CharField()
    simulated = serializers.BooleanField()
    coverage = serializers.FloatField()
    slices = SliceOut(many=True, help_text="each slice's figures under the metric keys, with "
                                           "_lo and _hi")
