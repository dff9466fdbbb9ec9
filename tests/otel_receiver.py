"""A real OTLP/HTTP receiver for tests and benchmarks, in a process of its own.

`python tests/otel_receiver.py --out FILE [--mode ok|500|503|hang]` binds 127.0.0.1 on a free
port, prints the port on its first stdout line, and decodes every `POST /v1/traces` and
`POST /v1/metrics` body (protobuf, gzip or deflate Content-Encoding honoured) with
opentelemetry-proto into one JSON line of FILE per span or metric point, written before the
answer goes back: once an exporter has its 200, what it sent is on disk. `--mode 500|503`
answers every request with that status (decoding nothing, noting a `refused` line); `hang`
never answers.

In tests: `with OtlpReceiver(tmp_path) as receiver: ... receiver.spans(), receiver.metrics()`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


class OtlpReceiver:
    """The receiver process, started on entry and stopped on exit (or by `stop()`)."""

    def __init__(self, directory: Path, *, mode: str = "ok") -> None:
        # A name of its own: two receivers in one directory (one after the other, where `id()`
        # can repeat) must never read each other's spans.
        handle, name = tempfile.mkstemp(
            prefix=f"otlp-received-{mode}-", suffix=".jsonl", dir=directory
        )
        os.close(handle)
        self.out = Path(name)
        self.mode = mode
        self._process: subprocess.Popen[str] | None = None
        self.port = 0

    def __enter__(self) -> OtlpReceiver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, __file__, "--out", str(self.out), "--mode", self.mode],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"the OTLP receiver did not start (said {line!r})")
        self.port = int(line)

    @property
    def endpoint(self) -> str:
        """The base URL, as PROCTOR_OTEL_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT take it."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()

    def records(self) -> list[dict[str, Any]]:
        if not self.out.exists():
            return []
        lines = self.out.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def spans(self) -> list[dict[str, Any]]:
        return [r for r in self.records() if r["signal"] == "span"]

    def metrics(self) -> list[dict[str, Any]]:
        return [r for r in self.records() if r["signal"] == "metric"]

    def requests(self) -> list[dict[str, Any]]:
        return [r for r in self.records() if r["signal"] == "request"]

    def refused(self) -> list[dict[str, Any]]:
        """The requests a `500`/`503` receiver turned away."""
        return [r for r in self.records() if r["signal"] == "refused"]

    def wait_for(self, ready: Callable[[OtlpReceiver], bool], timeout: float = 10.0) -> bool:
        """Whether `ready(self)` came true within `timeout` (checked every 20 ms)."""
        deadline = time.monotonic() + timeout
        while not ready(self):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def raw_text(self) -> str:
        """Everything received, as written: for asserting that something is absent."""
        return self.out.read_text(encoding="utf-8") if self.out.exists() else ""


# -- the receiver process -----------------------------------------------------------------------


def _value(any_value: Any) -> Any:
    which = any_value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in any_value.kvlist_value.values}
    if which == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, which)


def _attributes(key_values: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in key_values}


def _spans(body: bytes) -> Iterator[dict[str, Any]]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield {
                    "signal": "span",
                    "resource": resource,
                    "scope": scope_spans.scope.name,
                    "name": span.name,
                    "kind": _KINDS.get(span.kind, str(span.kind)),
                    "trace_id": span.trace_id.hex(),
                    "span_id": span.span_id.hex(),
                    "parent_span_id": span.parent_span_id.hex(),
                    "start_ns": span.start_time_unix_nano,
                    "end_ns": span.end_time_unix_nano,
                    "attributes": _attributes(span.attributes),
                    "events": [
                        {"name": e.name, "attributes": _attributes(e.attributes)}
                        for e in span.events
                    ],
                    "status": _STATUS.get(span.status.code, str(span.status.code)),
                    "status_message": span.status.message,
                }


def _points(metric: Any) -> Iterator[dict[str, Any]]:
    kind = metric.WhichOneof("data")
    data = getattr(metric, kind)
    for point in data.data_points:
        shown: dict[str, Any] = {"kind": kind, "attributes": _attributes(point.attributes)}
        if kind == "histogram":
            shown.update(count=point.count, sum=point.sum, bucket_counts=list(point.bucket_counts))
        else:
            shown["value"] = point.as_int if point.WhichOneof("value") == "as_int" else (
                point.as_double
            )
        if kind == "sum":
            shown["monotonic"] = data.is_monotonic
        yield shown


def _metrics(body: bytes) -> Iterator[dict[str, Any]]:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    request = ExportMetricsServiceRequest()
    request.ParseFromString(body)
    for resource_metrics in request.resource_metrics:
        resource = _attributes(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                for point in _points(metric):
                    yield {
                        "signal": "metric",
                        "resource": resource,
                        "scope": scope_metrics.scope.name,
                        "name": metric.name,
                        "unit": metric.unit,
                        **point,
                    }


def _decoded(body: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    return body


def _serve(out: Path, mode: str) -> None:
    lock = threading.Lock()
    hang = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            if mode == "hang":
                hang.wait()  # until the process is stopped
                return
            if mode in ("500", "503"):
                with lock, out.open("a", encoding="utf-8") as sink:
                    sink.write(json.dumps({"signal": "refused", "path": self.path}) + "\n")
                self._answer(int(mode), b"unavailable")
                return
            encoding = self.headers.get("Content-Encoding", "").strip().lower()
            try:
                payload = _decoded(body, encoding)
                if self.path == "/v1/traces":
                    rows = list(_spans(payload))
                elif self.path == "/v1/metrics":
                    rows = list(_metrics(payload))
                else:
                    self._answer(404, b"not found")
                    return
            except Exception as exc:  # a body that does not decode is the sender's bug
                self._answer(400, f"cannot decode: {exc}".encode())
                return
            request = {
                "signal": "request",
                "path": self.path,
                "content_type": self.headers.get("Content-Type", ""),
                "content_encoding": encoding,
                "headers": {k.lower(): v for k, v in self.headers.items()},
            }
            with lock, out.open("a", encoding="utf-8") as sink:
                for row in (request, *rows):
                    sink.write(json.dumps(row, sort_keys=True) + "\n")
            self._answer(200, b"", content_type="application/x-protobuf")

        def _answer(self, status: int, body: bytes, content_type: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--mode", choices=("ok", "500", "503", "hang"), default="ok")
    arguments = parser.parse_args()
    _serve(arguments.out, arguments.mode)


if __name__ == "__main__":
    main()
