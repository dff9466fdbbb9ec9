"""A live run's artifacts (traces, reports, cassettes, stdout, stderr) hold neither the run's
own API key, even one with no recognisable shape, nor the parts of the endpoint URL beyond its
origin (a gateway's path or query may carry a token). Against the real bundled stub, over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stubs.openai_stub import running_stub

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
SHAPELESS_KEY = "plainkeyvalue99"  # no prefix, no secret-looking name near it, low entropy
PATH_TOKEN = "team-alpha-passphrase-horse"
QUERY_CODE = "abcDEF123ghiJKL456"
SUITE = {
    "scenarios": [
        {
            "id": "quotes-the-key",
            "description": "A tool output quotes the run's own key back to the model",
            "request": "Read the file notes/readme.txt and tell me what it says.",
            "setup": {"files": {"notes/readme.txt": f"the deploy word is {SHAPELESS_KEY}\n"}},
            "script": [{"answer": "unused by a live run"}],
            "expect": {"must_execute": ["fs.read"]},
        }
    ]
}


def _env(base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROCTOR_", "OPENAI_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(
        PROCTOR_LLM_BASE_URL=base_url,
        PROCTOR_LLM_MODEL="proctor-stub-1",
        PROCTOR_LLM_API_KEY=SHAPELESS_KEY,
    )
    return env


def _run(root: Path, base_url: str) -> str:
    (root / "scenarios").mkdir(parents=True)
    text = yaml.safe_dump(SUITE, sort_keys=False)
    (root / "scenarios" / "suite.yaml").write_text(text, encoding="utf-8")
    args = ["run", "--no-baseline", "--provider", "openai", "--record", "cassettes/live"]
    done = subprocess.run(
        [sys.executable, "-m", "harness", *args, "--report-dir", "report"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env=_env(base_url),
    )
    assert (root / "report" / "report.html").is_file(), done.stdout + done.stderr
    return done.stdout + done.stderr


def _artifacts(root: Path) -> dict[str, str]:
    files = [*(root / "report").rglob("*"), *(root / "cassettes").rglob("*")]
    return {
        str(path.relative_to(root)): path.read_bytes().decode("utf-8", "replace")
        for path in files
        if path.is_file()
    }


def test_a_shapeless_key_a_tool_quoted_is_in_no_artifact_of_the_live_run(tmp_path: Path) -> None:
    with running_stub() as url:
        output = _run(tmp_path, url)
    artifacts = _artifacts(tmp_path)
    assert any("/traces/" in name for name in artifacts)
    assert any(name.startswith("cassettes/live/") for name in artifacts)
    # The tool really read the file: its text reached the trace, with the key cut out.
    assert any("the deploy word is" in text for text in artifacts.values())
    assert SHAPELESS_KEY not in output
    for name, text in artifacts.items():
        assert SHAPELESS_KEY not in text, name


def test_an_endpoint_path_token_is_in_no_artifact_of_a_run_that_got_a_404(tmp_path: Path) -> None:
    with running_stub() as url:
        origin = url.removesuffix("/v1")
        output = _run(tmp_path, f"{origin}/gw/{PATH_TOKEN}/v1?code={QUERY_CODE}")
    artifacts = _artifacts(tmp_path)
    cassette = "\n".join(t for n, t in artifacts.items() if n.startswith("cassettes/"))
    assert "HTTP 404" in cassette and origin in cassette  # the error was kept, by its origin
    for secret in (PATH_TOKEN, QUERY_CODE, "/gw/"):
        assert secret not in output
        for name, text in artifacts.items():
            assert secret not in text, name


def test_record_missing_refuses_a_damaged_cassette_before_anything_runs_and_record_replaces_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "scenarios").mkdir()
    text = yaml.safe_dump(SUITE, sort_keys=False)
    (tmp_path / "scenarios" / "suite.yaml").write_text(text, encoding="utf-8")
    damaged = tmp_path / "cassettes" / "live" / "quotes-the-key.json"
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(b'{"format": "proctor-cassette/0"')

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        args = ["run", "--no-baseline", "--provider", "stub", "--record", "cassettes/live"]
        return subprocess.run(
            [sys.executable, "-m", "harness", *args, *extra, "--report-dir", "report"],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
            env=_env("http://unused.invalid/v1"),
        )

    refused = run("--record-missing")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    said = refused.stdout + refused.stderr
    assert "quotes-the-key.json" in said and "without --record-missing" in said
    assert not (tmp_path / "report").exists()  # nothing ran
    replaced = run()
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    assert b'"format": "proctor-cassette/1"' in damaged.read_bytes()
