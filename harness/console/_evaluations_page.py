"""The Evaluations page: the runs `proctor run` wrote under the console's reports directory,
one run's metrics, gate, regressions and scenarios, and its own report.html (the trace viewer).

report.html carries one inline style and one inline script; it is served with the report's own
CSP (those two, by the hashes of what this Proctor's renderer writes, so an edited file's new
script does not run), sandboxed and unframeable. The console's CSP is never loosened.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from harness.console import _eval_runs as runs
from harness.console._render import render
from harness.console._state import ConsoleState
from harness.reports._html import REPORT_CSP

PAGE = "evaluations"
# `sandbox allow-scripts`: the report runs in an opaque origin, away from the console's cookie
# and same-origin requests, whatever its script were to try.
REPORT_HEADER_CSP = f"{REPORT_CSP}; frame-ancestors 'none'; sandbox allow-scripts"


def routes(state: ConsoleState) -> list[Route]:
    reports_dir = state.config.reports_dir

    # Sync endpoints: file reads block, so Starlette runs them in its thread pool.
    def runs_page(request: Request) -> Response:
        return render(
            request,
            "evaluations.html",
            page=PAGE,
            listing=runs.list_runs(reports_dir),
            reports_dir=str(reports_dir),
            runs_shown=runs.RUNS_SHOWN,
        )

    def run_page(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            runs.run_dir(reports_dir, name)
        except runs.RunFileRefused as exc:
            return render(
                request, "evaluation_missing.html", page=PAGE, message=str(exc), status_code=404
            )
        check = runs.check_traces(reports_dir, name) if "check" in request.query_params else None
        run = runs.load_run(reports_dir, name)
        return render(request, "evaluation.html", page=PAGE, run=run, check=check)

    def run_file(request: Request) -> Response:
        try:
            data, media = runs.open_run_file(
                reports_dir, request.path_params["name"], request.path_params["filename"]
            )
        except runs.RunFileRefused as exc:
            return PlainTextResponse(f"not served: {exc}", status_code=404)
        headers = {}
        if request.path_params["filename"] == runs.REPORT_HTML:
            headers["content-security-policy"] = REPORT_HEADER_CSP
        return Response(data, media_type=media, headers=headers)

    return [
        Route("/evaluations", runs_page, methods=["GET"]),
        Route("/evaluations/{name}", run_page, methods=["GET"]),
        Route("/evaluations/{name}/{filename}", run_file, methods=["GET"]),
    ]
