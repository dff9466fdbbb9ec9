"""Store contract tests take `backend`: each runs once per backend (SQLite file, memory,
PostgreSQL)."""

from tests.store_backends import backend, migrated_template

__all__ = ["backend", "migrated_template"]
