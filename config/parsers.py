"""The API's JSON request body parser (REST_FRAMEWORK's DEFAULT_PARSER_CLASSES)."""

from rest_framework import parsers
from rest_framework.exceptions import ParseError
from rest_framework.utils.json import strict_constant

from config import jsontext


class JSONParser(parsers.JSONParser):
    """DRF's parser, reading through config.jsontext: a body nested too deeply is a 400 like
    any other malformed one, where DRF's own lets the json module's RecursionError through as
    a 500."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = parsers.get_encoding(parser_context or {})
        try:
            return jsontext.loads(stream.read().decode(encoding),
                                  parse_constant=strict_constant if self.strict else None)
        except ValueError as exc:  # also UnicodeDecodeError
            raise ParseError(f"JSON parse error - {exc}") from None
