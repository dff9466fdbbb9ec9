"""The Evaluations page: run directories under the reports dir, one run, and its own files."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from harness.console import ConsoleConfig, ConsoleState, create_app
from harness.console import _eval_runs as runs
from harness.console._guard import CSP as CONSOLE_CSP
from harness.console._login_page import HOME
from harness.reports import write_reports
from tests.unit.harness.console.conftest import ORIGIN, TOKEN, sign_in
from tests.unit.harness.test_reports_sample import XSS, clean_result, sample_result

SECRET = "the-secret-outside-the-reports-dir"


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    return tmp_path / "reports"


@pytest.fixture
def eval_client(
    tmp_path: Path, reports: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TestClient]:
    monkeypatch.delenv("PROCTOR_AUDIT_KEY", raising=False)
    config = ConsoleConfig(state_dir=tmp_path / "state", token=TOKEN, reports_dir=reports)
    with ConsoleState(config) as state:
        with TestClient(create_app(state), base_url=ORIGIN, follow_redirects=False) as client:
            sign_in(client)
            yield client


def _runs(page: str) -> list[str]:
    return re.findall(r'<tr data-run="([^"]*)"', page)


def _row(page: str, name: str) -> str:
    return page[page.index(f'data-run="{name}"') :].split("</tr>")[0]


def _inline_hashes(document: str) -> set[str]:
    """The CSP source of every inline script and style a browser would run or apply."""
    found = set()
    for _tag, attrs, body in re.findall(r"<(script|style)([^>]*)>(.*?)</\1>", document, re.S):
        if 'type="application/json"' in attrs:
            continue  # a data block: never executed, not subject to script-src
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        found.add(f"'sha256-{digest}'")
    return found


def test_the_runs_list_shows_each_run_with_provider_gate_and_regressions(
    eval_client: TestClient, reports: Path
) -> None:
    write_reports(sample_result(), reports / "run-replay")
    write_reports(clean_result(live=True), reports / "run-live")
    (reports / "screenshots").mkdir()  # not a run: no report file in it
    page = eval_client.get("/evaluations").text
    assert sorted(_runs(page)) == ["run-live", "run-replay"]
    replay = _row(page, "run-replay")
    assert 'class="badge replay"' in replay and "exit 2" in replay
    assert "<td>2</td>" in replay  # the sample's two regressions
    assert "damaged" not in replay
    live = _row(page, "run-live")
    assert 'class="badge live"' in live and "exit 0" in live
    assert "NOT a model-quality measurement" in page


def test_a_missing_reports_dir_is_said_not_failed(eval_client: TestClient) -> None:
    response = eval_client.get("/evaluations")
    assert response.status_code == 200
    assert "the directory does not exist yet" in response.text


def test_a_replay_run_page_says_it_is_not_a_model_quality_measurement(
    eval_client: TestClient, reports: Path
) -> None:
    write_reports(sample_result(), reports / "run-replay")
    page = eval_client.get("/evaluations/run-replay").text
    notice = re.search(r'id="notice">(.*?)</p>', page, re.S)
    assert notice is not None and "NOT a model-quality measurement" in notice.group(1)
    assert 'id="gate"' in page and "exit 2" in page
    assert 'id="regressions"' in page and "rate_drop" in page
    assert 'data-scenario="read-notes"' in page and 'data-scenario="refund-held"' in page
    assert 'href="/evaluations/run-replay/report.html"' in page


def test_a_live_run_page_does_not_carry_the_replay_notice(
    eval_client: TestClient, reports: Path
) -> None:
    write_reports(clean_result(live=True), reports / "run-live")
    page = eval_client.get("/evaluations/run-live").text
    assert "NOT a model-quality measurement" not in page
    assert 'class="badge live"' in page


def test_report_text_with_markup_renders_as_text(eval_client: TestClient, reports: Path) -> None:
    write_reports(sample_result(), reports / "run-replay")
    for url in ("/evaluations", "/evaluations/run-replay"):
        page = eval_client.get(url).text
        assert XSS not in page
        assert "<img" not in page
    page = eval_client.get("/evaluations/run-replay").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_trace_viewer_is_served_with_its_own_csp_allowing_exactly_its_inline_blocks(
    eval_client: TestClient, reports: Path
) -> None:
    write_reports(sample_result(), reports / "run-replay")
    response = eval_client.get("/evaluations/run-replay/report.html")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    csp = response.headers["content-security-policy"]
    assert response.headers.get_list("content-security-policy") == [csp]  # not the console's
    sources = set(re.findall(r"'sha256-[^']+'", csp))
    assert sources == _inline_hashes(response.text) and len(sources) == 2
    assert "'unsafe-inline'" not in csp and "default-src 'none'" in csp
    assert "frame-ancestors 'none'" in csp and "sandbox allow-scripts" in csp
    assert "allow-same-origin" not in csp
    assert response.headers["x-content-type-options"] == "nosniff"
    # The console's own pages keep the console's policy.
    page = eval_client.get("/evaluations/run-replay")
    assert page.headers["content-security-policy"] == CONSOLE_CSP


def test_a_script_added_to_report_html_is_not_allowed_by_its_csp(
    eval_client: TestClient, reports: Path
) -> None:
    write_reports(sample_result(), reports / "run-replay")
    html_path = reports / "run-replay" / "report.html"
    html_path.write_text(
        html_path.read_text(encoding="utf-8").replace(
            "</body>", "<script>fetch('/approvals')</script></body>"
        ),
        encoding="utf-8",
    )
    response = eval_client.get("/evaluations/run-replay/report.html")
    injected = _inline_hashes("<script>fetch('/approvals')</script>")
    assert not injected & set(
        re.findall(r"'sha256-[^']+'", response.headers["content-security-policy"])
    )


def test_the_other_known_files_are_served_as_inert_text(
    eval_client: TestClient, reports: Path
) -> None:
    write_reports(sample_result(), reports / "run-replay")
    report = eval_client.get("/evaluations/run-replay/report.json")
    assert report.headers["content-type"] == "application/json"
    assert json.loads(report.text)["run_id"] == "run-7"
    junit = eval_client.get("/evaluations/run-replay/junit.xml")
    assert junit.headers["content-type"].startswith("text/plain")
    assert junit.headers["content-security-policy"] == CONSOLE_CSP


@pytest.mark.parametrize(
    "url",
    [
        "/evaluations/run-replay/traces",
        "/evaluations/run-replay/secret.txt",
        "/evaluations/run-replay/..%2F..%2Fsecret.txt",
        "/evaluations/..%2Fsecret-dir/report.html",
        "/evaluations/../secret-dir/report.html",
        "/evaluations/%2E%2E/report.json",
        "/evaluations/..",
        "/evaluations/%2Fetc/report.json",
        "/evaluations/linked-dir/report.html",
        "/evaluations/linked-file/report.html",
        "/evaluations/.hidden/report.json",
        "/evaluations/nope/report.json",
    ],
)
def test_only_known_files_directly_inside_a_run_dir_are_served(
    eval_client: TestClient, reports: Path, tmp_path: Path, url: str
) -> None:
    write_reports(sample_result(), reports / "run-replay")
    (reports / "run-replay" / "secret.txt").write_text(SECRET)
    outside = tmp_path / "secret-dir"
    write_reports(sample_result(), outside)
    for name in ("report.html", "report.json"):
        (outside / name).write_text(SECRET)
    (tmp_path / "secret.txt").write_text(SECRET)
    os.symlink(outside, reports / "linked-dir")
    (reports / "linked-file").mkdir()
    os.symlink(outside / "report.html", reports / "linked-file" / "report.html")
    (reports / ".hidden").mkdir()
    (reports / ".hidden" / "report.json").write_text(SECRET)
    response = eval_client.get(url)
    assert SECRET not in response.text
    if response.status_code == 303:  # the client resolved `..` itself: the URL left the page
        assert response.headers["location"] == HOME
    else:
        assert response.status_code == 404


@pytest.mark.parametrize(
    ("name", "filename"),
    [
        ("..", "report.json"),
        (".", "report.json"),
        ("../secret-dir", "report.json"),
        ("run-replay/../../secret-dir", "report.json"),
        ("/", "report.json"),
        ("", "report.json"),
        ("run-replay\\..", "report.json"),
        ("run-replay\0", "report.json"),
        ("run-replay", "../secret.txt"),
        ("run-replay", "/etc/passwd"),
        ("run-replay", "traces/read-notes.json"),
        ("linked-dir", "report.json"),
    ],
)
def test_the_file_reader_refuses_names_that_leave_the_reports_dir(
    reports: Path, tmp_path: Path, name: str, filename: str
) -> None:
    write_reports(sample_result(), reports / "run-replay")
    outside = tmp_path / "secret-dir"
    write_reports(sample_result(), outside)
    os.symlink(outside, reports / "linked-dir")
    with pytest.raises(runs.RunFileRefused):
        runs.open_run_file(reports, name, filename)


def test_the_file_reader_serves_a_known_file_of_a_run(reports: Path) -> None:
    write_reports(sample_result(), reports / "run-replay")
    data, media = runs.open_run_file(reports, "run-replay", "summary.md")
    assert data == (reports / "run-replay" / "summary.md").read_bytes()
    assert media.startswith("text/plain")


def test_a_symlinked_run_dir_is_listed_as_damaged_never_read(
    eval_client: TestClient, reports: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    write_reports(sample_result(), outside)
    reports.mkdir()
    os.symlink(outside, reports / "linked")
    page = eval_client.get("/evaluations").text
    assert "symbolic link" in _row(page, "linked")
    response = eval_client.get("/evaluations/linked")
    assert response.status_code == 404
    assert "rate_drop" not in response.text


def _damage(reports: Path) -> None:
    write_reports(sample_result(), reports / "torn")
    (reports / "torn" / "report.json").write_text('{"version": 1, "run_id": "run-7", "li')
    write_reports(sample_result(), reports / "half")
    (reports / "half" / "manifest.json").unlink()  # written last: a run stopped before it
    (reports / "only-traces" / "traces").mkdir(parents=True)
    write_reports(sample_result(), reports / "retyped")
    report = json.loads((reports / "retyped" / "report.json").read_text())
    report["exit_code"] = "0"
    report["metrics"][0] = ["not", "a", "metric"]
    (reports / "retyped" / "report.json").write_text(json.dumps(report))
    write_reports(sample_result(), reports / "future")
    report = json.loads((reports / "future" / "report.json").read_text())
    report["version"] = 99
    (reports / "future" / "report.json").write_text(json.dumps(report))
    write_reports(sample_result(), reports / "binary")
    (reports / "binary" / "report.json").write_bytes(b"\xff\xfe\x00garbage")


DAMAGED = ("torn", "half", "only-traces", "retyped", "future", "binary")


def test_damaged_or_half_written_runs_are_listed_as_damaged_with_the_reason(
    eval_client: TestClient, reports: Path
) -> None:
    _damage(reports)
    write_reports(sample_result(), reports / "sound")
    response = eval_client.get("/evaluations")
    assert response.status_code == 200
    assert sorted(_runs(response.text)) == sorted((*DAMAGED, "sound"))
    for name in DAMAGED:
        assert "damaged" in _row(response.text, name), name
    assert "damaged" not in _row(response.text, "sound")
    assert "manifest.json is missing" in _row(response.text, "half")
    assert "report.json is missing" in _row(response.text, "only-traces")
    assert "version 99" in _row(response.text, "future")


@pytest.mark.parametrize("name", DAMAGED)
def test_a_damaged_run_page_says_why_instead_of_failing(
    eval_client: TestClient, reports: Path, name: str
) -> None:
    _damage(reports)
    response = eval_client.get(f"/evaluations/{name}")
    assert response.status_code == 200
    assert 'id="damaged"' in response.text
    assert "internal error" not in response.text


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two shipped scenarios run by `proctor run` itself: traces that verify."""
    from click.testing import CliRunner

    from harness.cli._app import cli
    from tests.small_suite import REPO

    out = tmp_path_factory.mktemp("real") / "run-real"
    env = {name: None for name in os.environ if name.startswith("PROCTOR_")}
    result = CliRunner().invoke(
        cli,
        [
            "run", "--scenarios", str(REPO / "scenarios"),
            "--baseline", str(REPO / "baselines" / "baseline.json"),
            "--limit", "2", "--report-dir", str(out),
        ],
        env=env,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def test_checking_a_sound_runs_traces_says_they_verify(
    eval_client: TestClient, reports: Path, real_run: Path
) -> None:
    shutil.copytree(real_run, reports / "run-real")
    assert 'id="check-traces"' in eval_client.get("/evaluations/run-real").text
    page = eval_client.get("/evaluations/run-real?check=1").text
    assert "Stored traces verify" in page and "do NOT verify" not in page


def test_checking_a_run_whose_trace_was_edited_says_which_file(
    eval_client: TestClient, reports: Path, real_run: Path
) -> None:
    shutil.copytree(real_run, reports / "run-real")
    trace = sorted((reports / "run-real" / "traces").glob("*.json"))[0]
    data = json.loads(trace.read_text(encoding="utf-8"))
    data["final_answer"] = "<script>alert(1)</script>"
    trace.write_text(json.dumps(data), encoding="utf-8")
    response = eval_client.get("/evaluations/run-real?check=1")
    assert response.status_code == 200
    assert "Stored traces do NOT verify" in response.text
    assert f"traces/{trace.name}" in response.text
    assert XSS not in response.text


def test_checking_a_damaged_run_says_why_instead_of_failing(
    eval_client: TestClient, reports: Path
) -> None:
    _damage(reports)
    for name in DAMAGED:
        response = eval_client.get(f"/evaluations/{name}?check=1")
        assert response.status_code == 200, name
        assert "Stored traces do NOT verify" in response.text, name


def test_a_run_dir_named_with_markup_is_listed_and_opened_as_text(
    eval_client: TestClient, reports: Path
) -> None:
    name = '"><img src=x onerror=alert(1)>'
    write_reports(sample_result(), reports / name)
    listing = eval_client.get("/evaluations").text
    assert "<img" not in listing
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in listing
    link = re.search(r'<a href="(/evaluations/[^"]*)">&#34;&gt;&lt;img', listing)
    assert link is not None and "%3Cimg" in link.group(1)
    page = eval_client.get(html.unescape(link.group(1)))
    assert page.status_code == 200 and 'data-scenario="read-notes"' in page.text
    assert "<img" not in page.text


def test_a_report_json_that_is_a_link_out_is_never_read(
    eval_client: TestClient, reports: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    write_reports(sample_result(), outside)
    report = json.loads((outside / "report.json").read_text())
    report["run_id"] = SECRET
    (outside / "report.json").write_text(json.dumps(report))
    write_reports(sample_result(), reports / "linked-report")
    (reports / "linked-report" / "report.json").unlink()
    os.symlink(outside / "report.json", reports / "linked-report" / "report.json")
    for url in (
        "/evaluations",
        "/evaluations/linked-report",
        "/evaluations/linked-report?check=1",
        "/evaluations/linked-report/report.json",
    ):
        response = eval_client.get(url)
        assert SECRET not in response.text, url
    assert "damaged" in _row(eval_client.get("/evaluations").text, "linked-report")


def test_an_unreadable_reports_dir_is_said_not_failed(
    eval_client: TestClient, reports: Path
) -> None:
    reports.write_text("a file, not a directory")
    response = eval_client.get("/evaluations")
    assert response.status_code == 200
    assert "cannot be listed" in response.text
