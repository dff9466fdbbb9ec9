"""The real LiteLLM proxy for the guardrail tests: its CLI, a config that loads Proctor's
guardrail, the demo MCP server (stdio, started by LiteLLM) and Proctor's vendor stub.

LiteLLM is an optional extra (`make litellm`). Without it these tests skip with that command;
with `PROCTOR_REQUIRE_LITELLM=1` (set by `.ci/run`) they fail instead, so CI can never go green
by quietly not running them.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from tests.integration import _node

ROOT = Path(__file__).resolve().parents[3]
POLICY = Path(__file__).with_name("policy.yaml")
INSTALL_COMMAND = "make litellm"
REQUIRE_ENV = "PROCTOR_REQUIRE_LITELLM"
STARTUP_SECONDS = 240.0  # the proxy imports ~1,800 modules; this machine is shared and slow
TOOL_FACTS = {
    "mcp.demo.echo": {
        "action_type": "read",
        "risk": "low",
        "reversible": True,
        "external_side_effect": False,
    },
    "mcp.demo.big": {
        "action_type": "write",
        "risk": "low",
        "reversible": True,
        "external_side_effect": False,
    },
    "mcp.demo.wipe": {
        "action_type": "destructive",
        "risk": "high",
        "reversible": False,
        "external_side_effect": True,
    },
}


def require_litellm() -> None:
    """Skip (locally) or fail (CI) when the LiteLLM proxy is not installed."""
    if find_spec("litellm") is not None and find_spec("fastapi") is not None:
        return
    why = "the LiteLLM proxy is not installed (the optional `litellm` extra)"
    if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
        pytest.fail(f"{why} ({REQUIRE_ENV} is set, so this is a failure, not a skip)")
    pytest.skip(f"{why}; install it with `{INSTALL_COMMAND}` from the repository root")


def proxy_config(
    workdir: Path,
    *,
    stub_url: str,
    state_dir: Path,
    store_url: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """A LiteLLM config loading the guardrail; the demo server logs each call it receives."""
    params: dict[str, Any] = {
        "guardrail": "governance.litellm.ProctorGuardrail",
        "mode": ["pre_mcp_call", "post_call"],
        "default_on": True,
        "proctor_policy": str(POLICY),
        "proctor_state_dir": str(state_dir),
        "proctor_tools": TOOL_FACTS,
        "proctor_outcome_timeout": 60,
    }
    if store_url is not None:
        params["proctor_store_url"] = store_url
    params.update(extra or {})
    config = {
        "model_list": [
            {
                "model_name": "stub",
                "litellm_params": {
                    "model": "openai/proctor-stub-1",
                    "api_base": stub_url,
                    "api_key": "sk-stub",
                },
            },
            {  # `/v1/responses` answered through the stub's chat completions
                "model_name": "stub-responses",
                "litellm_params": {
                    "model": "openai/proctor-stub-1",
                    "api_base": stub_url,
                    "api_key": "sk-stub",
                    "use_chat_completions_api": True,
                },
            },
        ],
        # `/v1/messages` answered through the stub's chat completions, not /v1/responses
        "litellm_settings": {"use_chat_completions_url_for_anthropic_messages": True},
        # LiteLLM's own response-id encryption needs PyNaCl, which its proxy extra lacks
        "general_settings": {"disable_responses_id_security": True},
        "mcp_servers": {
            "demo": {
                "transport": "stdio",
                "command": sys.executable,
                "args": ["-m", "stubs.mcp_demo", "--call-log", str(workdir / "calls.jsonl")],
            }
        },
        "guardrails": [{"guardrail_name": "proctor", "litellm_params": params}],
    }
    path = workdir / "litellm.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def proxy_command(config: Path, port: int) -> list[str]:
    script = Path(sys.executable).with_name("litellm")
    return [str(script), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]


def proxy_env(master_key: str) -> dict[str, str]:
    """No PROCTOR_* from the caller; LiteLLM kept off the network (no cost map download)."""
    return _node.clean_env(
        LITELLM_MASTER_KEY=master_key,
        LITELLM_ENABLE_MCP_STDIO="true",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        PYTHONPATH=str(ROOT),
    )


@dataclass
class Proxy:
    """A running proxy: where it listens, its key, and what the demo server received."""

    url: str
    key: str
    workdir: Path
    state_dir: Path
    process: subprocess.Popen[bytes]
    log: Path
    _server_id: str | None = field(default=None, repr=False)

    def _client(self) -> httpx2.Client:
        return httpx2.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.key}"}, timeout=120.0
        )

    def server_id(self) -> str:
        if self._server_id is None:
            with self._client() as client:
                listed = client.get("/mcp-rest/tools/list")
            listed.raise_for_status()
            self._server_id = str(listed.json()["tools"][0]["mcp_info"]["server_id"])
        return self._server_id

    def call_rest(
        self, tool: str, arguments: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> httpx2.Response:
        """POST /mcp-rest/tools/call: LiteLLM's REST route to an MCP tool."""
        body = {"server_id": self.server_id(), "name": tool, "arguments": dict(arguments)}
        with self._client() as client:
            return client.post("/mcp-rest/tools/call", json=body, headers=dict(headers or {}))

    def call_mcp(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """`tools/call` over LiteLLM's own MCP endpoint (/mcp, Streamable HTTP): the result."""
        headers = {"accept": "application/json, text/event-stream"}
        with self._client() as client:
            init = client.post(
                "/mcp/",
                headers=headers,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "proctor-test", "version": "1"},
                    },
                },
            )
            init.raise_for_status()
            session = {
                **headers,
                "mcp-session-id": init.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-06-18",
            }
            client.post(
                "/mcp/",
                headers=session,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            )
            reply = client.post(
                "/mcp/",
                headers=session,
                json={
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": f"demo-{tool}", "arguments": dict(arguments)},
                },
            )
        reply.raise_for_status()
        return dict(_json_rpc(reply.text)["result"])

    def chat(self, text: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
        with self._client() as client:
            reply = client.post(
                "/chat/completions",
                json={"model": "stub", "messages": [{"role": "user", "content": text}],
                      "tools": tools},
            )
        reply.raise_for_status()
        return dict(reply.json())

    def chat_stream(self, text: str, tools: list[dict[str, Any]]) -> tuple[str, list[str]]:
        """A streamed completion, reassembled: its text and the names of its tool calls."""
        body = {
            "model": "stub",
            "messages": [{"role": "user", "content": text}],
            "tools": tools,
            "stream": True,
        }
        content: list[str] = []
        names: dict[int, str] = {}
        with self._client() as client:
            with client.stream("POST", "/chat/completions", json=body) as reply:
                reply.raise_for_status()
                for line in reply.iter_lines():
                    if not line.startswith("data:") or line.strip() == "data: [DONE]":
                        continue
                    chunk = json.loads(line[len("data:") :])
                    for choice in chunk.get("choices", []):
                        delta = choice.get("delta") or {}
                        content.append(delta.get("content") or "")
                        for call in delta.get("tool_calls") or []:
                            name = (call.get("function") or {}).get("name") or ""
                            names[call["index"]] = names.get(call["index"], "") + name
        return "".join(content), [names[i] for i in sorted(names)]

    def messages(self, text: str, tools: list[dict[str, Any]], *, stream: bool = False) -> Any:
        """An Anthropic `/v1/messages` request: the reply's JSON, or its SSE events' data."""
        body = {
            "model": "stub",
            "max_tokens": 256,
            "messages": [{"role": "user", "content": text}],
            "tools": tools,
            "stream": stream,
        }
        with self._client() as client:
            reply = client.post("/v1/messages", json=body)
        reply.raise_for_status()
        if not stream:
            return reply.json()
        return [
            json.loads(line[len("data:") :])
            for line in reply.text.splitlines()
            if line.startswith("data:") and line.strip() != "data: [DONE]"
        ]

    def responses(self, text: str, tools: list[dict[str, Any]], *, stream: bool = False) -> Any:
        """An OpenAI `/v1/responses` request: the reply's JSON, or its SSE events' data."""
        body = {"model": "stub-responses", "input": text, "tools": tools, "stream": stream}
        with self._client() as client:
            reply = client.post("/v1/responses", json=body)
        reply.raise_for_status()
        if not stream:
            return dict(reply.json())
        return [
            json.loads(line[len("data:") :])
            for line in reply.text.splitlines()
            if line.startswith("data:") and line.strip() != "data: [DONE]"
        ]

    def received(self) -> list[dict[str, Any]]:
        """Every call the demo MCP server received, in order."""
        path = self.workdir / "calls.jsonl"
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line]

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def _json_rpc(body: str) -> Mapping[str, Any]:
    """The JSON-RPC message in a JSON or SSE (`data: ...`) response body."""
    text = body.strip()
    if text.startswith("{"):
        return dict(json.loads(text))
    for line in text.splitlines():
        if line.startswith("data:"):
            return dict(json.loads(line[len("data:") :].strip()))
    raise AssertionError(f"no JSON-RPC message in {body[:200]!r}")


