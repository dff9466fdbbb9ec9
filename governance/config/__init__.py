"""Operator-written files read safely: capped UTF-8 text, YAML and JSON with line numbers,
validation errors as `file:line: problem (fix)`, committed JSON Schemas.
"""

from __future__ import annotations

from governance.config._json_lines import JsonDocument, load_json
from governance.config._problems import did_you_mean, first_and_rest, pydantic_message
from governance.config._schema_files import render_json, schema_document, write_atomic
from governance.config._text import decode_text, read_capped
from governance.config._yaml_lines import Loc, data_loc, format_loc, load_yaml_with_lines

__all__ = [
    "JsonDocument",
    "Loc",
    "data_loc",
    "decode_text",
    "did_you_mean",
    "first_and_rest",
    "format_loc",
    "load_json",
    "load_yaml_with_lines",
    "pydantic_message",
    "read_capped",
    "render_json",
    "schema_document",
    "write_atomic",
]
