"""Build the real Kubernetes and OLM v1 binaries the integration tests run, from their pinned Go modules.

    .venv/bin/python -m tests.tools.build                  # build what is missing; print the bin directory
    eval "$(.venv/bin/python -m tests.tools.build --env)"  # ... and export KUBE_HARNESS_BIN / OLM_HARNESS_BIN
    .venv/bin/python -m tests.tools.build --list           # what is cached, without building

Each binary is built from a Go module of this directory (``kubernetes-1.32/``: kube-apiserver and kubectl 1.32;
``kubernetes-1.36/``: kube-apiserver 1.36; ``olm/``: operator-controller and catalogd; ``go.mod`` and ``go.sum`` pin
every dependency) with CGO off and ``-trimpath``, through the Go module
proxy. The result is cached outside the checkout, in ``$UPGRADE_GATE_TEST_BIN`` or
``~/.cache/upgrade-gate/test-bin``, in a directory keyed by the binary's name, its module version and a hash of
everything that shapes it (every file of the module: ``go.mod``, ``go.sum``, a stand-in module it replaces a
dependency with; package, tags, linker flags, Go version, ``GOEXPERIMENT``).
A build runs in ``<key>.partial`` and becomes ``<key>`` by one rename once its ``build.json`` is written, so a
killed build is never used: its leftovers are removed and it is built again. ``bin/`` holds one symlink per
binary, the directory the harnesses take as ``KUBE_HARNESS_BIN`` and ``OLM_HARNESS_BIN`` (older builds of a binary
are removed once a newer key is linked); where a binary cannot
be built, ``bin/NAME.why`` says why in one line, and the tests that need it skip with that line.

Exit codes: 0 when every binary is there, 1 when one could not be built (one ``build: NAME: reason`` line each on
stderr), 2 on bad usage. A plain ``pytest`` never runs this: building takes minutes (about 8 for all five on 2
cores with empty Go caches, module downloads included); when everything is cached it takes well under a second and
prints only the bin directory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The build tag operator-controller's Makefile sets: without it the image library wants gpgme through cgo.
OLM_TAGS = ("containers_image_openpgp",)
KUBE_APISERVER = "k8s.io/kubernetes/cmd/kube-apiserver"
OLM_MODULE = "github.com/operator-framework/operator-controller"


@dataclass(frozen=True)
class Target:
    """One binary: its file name, the tool module (a directory here) and the package built from it."""

    name: str
    module: str
    package: str
    requires: str  # the module whose version names the binary
    tags: tuple[str, ...] = ()

    @property
    def directory(self) -> Path:
        return HERE / self.module

    def version(self) -> str:
        """The version of ``requires`` in the tool module's go.mod (``v1.32.13``)."""
        text = (self.directory / "go.mod").read_text("utf-8")
        found = re.search(rf"^\s*(?:require\s+)?{re.escape(self.requires)}\s+(v\S+)", text, re.MULTILINE)
        if found is None:
            raise BuildError(f"{self.directory / 'go.mod'} requires no {self.requires}")
        return found.group(1)

    def ldflags(self) -> str:
        """Kubernetes' version stamp, as its own build sets it (``GET /version`` answers it), else nothing."""
        if self.requires != "k8s.io/kubernetes":
            return ""
        version = self.version()
        major, minor = version.lstrip("v").split(".")[:2]
        stamp = {"gitVersion": version, "gitMajor": major, "gitMinor": minor, "gitTreeState": "clean"}
        return " ".join(f"-X k8s.io/component-base/version.{key}={value}" for key, value in stamp.items())


TARGETS = (
    Target("kube-apiserver", "kubernetes-1.32", KUBE_APISERVER, "k8s.io/kubernetes"),
    Target("kube-apiserver-1.36", "kubernetes-1.36", KUBE_APISERVER, "k8s.io/kubernetes"),
    Target("kubectl", "kubernetes-1.32", "k8s.io/kubernetes/cmd/kubectl", "k8s.io/kubernetes"),
    Target("catalogd", "olm", f"{OLM_MODULE}/cmd/catalogd", OLM_MODULE, OLM_TAGS),
    Target("operator-controller", "olm", f"{OLM_MODULE}/cmd/operator-controller", OLM_MODULE, OLM_TAGS),
)


class BuildError(Exception):
    """A binary that cannot be built here; the message is one line that says why."""


def cache_root() -> Path:
    """``$UPGRADE_GATE_TEST_BIN``, else ``$XDG_CACHE_HOME/upgrade-gate/test-bin`` (``~/.cache`` by default)."""
    configured = os.environ.get("UPGRADE_GATE_TEST_BIN")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "upgrade-gate" / "test-bin"


def bin_dir() -> Path:
    """The directory of symlinks the harnesses take (it may not exist yet)."""
    return cache_root() / "bin"


