"""What ships: the wheel and sdist, the image's Dockerfile, the chart's package and the plain CRD file.

- ``python -m build`` (without build isolation, so offline) makes the sdist and, from it, the wheel, in a copy of the
  repository's tracked files; the wheel installs into a fresh virtual environment (``--no-deps``: the dependencies
  come from this environment's site-packages) and runs from another directory: ``upgrade-gate --version`` and the
  bundled policies' suites, from ``<prefix>/share/upgrade-gate/policies``.
- The Dockerfile is checked, not built (no container engine here): what it copies exists and is in the build
  context ``.dockerignore`` leaves, its entrypoint is the console script, the policies land at the chart's
  ``policies.bundledDir``, and its documented tag is the chart's default image.
- ``helm package`` (the Helm SDK's) makes the archive Helm installs: Chart.yaml's version and appVersion are the
  package's, ``.helmignore`` keeps the archive to the chart, and NOTES.txt names the image with its registry.
- ``kubectl apply -f`` takes the plain CRD file on a real kube-apiserver.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path
from typing import Any

import helm_python as helm
import pytest
import yaml

from tests import apiserver as harness
from tests.test_chart import CHART, DEFAULT_IMAGE, NAMESPACE, PLAIN_CRD, RELEASE
from webhook.policy import load_suites

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION: str = PYPROJECT["project"]["version"]
DATA_DIR = "share/upgrade-gate/policies"


def _run(argv: list[str | Path], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel ``python -m build`` makes from the repository's files as a clone of them would hold
    them (tracked, or new and not ignored)."""
    source = tmp_path_factory.mktemp("source")
    files = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], ROOT).stdout.split("\0")
    for name in filter(None, files):
        path = ROOT / name
        if path.is_file() and not path.is_symlink():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, source / name)
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, source], source)
    return out


def test_the_sdist_holds_the_package_and_the_bundled_policies(dist):
    (sdist,) = dist.glob("*.tar.gz")
    assert sdist.name == f"upgrade_gate-{VERSION}.tar.gz"
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    policies = {str(p.relative_to(ROOT)) for p in (ROOT / "policies").rglob("*.yaml")}
    assert policies <= names
    assert {"pyproject.toml", "README.md", "webhook/cli/__init__.py", "webhook/py.typed"} <= names
    assert not [name for name in names if name.startswith(("tests/", "charts/"))]


def test_the_wheel_installs_the_console_script_and_the_policies_as_data(dist):
    (wheel,) = dist.glob("*.whl")
    assert wheel.name == f"upgrade_gate-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = archive.read(f"upgrade_gate-{VERSION}.dist-info/entry_points.txt").decode()
    data = f"upgrade_gate-{VERSION}.data/data/{DATA_DIR}"
    policies = {f"{data}/{p.relative_to(ROOT / 'policies')}" for p in (ROOT / "policies").rglob("*.yaml")}
    assert policies <= names
    assert not [name for name in names if name.startswith(("tests/", "charts/", "policies/"))]
    assert "upgrade-gate = webhook.cli:main" in entry_points


def test_the_installed_wheel_runs_the_bundled_suites_from_another_directory(dist, tmp_path):
    (wheel,) = dist.glob("*.whl")
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env)
    python = env / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel], tmp_path)
    # The dependencies: this environment's site-packages, after the new environment's own (a .pth path entry).
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp_path).stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    imported = _run([python, "-c", "import webhook; print(webhook.__file__)"], elsewhere).stdout.strip()
    assert Path(imported).is_relative_to(site)  # the wheel's package, not the checkout's
    script = env / "bin" / "upgrade-gate"
    assert _run([script, "--version"], elsewhere).stdout.strip() == f"upgrade-gate, version {VERSION}"
    suites = env / DATA_DIR / "tests"
    passed = _run([script, "policy", "test", suites, "-o", "json"], elsewhere, timeout=600)
    results = yaml.safe_load(passed.stdout)
    assert sorted(r["suite"] for r in results) == sorted(s.name for s in load_suites([ROOT / "policies" / "tests"]))
    assert all(case["passed"] for r in results for case in r["cases"])  # as the exit code 0 says
    # Without ./policies and without --policies, a command reads the installed bundled policies.
    (elsewhere / "extension.yaml").write_text(
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterExtension\nmetadata: {name: argocd}\n"
        "spec: {namespace: argocd, serviceAccount: {name: installer}, source: {sourceType: Catalog, catalog: "
        "{packageName: argocd-operator, upgradeConstraintPolicy: SelfCertified}}}\n"
    )
    applied = subprocess.run(
        [script, "apply", "-f", "extension.yaml", "-o", "json"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=False,
    )
    assert applied.returncode == 1, applied.stderr
    (row,) = json.loads(applied.stdout)["results"]
    assert row["policy"] == "upgrade-gate-clusterextension-guards"  # bundled in the wheel, found without a path


# --- the image ----------------------------------------------------------------------------------------------------


def _dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    lines = [line for line in (ROOT / "Dockerfile").read_text().splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in joined.splitlines() if line.strip()]


def _in_build_context(path: str) -> bool:
    """Whether ``.dockerignore`` (its patterns in order, ``!`` re-including) leaves ``path`` in the build context."""
    included = True
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        negated = line.strip().startswith("!")
        pattern = line.strip().lstrip("!").rstrip("/")
        parts = Path(path).parts
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatch(prefix, pattern.replace("**", "*")) for prefix in prefixes):
            included = negated
    return included


