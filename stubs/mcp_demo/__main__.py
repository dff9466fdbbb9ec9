"""`python -m stubs.mcp_demo`: serve the demo tools over stdio."""

from __future__ import annotations

from stubs.mcp_demo._server import main

if __name__ == "__main__":
    main()
