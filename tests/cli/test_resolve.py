"""``upgrade-gate resolve`` as a user runs it: output shapes, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from webhook.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "clusterextension.yaml"
REAL = ROOT / "catalogs" / "certified-operators-v4.22"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["resolve", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_console_script_resolves_the_quickstart_example() -> None:
    script = Path(sys.executable).parent / "upgrade-gate"
    done = subprocess.run(
        [str(script), "resolve", "-f", str(EXAMPLE), "--catalog", str(REAL), "-o", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert {k: document[k] for k in ("package", "installed", "resolved", "revision", "edge", "error")} == {
        "package": "cloudnative-pg",
        "installed": {"name": "cloudnative-pg.v1.27.1", "version": "1.27.1"},
        "resolved": {
            "name": "cloudnative-pg.v1.28.0",
            "version": "1.28.0",
            "catalog": "certified-operators-v4.22",
        },
        "revision": {"name": "cloudnative-pg-1.28.0", "version": "1.28.0"},
        "edge": {
            "kind": "replaces",
            "channel": "stable-v1",
            "entry": "cloudnative-pg.v1.28.0",
            "value": "cloudnative-pg.v1.27.1",
        },
        "error": None,
    }


def test_text_output_is_a_short_summary() -> None:
    code, out, _ = _run("-f", str(EXAMPLE), "--catalog", str(REAL))
    assert code == 0
    assert "resolved   cloudnative-pg.v1.28.0 (1.28.0) from catalog certified-operators-v4.22" in out
    assert "revision   cloudnative-pg-1.28.0" in out


def test_installed_flag_overrides_the_status() -> None:
    code, out, _ = _run("-f", str(EXAMPLE), "--catalog", str(REAL), "--installed", "x@1.30.0", "-o", "json")
    assert code == 0
    assert json.loads(out)["resolved"]["name"] == "cloudnative-pg.v1.30.0"
    assert json.loads(out)["revision"] is None


def _manifest(tmp_path: Path, old: str, new: str) -> Path:
    path = tmp_path / "ext.yaml"
    path.write_text(EXAMPLE.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    return path


def test_a_resolution_error_exits_1_with_upstreams_message(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, "packageName: cloudnative-pg", "packageName: nope")
    code, out, err = _run("-f", str(manifest), "--catalog", str(REAL), "-o", "json")
    message = (
        'error upgrading from currently installed version "1.27.1": no bundles found for package "nope" '
        'matching version ">=1.27.0 <2.0.0" in channels [stable-v1]'
    )
    assert code == 1
    assert json.loads(out)["error"] == message
    assert err == f"upgrade-gate: {message}\n"


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        pytest.param(
            '">=1.27.0 <2.0.0"',
            '"foobar"',
            'desired version range "foobar" is invalid: improper constraint: "foobar"',
            id="an invalid version range",
        ),
        pytest.param(
            "name: cloudnative-pg\n",
            "name: [x\n",
            "{path}:7: invalid YAML: did not find expected ',' or ']'"
            " (while parsing a flow sequence started on line 6)",
            id="malformed YAML",
        ),
        pytest.param(
            "kind: ClusterExtension",
            "kind: ClusterCatalog",
            "{path}: no ClusterExtension manifest found",
            id="wrong kind",
        ),
        pytest.param(
            "packageName: cloudnative-pg\n",
            "\n",
            "{path}: spec.source.catalog.packageName is required",
            id="no package",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, old: str, new: str, error: str) -> None:
    manifest = _manifest(tmp_path, old, new)
    code, out, err = _run("-f", str(manifest), "--catalog", str(REAL))
    assert code == 2
    assert out == ""
    assert err.startswith("upgrade-gate: " + error.format(path=manifest))
    assert err.count("\n") == 1
    assert "Traceback" not in err