def test_the_dockerfile_copies_only_what_the_build_context_holds():
    copies = [args.split() for instruction, args in _dockerfile() if instruction == "COPY"]
    sources = [
        source
        for *flags_and_sources, _ in copies
        if "--from=build" not in flags_and_sources
        for source in flags_and_sources
    ]
    assert sources
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
        assert _in_build_context(source.rstrip("/")), f"COPY {source}: left out of the build context by .dockerignore"
    assert {"pyproject.toml", "README.md", "webhook/", "policies/"} <= set(sources)  # what `pip install .` needs


def test_the_image_runs_the_console_script_with_the_policies_where_the_chart_reads_them():
    instructions = _dockerfile()
    (entrypoint,) = [args for instruction, args in instructions if instruction == "ENTRYPOINT"]
    assert yaml.safe_load(entrypoint) == list(PYPROJECT["project"]["scripts"])
    bundled = yaml.safe_load((CHART / "values.yaml").read_text())["policies"]["bundledDir"]
    runs = " ".join(args for instruction, args in instructions if instruction == "RUN")
    assert f"ln -s /opt/venv/{DATA_DIR} {bundled}" in runs
    assert PYPROJECT["tool"]["setuptools"]["data-files"][DATA_DIR] == ["policies/*.yaml"]


def test_the_documented_image_tag_is_the_charts_default_image():
    tags = set(re.findall(r"docker build -t (\S+) \.", (ROOT / "Dockerfile").read_text()))
    assert tags == {DEFAULT_IMAGE}
    assert DEFAULT_IMAGE.endswith(f":{VERSION}")
    assert f"docker build -t {DEFAULT_IMAGE} ." in (CHART / "README.md").read_text()


# --- the chart's package -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(helm.package(CHART, destination=tmp_path_factory.mktemp("chart")))


def test_the_chart_is_versioned_as_the_package(packaged):
    chart: dict[str, Any] = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == VERSION
    assert packaged.name == f"upgrade-gate-{VERSION}.tgz"


def test_the_package_holds_the_chart_and_only_it(packaged):
    with tarfile.open(packaged) as archive:
        names = {name for name in archive.getnames() if not name.endswith("/")}
    tracked = _run(["git", "ls-files", "charts/upgrade-gate"], ROOT).stdout.split()
    expected = {f"upgrade-gate/{Path(name).relative_to('charts/upgrade-gate')}" for name in tracked}
    assert names == expected
    assert {
        "upgrade-gate/files/grafana-dashboard.json",
        "upgrade-gate/files/crds/clusterextensionrevisions.yaml",
    } <= names


def test_the_packaged_chart_renders_notes_naming_the_image_with_its_registry(packaged):
    with helm.Chart.load_archive(packaged.read_bytes()) as chart:
        rendered = chart.render({}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    (notes,) = [text for path, text in rendered.items() if path.endswith("NOTES.txt")]
    assert f"of {DEFAULT_IMAGE}" in notes
    assert DEFAULT_IMAGE.split("/")[0] == "ghcr.io"


# --- the plain CRD file -------------------------------------------------------------------------------------------


def _kubectl() -> Path:
    kubectl = harness.binaries() / "kubectl"
    harness.skip_unless_available("kube", None if kubectl.is_file() else f"no kubectl in {harness.binaries()}")
    return kubectl


def test_kubectl_applies_the_plain_crd_file(apiserver):
    kubectl = [_kubectl(), "--kubeconfig", apiserver.kubeconfig]
    _run([*kubectl, "apply", "-f", PLAIN_CRD], ROOT)
    plain = yaml.safe_load(PLAIN_CRD.read_text())
    name = plain["metadata"]["name"]
    _run([*kubectl, "wait", "--for=condition=Established", f"crd/{name}", "--timeout=30s"], ROOT)
    served = yaml.safe_load(_run([*kubectl, "get", "crd", name, "-o", "yaml"], ROOT).stdout)
    assert served["spec"]["versions"] == plain["spec"]["versions"]
    assert plain["metadata"]["labels"].items() <= served["metadata"]["labels"].items()


def test_the_ci_example_installs_the_wheel_the_build_makes(dist):
    (wheel,) = dist.glob("*.whl")
    workflow = yaml.safe_load((ROOT / "examples" / "ci" / "github-actions.yaml").read_text())
    (install,) = [s["run"] for s in workflow["jobs"]["review"]["steps"] if s.get("name") == "Install upgrade-gate"]
    argv = install.split()
    assert argv[:2] == ["pip", "install"]
    assert Path(argv[2]).name == wheel.name
