"""Store contract tests take `backend`: each runs once per backend (SQLite file, memory)."""

from tests.store_backends import backend

__all__ = ["backend"]
