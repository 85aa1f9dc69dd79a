"""A GitOps world per test: a bare remote, a human's clone, the sync loop's workdir, and a fake GitHub.

Git runs with no global or system configuration, and a human identity in the environment, so the tests run
on a fresh machine. The repository is ``tests/data/gitops/repo`` plus ``fbc/certified-operators``: packages
copied from the bundled real catalog (optionally cut at a version, to play a catalog update).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from webhook.io.forges.fake import FakeForge, FakeGitHub, FakeGitLab
from webhook.sync.cycle import SyncOptions, run_cycle
from webhook.sync.report import Report

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "catalogs" / "certified-operators-v4.22"
DATA = ROOT / "tests" / "data" / "gitops" / "repo"
PACKAGES = ("cloudnative-pg", "crunchy-postgres-operator")
NOW = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)
HUMAN = "hannah@example.com"
BOT = {
    f"GIT_{role}_{key}": value
    for role in ("AUTHOR", "COMMITTER")
    for key, value in (("NAME", "upgrade-gate"), ("EMAIL", "upgrade-gate@noreply.invalid"))
}


def git(cwd: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    environment = {**os.environ, **(env or {})}
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, env=environment)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout


class World:
    """The remote, a human's clone of it and the sync loop's options."""

    def __init__(self, tmp: Path, forge: FakeForge) -> None:
        self.tmp = tmp
        self.remote = tmp / "remote.git"
        self.human = tmp / "human"
        self.workdir = tmp / "sync" / "clone"
        self.forge = forge
        self.now = NOW
        git(tmp, "init", "--quiet", "--bare", "-b", "main", str(self.remote))
        git(tmp, "clone", "--quiet", str(self.remote), str(self.human))
        shutil.copytree(DATA, self.human, dirs_exist_ok=True)
        self.set_config(lambda text: text.replace("@FORGE_URL@", forge.url))
        if isinstance(forge, FakeGitLab):
            self.set_config(lambda text: text.replace("type: github", "type: gitlab"))
            forge.add_user("platform-team")  # forge.reviewers: GitLab takes user ids
        self.copy_catalog()
        self.push("initial desired state")

    @property
    def github(self) -> FakeGitHub:
        """The fake GitHub of a world on GitHub (the default)."""
        assert isinstance(self.forge, FakeGitHub)
        return self.forge

    def set_config(self, edit: object) -> None:
        path = self.human / "upgrade-gate.yaml"
        path.write_text(edit(path.read_text()))  # type: ignore[operator]

    def copy_catalog(self, newest: dict[str, str] | None = None) -> None:
        """Copy the real packages into fbc/certified-operators, dropping bundles newer than ``newest[pkg]``."""
        for package in PACKAGES:
            limit = (newest or {}).get(package)
            target = self.human / "fbc" / "certified-operators" / package
            target.mkdir(parents=True, exist_ok=True)
            lines = []
            for line in (REAL / package / "catalog.json").read_text().splitlines():
                if not line.strip():
                    continue
                blob = json.loads(line)
                if limit and blob["schema"] == "olm.bundle" and _newer(blob, limit):
                    continue
                if limit and blob["schema"] == "olm.channel":
                    blob["entries"] = [e for e in blob["entries"] if not _newer_name(e["name"], limit)]
                lines.append(json.dumps(blob))
            (target / "catalog.json").write_text("\n".join(lines) + "\n")

    def write(self, path: str, text: str) -> None:
        (self.human / path).parent.mkdir(parents=True, exist_ok=True)
        (self.human / path).write_text(text)

    def push(self, message: str) -> None:
        git(self.human, "add", "--all")
        git(self.human, "commit", "--quiet", "--allow-empty", "-m", message)
        git(self.human, "push", "--quiet", "origin", "HEAD:main")

    def pull(self) -> None:
        git(self.human, "fetch", "--quiet", "origin")
        git(self.human, "reset", "--quiet", "--hard", "origin/main")

    def options(self, **changes: object) -> SyncOptions:
        values: dict[str, object] = {"repo": str(self.remote), "workdir": self.workdir, "clock": lambda: self.now}
        values.update(changes)
        return SyncOptions(**values)  # type: ignore[arg-type]

    def sync(self, **changes: object) -> Report:
        """One cycle; then the forge sees the branches' heads, as a real forge updates pull requests on a push."""
        report = run_cycle(self.options(**changes))
        branches = self.branches()
        for branch, head in branches.items():
            self.forge.pushed(branch, head, branches["main"])
        return report

    def branches(self) -> dict[str, str]:
        output = git(self.remote, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads")
        return dict(line.split(" ") for line in output.splitlines())

    def show(self, ref: str, path: str) -> str | None:
        done = subprocess.run(
            ["git", "show", f"{ref}:{path}"], cwd=self.remote, capture_output=True, text=True, check=False
        )
        return done.stdout if done.returncode == 0 else None

    def files(self, ref: str, directory: str = "clusters/prod/revisions") -> list[str]:
        return git(self.remote, "ls-tree", "--name-only", f"{ref}:{directory}").split()

    def approve_on(self, branch: str, revision: str, message: str = "approve") -> None:
        """A human sets ``approved: true`` in ``revision`` on the proposal ``branch`` and pushes it, then goes back
        to the branch they were on."""
        git(self.human, "fetch", "--quiet")
        git(self.human, "checkout", "--quiet", "-B", "review", f"origin/{branch}")
        self.write(revision, (self.human / revision).read_text().replace("approved: false", "approved: true"))
        git(self.human, "commit", "--quiet", "-am", message)
        git(self.human, "push", "--quiet", "origin", f"HEAD:{branch}")
        git(self.human, "checkout", "--quiet", "-")

    def merge(self, branch: str) -> None:
        """A human merges the proposal branch into main (a merge commit) and pushes."""
        self.pull()
        git(self.human, "merge", "--quiet", "--no-ff", "-m", f"Merge {branch}", f"origin/{branch}")
        git(self.human, "push", "--quiet", "origin", "HEAD:main")


def _version(name: str) -> tuple[int, ...] | None:
    text = name.rsplit(".v", 1)[-1]
    parts = text.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) and len(parts) == 3 else None


