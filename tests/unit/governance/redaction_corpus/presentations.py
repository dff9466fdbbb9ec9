"""Every way a sink meets a secret, and the measure of what survives redaction.

A sink is a public redaction entry point as its callers use it: `redact` on a tool call's
arguments (the audit chain and trace spans), `redact_text` on a tool's output, and `redact_text`
on an error message (an exception's text or repr, which quotes and escapes what it holds).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from governance.screening._redaction import redact, redact_text

CORPUS = Path(__file__).resolve().parent / "corpus.json"
WINDOW = 12


@dataclass(frozen=True, slots=True)
class Secret:
    kind: str
    identifies: str  # "self" or "context"
    env: str
    value: str
    secret: str

    @property
    def label(self) -> str:
        """How prose names it: `TWILIO_AUTH_TOKEN` -> `Twilio auth token`."""
        return self.env.replace("_", " ").lower().capitalize()


@dataclass(frozen=True, slots=True)
class Lookalike:
    category: str
    text: str


def load(data: dict[str, Any] | None = None) -> tuple[list[Secret], list[Lookalike]]:
    """The committed corpus, or `data` built in memory (a held-out seed)."""
    if data is None:
        data = json.loads(CORPUS.read_text(encoding="utf-8"))
    return (
        [Secret(**s) for s in data["secrets"]],
        [Lookalike(**item) for item in data["lookalikes"]],
    )


def texts(s: Secret) -> Iterator[tuple[str, str]]:
    """(shape, text) for each way free text carries `s`."""
    v, env = s.value, s.env
    yield "key_value_line", f"export {env}={v}"
    yield "env_dump", f"HOME=/root\n{env}={v}\nLANG=C.UTF-8\n"
    yield "yaml_line", f"config:\n  {env.lower()}: {v}\n  retries: 3"
    yield "quoted_assignment", f'{env.lower()}="{v}"'
    yield "json_text", json.dumps({env.lower(): v, "region": "eu-west-1"})
    yield "query_string", f"GET https://api.example.com/v1/items?{env.lower()}={v}&page=2"
    yield "sentence_named", f"For the record, the {s.label} is {v} until Friday."
    yield "cli_flag", f"deploy --{env.lower().replace('_', '-')} {v} --region eu"
    if s.identifies == "self":
        yield "bare", v
        yield "sentence", f"Deploy failed because {v} was rejected by the server."
        yield "glued_dash", f"request id-{v} failed"
        yield "parenthesised", f"the old credential ({v}) still works"
        yield "glued_key_quote", f'key="{v}"'
        yield "innocuous_key_line", f"value: {v}"
        yield "url_path", f"see https://proxy.example.com/forward?target={v}&x=1"
        yield "multiline", f'Response body:\n{{\n  "data": "{v}"\n}}\nstatus: 200'
        yield "markdown", f"| name | value |\n|---|---|\n| prod | `{v}` |"
        yield "end_of_sentence", f"Use {v}."
        yield "own_line", f"output:\n{v}\ndone"
        yield "percent_encoded", f"POST /hook body=%7B%22value%22%3A%22{v}%22%7D"
        yield "csv_row", f"prod,{v},2026-01-01"
        yield "html_attribute", f'<input type="hidden" value="{v}">'
        yield "python_repr", repr({"cfg": v, "n": 1})
        yield "log_line", f"2026-12-01T12:00:00Z INFO\tclient={v}\tstatus=ok"


def arguments(s: Secret) -> Iterator[tuple[str, dict[str, Any]]]:
    """(shape, arguments) for each way a tool call's JSON arguments carry `s`."""
    for shape, text in texts(s):
        yield f"text:{shape}", {"query": text}
    yield "secret_key", {"config": {s.env.lower(): s.value}}
    yield "secret_key_env", {"env": {s.env: s.value, "HOME": "/root"}}
    if s.identifies == "self":
        yield "innocuous_key", {"value": s.value}
        yield "innocuous_nested", {"items": [{"note": s.value, "n": 1}]}
        yield "header_bearer", {"headers": {"X-Forwarded": f"Bearer {s.value}"}}


def errors(s: Secret) -> Iterator[tuple[str, str]]:
    """(shape, message) for each way an error string carries `s`."""
    for shape, text in texts(s):
        exc = RuntimeError(f"call failed: {text}")
        yield f"str:{shape}", str(exc)
        yield f"repr:{shape}", f"ToolError: {exc!r}"


def survives(secret: str, output: str) -> bool:
    """True when any WINDOW-long piece of `secret` is still readable in `output`."""
    size = min(WINDOW, len(secret))
    return any(secret[i : i + size] in output for i in range(len(secret) - size + 1))


def _args_out(args: dict[str, Any]) -> str:
    return json.dumps(redact(args), ensure_ascii=False)


# sink name -> (cases of a secret, turn a case into output text)
SINKS: dict[str, Callable[[Secret], Iterator[tuple[str, str]]]] = {
    "arguments": lambda s: ((shape, _args_out(a)) for shape, a in arguments(s)),
    "tool_output": lambda s: ((shape, redact_text(t)) for shape, t in texts(s)),
    "error_text": lambda s: ((shape, redact_text(m)) for shape, m in errors(s)),
}


@dataclass(frozen=True, slots=True)
class Tally:
    masked: int
    total: int
    missed: tuple[str, ...]

    @property
    def rate(self) -> float:
        return self.masked / self.total if self.total else 1.0


def masked_tally(sink: str, secrets: list[Secret]) -> Tally:
    masked = total = 0
    missed: list[str] = []
    for s in secrets:
        for shape, output in SINKS[sink](s):
            total += 1
            if survives(s.secret, output):
                missed.append(f"{s.kind}/{shape}: {output[:120]!r}")
            else:
                masked += 1
    return Tally(masked, total, tuple(missed))


def false_redactions(sink: str, lookalikes: list[Lookalike]) -> Tally:
    """How many look-alikes come back changed (`masked` counts the changed ones)."""
    changed: list[str] = []
    for item in lookalikes:
        t = item.text
        if sink == "arguments":
            altered = redact({"query": t, "items": [t]}) != {"query": t, "items": [t]}
        elif sink == "tool_output":
            altered = redact_text(t) != t
        else:
            message = f"ToolError: {RuntimeError(f'call failed: {t}')!r}"
            altered = redact_text(message) != message
        if altered:
            changed.append(f"{item.category}: {t!r}")
    return Tally(len(changed), len(lookalikes), tuple(changed))