def why_missing(name: str, directory: Path | None = None) -> str:
    """One line saying why ``name`` is not in ``directory`` (default: the cache's bin directory)."""
    directory = directory or bin_dir()
    note = directory / f"{name}.why"
    if note.is_file():
        return f"{name} could not be built: {note.read_text('utf-8').strip()}"
    return f"no {name} in {directory} (build it with: python -m tests.tools.build)"


def go_environment() -> tuple[str, dict[str, str]]:
    """The Go version and the environment every build runs with; ``BuildError`` without a usable ``go``."""
    go = shutil.which("go")
    if go is None:
        raise BuildError("no go command on PATH: install Go 1.26 or newer to build the test binaries")
    done = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BuildError(f"go env failed: {_last_line(done.stderr)}")
    version = done.stdout.strip()
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false"}
    minor = re.match(r"go1\.(\d+)", version)
    if minor and int(minor.group(1)) >= 27:
        # Go 1.27's json/v2 default makes the apiserver serve malformed OpenAPI (MutatingAdmissionPolicy and
        # server-side apply then fail): build with the v1 encoder, as Kubernetes' own 1.27 builds do.
        experiments = [e for e in env.get("GOEXPERIMENT", "").split(",") if e]
        env["GOEXPERIMENT"] = ",".join([*experiments, "nojsonv2"])
    return version, env


def key(target: Target, go_version: str, env: dict[str, str]) -> str:
    """``NAME-VERSION-HASH``: what the cached binary is, and a hash of everything that shapes it (every file of
    the tool module's directory, where go.mod, go.sum and any stand-in module it points a ``replace`` at live)."""
    digest = hashlib.sha256()
    sources = sorted(path for path in target.directory.rglob("*") if path.is_file())  # go.mod, go.sum, stand-ins
    for part in (
        *(f"{path.relative_to(target.directory)}\n".encode() + path.read_bytes() for path in sources),
        target.package.encode(),
        ",".join(target.tags).encode(),
        target.ldflags().encode(),
        go_version.encode(),
        env.get("GOEXPERIMENT", "").encode(),
    ):
        digest.update(hashlib.sha256(part).digest())
    return f"{target.name}-{target.version()}-{digest.hexdigest()[:12]}"