def _wait_until_healthy(proxy: Proxy, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with httpx2.Client(base_url=proxy.url, timeout=5.0) as client:
        while True:
            code = proxy.process.poll()
            if code is not None:
                pytest.fail(f"the LiteLLM proxy exited with {code}:\n{proxy.output()[-4000:]}")
            try:
                if client.get("/health/liveliness").status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the LiteLLM proxy did not come up in {timeout:g}s")
            try:
                proxy.process.wait(timeout=0.25)
            except subprocess.TimeoutExpired:
                continue


@contextmanager
def running_proxy(config: Path, workdir: Path, state_dir: Path) -> Iterator[Proxy]:
    """Start the proxy from `config`; stopped (and reaped) on exit."""
    key = f"sk-proctor-{secrets.token_hex(24)}"
    port = _node.free_port()
    log = workdir / "proxy.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            proxy_command(config, port),
            cwd=workdir,
            env=proxy_env(key),
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    proxy = Proxy(f"http://127.0.0.1:{port}", key, workdir, state_dir, process, log)
    try:
        _wait_until_healthy(proxy, STARTUP_SECONDS)
        yield proxy
    finally:
        _node.stop(process, grace=15.0)


def run_proxy_to_exit(config: Path, workdir: Path, timeout: float) -> tuple[int, str]:
    """Start the proxy and wait for it to stop by itself: its exit code and output."""
    key = f"sk-proctor-{secrets.token_hex(24)}"
    log = workdir / "proxy.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            proxy_command(config, _node.free_port()),
            cwd=workdir,
            env=proxy_env(key),
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _node.stop(process)
        pytest.fail(f"the proxy was expected to refuse to start, but ran for {timeout:g}s")
    return code, log.read_text(encoding="utf-8", errors="replace")


def proctor(*args: str) -> subprocess.CompletedProcess[str]:
    """The `proctor` CLI of this venv, as a reviewer runs it."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("proctor")), *args],
        capture_output=True,
        text=True,
        env=_node.clean_env(),
        timeout=120,
        check=False,
    )
