"""The OpenAPI schema at /api/schema/, made once per process. It follows from the code alone
(every operation is listed for everyone: SERVE_PUBLIC), so a process keeps the schemas it
makes until it ends with the code that made them. Made on each request it cost 0.19-0.36 s of
CPU (measured 2026-12-06 with RequestFactory, after the first), which any visitor could ask for
as often as they liked.

What a visitor may vary is checked before anything is kept: `?version=` must be one the API
has (REST framework's ALLOWED_VERSIONS; it has none, so any is refused) and `?lang=` a language
Django knows (LANGUAGES), each kept under the language it resolves to; anything else is a 400
naming the parameter. At most KEPT schemas are kept (about 0.85 MB each), the least recently
served dropped first, so no sequence of queries grows a process without bound. A lock makes
each schema once: drf-spectacular's generator is not safe to run twice at once in a process."""

import threading
from collections import OrderedDict

from django.utils import translation
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SCHEMA_KWARGS, SpectacularAPIView
from rest_framework.exceptions import ValidationError
from rest_framework.settings import api_settings

KEPT = 8

_made: OrderedDict[tuple, dict] = OrderedDict()
_lock = threading.Lock()


def _language(request) -> str:
    """The language the schema is written in: `?lang=`'s supported variant, or the default."""
    asked = request.GET.get("lang")
    if not asked:
        return translation.get_language()
    try:
        return translation.get_supported_language_variant(asked)
    except LookupError:
        raise ValidationError({"lang": [f"unknown language {asked[:20]!r}"]}) from None


def _version(request) -> str | None:
    asked = request.GET.get("version")
    if asked is None or asked in (api_settings.ALLOWED_VERSIONS or ()):
        return asked
    raise ValidationError({"version": [f"this API has no version {asked[:20]!r}"]})


def kept(key: tuple, make) -> dict:
    """The schema kept under `key`, made by `make()` if it is not (once, under the lock)."""
    with _lock:
        if key in _made:
            _made.move_to_end(key)
            return _made[key]
        schema = _made[key] = make()
        while len(_made) > KEPT:
            _made.popitem(last=False)
        return schema


def forget() -> None:
    """Drop every kept schema (tests)."""
    with _lock:
        _made.clear()


class KeptSchemaGenerator(SchemaGenerator):
    """drf-spectacular's generator, keeping each schema it makes under its version, language
    and audience."""

    def get_schema(self, request=None, public=False):
        def make():
            return super(KeptSchemaGenerator, self).get_schema(request=request, public=public)

        # drf-spectacular's view turns on `?lang=` as asked (en-GB): kept under the variant
        # the site has (en), which is the one its text is written in.
        language = translation.get_supported_language_variant(translation.get_language())
        return kept((self.api_version, language, public), make)


class SchemaView(SpectacularAPIView):
    generator_class = KeptSchemaGenerator

    @extend_schema(**SCHEMA_KWARGS)
    def get(self, request, *args, **kwargs):
        # Both checked before drf-spectacular's own view makes (or finds) the schema.
        self.api_version = self.api_version or request.version or _version(request)
        with translation.override(_language(request)):
            return super().get(request, *args, **kwargs)
