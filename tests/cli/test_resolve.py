"""``upgrade-gate resolve`` as a user runs it: output shapes, exit codes, one-line errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
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
    why = "package nope is in none of the selected catalogs (certified-operators-v4.22)"
    assert json.loads(out)["unavailable"] == why
    assert err == f"upgrade-gate: {message}; {why}\n"


def test_a_resolution_error_in_text_output_is_also_one_line_on_stderr(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path, '">=1.27.0 <2.0.0"', '">=9.0.0"')
    code, out, err = _run("-f", str(manifest), "--catalog", str(REAL))
    message = (
        'error upgrading from currently installed version "1.27.1": no bundles found for package "cloudnative-pg" '
        'matching version ">=9.0.0" in channels [stable-v1]'
    )
    assert (code, err) == (1, f"upgrade-gate: {message}\n")
    assert f"error      {message}" in out


def test_a_selector_that_selects_no_catalog_is_named_in_the_output(tmp_path: Path) -> None:
    selector = "\n      selector: {matchLabels: {olm.operatorframework.io/metadata.name: certified-operators}}\n"
    manifest = _manifest(tmp_path, "channels: [stable-v1]\n", "channels: [stable-v1]" + selector)
    code, out, err = _run("-f", str(manifest), "--catalog", str(REAL))
    why = (
        "the catalog selector olm.operatorframework.io/metadata.name=certified-operators selects none of the "
        "catalogs (certified-operators-v4.22)"
    )
    assert code == 1
    assert f"because    {why}" in out
    assert err.endswith(f"; {why}\n")


def test_the_example_of_the_help_text_runs() -> None:
    help_text = CliRunner().invoke(main, ["resolve", "--help"]).stdout
    example = help_text.split("Example", 1)[1].split(":", 1)[1].split("Options:", 1)[0]
    argv = example.replace("\\\n", " ").split()
    assert argv[:2] == ["upgrade-gate", "resolve"]
    argv = [str(ROOT / a) if a.startswith(("examples/", "catalogs/")) else a for a in argv[2:]]
    code, out, err = _run(*argv)
    assert (code, err) == (0, "")
    assert "resolved   cloudnative-pg.v1.27.1 (1.27.1)" in out


@pytest.mark.parametrize(
    ("installed", "error"),
    [
        pytest.param(
            "x@notaversion",
            "--installed 'x@notaversion': invalid version \"notaversion\": No Major.Minor.Patch elements found",
            id="an installed version that is not semver is bad input",
        ),
        pytest.param(
            "postgresoperator.v5.8.7@5.8.7",
            "--installed 'postgresoperator.v5.8.7@5.8.7': bundle postgresoperator.v5.8.7 belongs to package "
            "crunchy-postgres-operator, not cloudnative-pg",
            id="an installed bundle of another package is bad input",
        ),
    ],
)
def test_a_bad_installed_bundle_exits_2_with_one_line(installed: str, error: str) -> None:
    code, out, err = _run("-f", str(EXAMPLE), "--catalog", str(REAL), "--installed", installed)
    assert (code, out, err) == (2, "", f"upgrade-gate: {error}\n")


def test_an_installed_bundle_in_no_catalog_is_a_warning() -> None:
    code, _, err = _run("-f", str(EXAMPLE), "--catalog", str(REAL), "--installed", "cloudnative-pg.v1.27.9@1.27.9")
    assert code == 1
    assert err.startswith(
        "upgrade-gate: warning: --installed bundle cloudnative-pg.v1.27.9 is in no catalog's package cloudnative-pg\n"
    )


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
            "{path}:3: spec.source.catalog.packageName is required",
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


def test_the_walkthrough_resolves_the_example_repository_as_its_readme_shows() -> None:
    readme = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```[a-z]*\n(.*?)```", readme, flags=re.DOTALL)
    [index] = [i for i, b in enumerate(blocks) if b.startswith("upgrade-gate resolve -f examples/gitops-repo")]
    argv = blocks[index].replace("\\\n", " ").split()
    code, out, err = _run(*[str(ROOT / a) if a.startswith(("examples/", "catalogs/")) else a for a in argv[2:]])
    assert (code, err) == (0, "")
    assert out == blocks[index + 1]


def test_an_unreachable_catalogd_url_exits_3_with_one_line() -> None:
    code, out, err = _run("-f", str(EXAMPLE), "--catalog", "http://127.0.0.1:9/catalogs/x")
    assert (code, out) == (3, ""), "an outage: retry (docs/cli.md, exit codes)"
    assert err.startswith("upgrade-gate: http://127.0.0.1:9/catalogs/x/api/v1/all: cannot fetch catalog: ")
    assert err.count("\n") == 1


def test_a_directory_of_extensions_gives_a_table_with_one_row_each(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    other = EXAMPLE.read_text(encoding="utf-8").replace("name: cloudnative-pg\n", "name: other\n", 1)
    broken = other.replace("name: other\n", "name: nope\n", 1).replace(
        "packageName: cloudnative-pg", "packageName: nope"
    )
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "b.yaml").write_text(f"{other}---\n{broken}", encoding="utf-8")
    code, out, err = _run("-f", str(tmp_path), "--catalog", str(REAL))
    assert out.splitlines() == [
        "EXTENSION       PACKAGE         INSTALLED  RESOLVED  CATALOG                    REVISION",
        "cloudnative-pg  cloudnative-pg  1.27.1     1.28.0    certified-operators-v4.22  cloudnative-pg-1.28.0",
        "other           cloudnative-pg  1.27.1     1.28.0    certified-operators-v4.22  other-1.28.0",
        "nope            nope            1.27.1     -         -                          error: error upgrading from "
        'currently installed version "1.27.1": no bundles found for package "nope" matching version ">=1.27.0 '
        '<2.0.0" in channels [stable-v1]; package nope is in none of the selected catalogs (certified-operators-v4.22)',
    ]
    assert (code, err) == (1, "upgrade-gate: 1 of 3 ClusterExtensions do not resolve: nope\n")
    code, out, _ = _run("-f", str(tmp_path / "nested" / "b.yaml"), "--catalog", str(REAL), "-o", "json")
    assert [(d["extension"], d["error"] is None) for d in json.loads(out)] == [("other", True), ("nope", False)]


def test_installed_needs_a_single_extension(tmp_path: Path) -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    (tmp_path / "two.yaml").write_text(f"{text}---\n{text.replace('name: cloudnative-pg', 'name: x', 1)}")
    code, _, err = _run("-f", str(tmp_path / "two.yaml"), "--catalog", str(REAL), "--installed", "x@1.0.0")
    assert (code, err) == (2, f"upgrade-gate: --installed needs one ClusterExtension; {tmp_path / 'two.yaml'} has 2\n")


def test_a_catalog_that_is_no_file_based_catalog_is_bad_input(tmp_path: Path) -> None:
    code, stdout, err = _run("-f", str(EXAMPLE), "--catalog", str(ROOT / "README.md"))
    assert (code, stdout) == (2, "")
    assert err.startswith(f"upgrade-gate: not a File-Based Catalog: {ROOT / 'README.md'}:") and err.count("\n") == 1
    (tmp_path / "notes.txt").write_text("not a catalog\n")
    code, stdout, err = _run("-f", str(EXAMPLE), "--catalog", str(tmp_path))
    assert (code, stdout, err) == (2, "", f"upgrade-gate: {tmp_path}: {NO_CATALOG}\n")


NO_CATALOG = (
    "not a File-Based Catalog: no FBC document (a .json or .yaml file with a schema) in it or in its package "
    "directories"
)
PACKAGE = '{"schema": "olm.package", "name": "p", "defaultChannel": "stable"}\n'


def test_a_catalog_directory_holds_its_documents_at_most_one_level_down(tmp_path: Path) -> None:
    """catalogd's and opm's layout, <catalog>/<package>/catalog.json, is a catalog; FBC documents only deeper
    down, or files without an FBC blob (a schema), are not: bad input, before anything deeper is read."""
    deep = tmp_path / "tmp" / "build" / "out" / "p"
    deep.mkdir(parents=True)
    (deep / "catalog.json").write_text(PACKAGE)
    (tmp_path / "tmp" / "settings.json").write_text('{"editor": "vi"}\n')
    (tmp_path / "tmp" / "build" / "notes.yaml").write_text("todo: [write]\n")
    code, stdout, err = _run("-f", str(EXAMPLE), "--catalog", str(tmp_path / "tmp"))
    assert (code, stdout, err) == (2, "", f"upgrade-gate: {tmp_path / 'tmp'}: {NO_CATALOG}\n")
    code, stdout, err = _run("-f", str(EXAMPLE), "--catalog", str(tmp_path / "tmp" / "build" / "out"))
    assert code == 1, "a package directory one level down: the catalog loads (and has no cloudnative-pg)"
    assert "package cloudnative-pg is in none of the selected catalogs (out)" in err


def test_text_stays_an_alias_of_table_and_junit_has_a_case_per_extension(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(EXAMPLE.read_text(encoding="utf-8"), encoding="utf-8")
    broken = EXAMPLE.read_text(encoding="utf-8").replace("name: cloudnative-pg\n", "name: nope\n", 1)
    (tmp_path / "b.yaml").write_text(broken.replace("packageName: cloudnative-pg", "packageName: nope"))
    assert _run("-f", str(EXAMPLE), "--catalog", str(REAL), "-o", "text") == _run(
        "-f", str(EXAMPLE), "--catalog", str(REAL)
    )
    report = tmp_path / "out" / "resolve.xml"
    report.parent.mkdir()
    code, out, err = _run("-f", str(tmp_path), "--catalog", str(REAL), "-o", "junit", "--output-file", str(report))
    assert (code, err) == (1, "upgrade-gate: 1 of 2 ClusterExtensions do not resolve: nope\n")
    assert out.splitlines()[0].split()[:2] == ["EXTENSION", "PACKAGE"], "the table is printed beside the file"
    (suite,) = ET.parse(report).getroot().findall("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("resolve", "2", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert cases["cloudnative-pg"].find("failure") is None
    failure = cases["nope"].find("failure")
    assert failure is not None and failure.get("message", "").startswith(
        'error upgrading from currently installed version "1.27.1": no bundles found for package "nope"'
    )
    assert [p.name for p in report.parent.iterdir()] == ["resolve.xml"], "written atomically: no temporary left"


def test_an_output_file_that_cannot_be_written_is_bad_input(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "out.json"
    code, out, err = _run("-f", str(EXAMPLE), "--catalog", str(REAL), "-o", "json", "--output-file", str(target))
    assert (code, out) == (2, "")
    assert err == f"upgrade-gate: --output-file {target}: cannot write: No such file or directory\n"