def build(target: Target, destination: Path, go_version: str, env: dict[str, str], *, progress: bool) -> float:
    """Build ``target`` into ``destination`` (created by one rename when complete); the seconds it took.

    ``BuildError`` with the Go command's reason (a module the proxy does not serve, no network, a compile error).
    """
    partial = destination.with_name(destination.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)  # a killed build's leftovers
    partial.mkdir(parents=True)
    argv = ["go", "build", "-v", "-trimpath", "-o", str(partial / target.name)]
    if target.tags:
        argv += ["-tags", ",".join(target.tags)]
    if target.ldflags():
        argv += ["-ldflags", target.ldflags()]
    started = time.monotonic()
    reporter = _Progress(target, progress, started)
    process = subprocess.Popen(
        [*argv, target.package], cwd=target.directory, env=env, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    errors: list[str] = []
    for line in process.stderr:
        if line.startswith(("#", " ", "\t")) or ":" in line:
            errors.append(line.rstrip())
        else:
            reporter.compiled()  # -v names each package as it is compiled
    reporter.stop()
    if process.wait() != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise BuildError(_reason(target, env, errors))
    seconds = time.monotonic() - started
    record = {
        "name": target.name,
        "module": target.requires,
        "version": target.version(),
        "package": target.package,
        "go": go_version,
        "goexperiment": env.get("GOEXPERIMENT", ""),
        "seconds": round(seconds, 1),
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (partial / "build.json").write_text(json.dumps(record, indent=2) + "\n", "utf-8")
    shutil.rmtree(destination, ignore_errors=True)
    partial.rename(destination)
    return seconds


def _reason(target: Target, env: dict[str, str], errors: list[str]) -> str:
    """One line for a failed build: the module of the build list that cannot be had (``go list -m all`` names it,
    say a module the proxy refuses), where one cannot, else Go's last error."""
    listed = subprocess.run(
        ["go", "list", "-m", "all"], cwd=target.directory, env=env, capture_output=True, text=True, check=False
    )
    text = " ".join(listed.stderr.removeprefix("go: ").split())
    refused = re.search(r"(\S+@\S+): reading \S+: (\d{3} [A-Za-z ]+?)(?: server response|$)", text)
    if refused:
        return f"the Go module proxy does not serve {refused.group(1)} ({refused.group(2).strip()})"
    if listed.returncode != 0 and text:
        return text
    return next((line.strip() for line in reversed(errors) if line.strip()), "go build failed")


def _last_line(text: str) -> str:
    return next((line for line in reversed(text.strip().splitlines()) if line.strip()), "")


class _Progress:
    """A progress line while ``go build -v`` compiles: packages compiled and time taken, at most every 2 s on a
    terminal (rewritten in place) and every 60 s otherwise (one line each)."""

    def __init__(self, target: Target, enabled: bool, started: float) -> None:
        self.label = f"{target.name} {target.version()}"
        self.enabled, self.started = enabled, started
        self.terminal = sys.stderr.isatty()
        self.count, self.shown = 0, started
        self.lock = threading.Lock()
        if enabled:
            self._write(f"building {self.label} ({target.package})", final=True)

    def compiled(self) -> None:
        with self.lock:
            self.count += 1
            now = time.monotonic()
            if self.enabled and now - self.shown >= (2 if self.terminal else 60):
                self.shown = now
                self._write(f"  {self.label}: {self.count} packages compiled, {_clock(now - self.started)}")

    def stop(self) -> None:
        if self.enabled and self.terminal:
            sys.stderr.write("\r\033[K")

    def _write(self, text: str, *, final: bool = False) -> None:
        if self.terminal and not final:
            sys.stderr.write(f"\r\033[K{text}")
        else:
            sys.stderr.write(f"{text}\n")
        sys.stderr.flush()


def _clock(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def link(name: str, binary: Path) -> None:
    """Point ``bin/NAME`` at ``binary`` (replacing the old link in one rename) and drop any ``NAME.why``."""
    directory = bin_dir()
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / f".{name}.new"
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(binary)
    temporary.replace(directory / name)
    (directory / f"{name}.why").unlink(missing_ok=True)


def unavailable(name: str, reason: str) -> None:
    """Record in ``bin/NAME.why`` why ``name`` could not be built, and remove a stale link."""
    directory = bin_dir()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).unlink(missing_ok=True)
    (directory / f"{name}.why").write_text(reason + "\n", "utf-8")


def ensure(targets: Sequence[Target], *, progress: bool = True) -> dict[str, str]:
    """Build each of ``targets`` that is not cached; ``{name: reason}`` for those that could not be built."""
    failed: dict[str, str] = {}
    try:
        go_version, env = go_environment()
    except BuildError as error:
        for target in targets:
            if not (bin_dir() / target.name).exists():
                unavailable(target.name, str(error))
                failed[target.name] = str(error)
        return failed
    for target in targets:
        destination = cache_root() / key(target, go_version, env)
        if not (destination / "build.json").is_file():
            try:
                seconds = build(target, destination, go_version, env, progress=progress)
            except BuildError as error:
                unavailable(target.name, str(error))
                failed[target.name] = str(error)
                continue
            if progress:
                print(f"built {target.name} {target.version()} in {_clock(seconds)}", file=sys.stderr)
        link(target.name, destination / target.name)
        prune(target.name, keep=destination)
    return failed


def prune(name: str, keep: Path) -> None:
    """Remove the cached builds of ``name`` other than ``keep`` (older keys: another go.mod, Go, flags)."""
    for record in cache_root().glob("*/build.json"):
        if record.parent != keep and json.loads(record.read_text("utf-8")).get("name") == name:
            shutil.rmtree(record.parent, ignore_errors=True)


def listing() -> list[str]:
    """One line per binary: the cached build it links to, or why it is missing."""
    lines = []
    for target in TARGETS:
        path = bin_dir() / target.name
        record = path.resolve().parent / "build.json"
        if path.exists() and record.is_file():
            built = json.loads(record.read_text("utf-8"))
            shape = f"{built['version']:<10} {built['go']:<10} {built['seconds']:>6.1f} s"
            lines.append(f"{target.name:<20} {shape}  {path.resolve()}")
        else:
            lines.append(f"{target.name:<20} {why_missing(target.name)}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.tools.build",
        description="Build the kube-apiserver (1.32, 1.36), kubectl, operator-controller and catalogd binaries "
        "the integration tests run, from the Go modules under tests/tools/, into a cache outside the checkout.",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="binaries to build (default: all)")
    parser.add_argument("--env", action="store_true", help="print shell exports of KUBE_HARNESS_BIN, OLM_HARNESS_BIN")
    parser.add_argument("--list", action="store_true", help="show what is cached; build nothing")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    arguments = parser.parse_args(argv)
    known = {target.name: target for target in TARGETS}
    unknown = [name for name in arguments.names if name not in known]
    if unknown:
        parser.error(f"unknown binary {unknown[0]!r} (have: {', '.join(known)})")
    if arguments.list:
        print("\n".join(listing()))
        return 0
    targets = [known[name] for name in arguments.names] or list(TARGETS)
    failed = ensure(targets, progress=not arguments.quiet)
    for name, reason in failed.items():
        print(f"build: {name}: {reason}", file=sys.stderr)
    if arguments.env:
        print(f"export KUBE_HARNESS_BIN={bin_dir()}\nexport OLM_HARNESS_BIN={bin_dir()}")
    else:
        print(bin_dir())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
