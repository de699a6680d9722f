"""The exports' bodies as the OpenAPI schema describes them (exports.views)."""

from rest_framework import serializers


class SigningKeyOut(serializers.Serializer):
    key_id = serializers.CharField()
    algorithm = serializers.CharField(help_text="Ed25519")
    public_key = serializers.CharField(help_text="base64 of the key's 32 raw bytes")
    created = serializers.CharField(help_text="ISO 8601")
    retired = serializers.CharField(allow_null=True, help_text="when a newer key took over "
                                    "(it still verifies what it signed); null for the current")


class SigningKeysOut(serializers.Serializer):
    algorithm = serializers.CharField()
    signed = serializers.CharField(help_text="what a signature is made over")
    keys = SigningKeyOut(many=True, help_text="every key that signed here, newest last")


class EeeRecordOut(serializers.Serializer):
    """An Every Eval Ever record (schema 0.3.0), whose parts that schema describes."""

    schema_version = serializers.CharField()
    evaluation_id = serializers.CharField(help_text="<slug>/<model id>/<board state time>")
    evaluation_timestamp = serializers.CharField(required=False)
    retrieved_timestamp = serializers.CharField(help_text="the board state's time, Unix epoch")
    source_metadata = serializers.JSONField(help_text="this board; its additional_details hold "
                                            "the board version, links and the signature")
    eval_library = serializers.JSONField()
    model_info = serializers.JSONField()
    evaluation_results = serializers.ListField(child=serializers.JSONField(), help_text=(
        "one per figure and slice: score, 95% interval, items, and the judge (llm_scoring) "
        "on each overall result"))
