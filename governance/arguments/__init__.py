"""A call's arguments in the one form that is judged and executed: plain-JSON snapshot,
canonical paths, local-only JSON Schemas.
"""

from __future__ import annotations

from governance.arguments._paths import PathRefused, canonical_path
from governance.arguments._schema_checks import SchemaChecks, schema_checks
from governance.arguments._schemas import SchemaRefused, local_validator
from governance.arguments._snapshot import ArgumentRefused, PreparedArguments, prepare_arguments
from governance.arguments._urls import UrlRefused, parse_http_url

__all__ = [
    "ArgumentRefused",
    "PathRefused",
    "PreparedArguments",
    "SchemaChecks",
    "SchemaRefused",
    "UrlRefused",
    "canonical_path",
    "local_validator",
    "parse_http_url",
    "prepare_arguments",
    "schema_checks",
]
