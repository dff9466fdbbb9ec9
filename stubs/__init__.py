"""Runnable stand-ins for the outside world: the OpenAI-compatible vendor stub, demo MCP servers."""