def _newer_name(name: str, limit: str) -> bool:
    version = _version(name)
    return version is None or version > tuple(int(p) for p in limit.split("."))


def _newer(blob: dict[str, object], limit: str) -> bool:
    return _newer_name(str(blob["name"]), limit)


def govern_addons(world: World, addons: str, *, applier: str) -> None:
    """Configure ``world`` for add-ons: ``addons`` is the ``addons:`` section of ``upgrade-gate.yaml``; the policy
    check runs the bundled add-on policies with the bundled settings, ``applier`` trusted as a GitOps applier (as
    a cluster that lets Argo CD apply what was reviewed in Git sets them)."""
    settings = (ROOT / "policies" / "settings.yaml").read_text()
    world.write("policies/settings.yaml", settings.replace('gitopsAppliers: ""', f'gitopsAppliers: "{applier}"'))
    bundled = [str(ROOT / "policies" / name) for name in ("addon-install-version.yaml", "addon-placements.yaml")]
    check = json.dumps({"policies": [*bundled, "policies/settings.yaml"]})
    world.set_config(lambda text: text + addons + f"policyCheck: {check}\n")


@contextlib.contextmanager
def gitops_world(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forge: type[FakeForge] = FakeGitHub
) -> Iterator[World]:
    """A ``World`` in ``tmp_path`` on ``forge``, with git configured for a fresh machine and a human's identity."""
    config = tmp_path / "gitconfig"
    config.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Hannah Human")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", HUMAN)
    with forge("example-org/clusters") as fake:
        yield World(tmp_path, fake)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    with gitops_world(tmp_path, monkeypatch) as built:
        yield built


@pytest.fixture(params=[FakeGitHub, FakeGitLab], ids=["on GitHub", "on GitLab"])
def forge_world(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """A ``World`` on each fake forge."""
    with gitops_world(tmp_path, monkeypatch, request.param) as built:
        yield built
