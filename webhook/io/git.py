"""Git, through the ``git`` command line: the sync loop's working clone, its proposal branches and pushes.

The working clone is the sync loop's own (``--workdir``): it is reset to the remote's base branch each cycle
and never holds local work. Commits are made with ``git fast-import`` (one process for every branch of a
cycle) and pushed with one ``git push --porcelain`` whose every ref carries ``--force-with-lease`` with the
head the plan was made from (or "must not exist"): a branch someone pushed to in between is rejected, never
overwritten, and ``push`` reports it so the caller retries from a fresh base. Only ``refs/heads/<prefix>*``
is ever pushed; the base branch never is.

HTTPS credentials are handed to git by a credential helper reading the subprocess environment
(``UPGRADE_GATE_GIT_USERNAME``/``PASSWORD`` from ``SyncSettings``), so they are in no URL, file or log;
SSH uses ``GIT_SSH_COMMAND`` as git does. Every failure raises ``GitError`` with git's own stderr line.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from webhook.errors import GitError
from webhook.plan import BranchState, FileChange

_CREDENTIAL_HELPER = (
    '!f() { test "$1" = get || exit 0; '
    'printf "username=%s\\npassword=%s\\n" "$UPGRADE_GATE_GIT_USERNAME" "$UPGRADE_GATE_GIT_PASSWORD"; }; f'
)
_PENDING = "refs/upgrade-gate/pending/"


@dataclass(frozen=True, slots=True)
class Author:
    """The bot's author and committer identity: git's author (and committer) name and email."""

    name: str
    email: str


@dataclass(frozen=True, slots=True)
class Credentials:
    """HTTPS user name and password (or token) for the remote; empty = none (SSH or anonymous)."""

    username: str = ""
    password: str = ""


@dataclass(frozen=True, slots=True)
class NewCommit:
    """A commit to make on ``parent``: ``files`` applied to its tree, on ``branch``."""

    branch: str
    parent: str
    message: str
    files: tuple[FileChange, ...]


@dataclass(frozen=True, slots=True)
class RefUpdate:
    """Set remote branch ``branch`` to ``new`` (``None`` deletes it) if it is still at ``expected``
    (``None``: it must not exist)."""

    branch: str
    new: str | None
    expected: str | None


@dataclass(frozen=True, slots=True)
class PushResult:
    """Per branch: accepted, or rejected with git's reason (stale lease, hook refusal, ...)."""

    accepted: tuple[str, ...]
    rejected: Mapping[str, str]


class Repo:
    """The sync loop's working clone of ``url`` at ``path`` (created by ``open``)."""

    def __init__(self, path: Path, url: str, credentials: Credentials, *, timeout_s: float = 300.0) -> None:
        self.path = path
        self.url = url
        self.timeout_s = timeout_s
        self._env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
        if credentials.username or credentials.password:
            self._env["UPGRADE_GATE_GIT_USERNAME"] = credentials.username
            self._env["UPGRADE_GATE_GIT_PASSWORD"] = credentials.password

    @classmethod
    def open(cls, url: str, path: Path, credentials: Credentials = Credentials()) -> Repo:
        """The working clone at ``path``, cloned from ``url`` (``--no-checkout``) when missing.

        A local path as ``url`` is made absolute. Raises ``GitError`` when the clone fails.
        """
        if "://" not in url and not url.startswith("git@") and Path(url).exists():
            url = str(Path(url).resolve())
        repo = cls(path, url, credentials)
        if not (path / ".git").is_dir():
            path.parent.mkdir(parents=True, exist_ok=True)
            repo.run("clone", "--quiet", "--no-checkout", "--", url, str(path), cwd=path.parent)
        else:
            repo.run("remote", "set-url", "origin", url)
        return repo

    def run(self, *args: str, stdin: bytes | None = None, cwd: Path | None = None, check: bool = True) -> str:
        """``git <args>`` in the clone; its stdout. Raises ``GitError`` ``git <command>: <stderr>`` on failure."""
        return self.run_bytes(*args, stdin=stdin, cwd=cwd, check=check).decode("utf-8", "replace")

    def run_bytes(self, *args: str, stdin: bytes | None = None, cwd: Path | None = None, check: bool = True) -> bytes:
        """``run``, with stdout as bytes."""
        argv = ["git", "-c", "credential.helper=", "-c", f"credential.helper={_CREDENTIAL_HELPER}", *args]
        try:
            done = subprocess.run(
                argv,
                cwd=cwd or self.path,
                input=stdin,
                capture_output=True,
                env=self._env,
                timeout=self.timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise GitError(f"git {args[0]}: {error}") from None
        if check and done.returncode != 0:
            message = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitError(f"git {args[0]}: {message[-1] if message else f'exit status {done.returncode}'}")
        return done.stdout

    def fetch(self) -> None:
        """Fetch every branch of the remote, pruning deleted ones. Raises ``GitError`` when unreachable."""
        self.run("fetch", "--quiet", "--prune", "origin", "+refs/heads/*:refs/remotes/origin/*")

    def default_branch(self) -> str:
        """The remote's default branch (its ``HEAD``), ``main`` when the remote does not say."""
        self.run("remote", "set-head", "origin", "--auto", check=False)
        head = self.run("symbolic-ref", "--quiet", "refs/remotes/origin/HEAD", check=False).strip()
        return head.removeprefix("refs/remotes/origin/") or "main"

    def checkout(self, branch: str) -> str:
        """Check out the remote's ``branch`` (detached, forced, untracked files removed); its commit."""
        sha = self.resolve(f"refs/remotes/origin/{branch}")
        if sha is None:
            raise GitError(f"git checkout: the remote has no branch {branch}")
        self.run("checkout", "--quiet", "--force", "--detach", sha)
        self.run("clean", "-d", "--force", "--quiet", "-x")
        return sha

    def resolve(self, ref: str) -> str | None:
        """The commit ``ref`` names, or ``None``."""
        sha = self.run("rev-parse", "--quiet", "--verify", f"{ref}^{{commit}}", check=False).strip()
        return sha or None

    def remote_branches(self, prefix: str) -> dict[str, str]:
        """Remote branches named ``<prefix>...``: ``{branch: head}``."""
        output = self.run("for-each-ref", "--format=%(objectname) %(refname)", f"refs/remotes/origin/{prefix}")
        found = {}
        for line in output.splitlines():
            sha, ref = line.split(" ", 1)
            found[ref.removeprefix("refs/remotes/origin/")] = sha
        return found

    def branch_states(self, base: str, heads: Mapping[str, str], bot: Author) -> dict[str, BranchState]:
        """For each branch head, who committed since ``base`` and, for one bot commit, its change.

        Two git processes in all (``log --stdin``, ``diff-tree --stdin``) plus one ``cat-file --batch``.
        """
        if not heads:
            return {}
        stdin = "".join(f"{sha}\n" for sha in sorted(set(heads.values()))) + f"^{base}\n"
        commits: dict[str, tuple[list[str], str, str]] = {}
        for line in self.run("log", "--stdin", "--format=%H %P%x1f%ae%x1f%ce", stdin=stdin.encode()).splitlines():
            shas, author, committer = line.split("\x1f")
            sha, *parents = shas.split()
            commits[sha] = (parents, author, committer)
        walked = {branch: _walk(head, commits) for branch, head in heads.items()}
        single = sorted({w[0] for w in walked.values() if len(w) == 1 and _by(commits[w[0]], bot)})
        diffs = self._diffs(single)
        states = {}
        for branch, head in heads.items():
            chain = walked[branch]
            foreign = sorted({commits[c][1] for c in chain if not _by(commits[c], bot)})
            changes = diffs.get(chain[0]) if len(chain) == 1 and not foreign else None
            states[branch] = BranchState(head, tuple(foreign), changes)
        return states

    def commit(self, commits: Sequence[NewCommit], author: Author, now: datetime.datetime) -> dict[str, str]:
        """Make every commit with one ``git fast-import``; ``{branch: new commit}``."""
        if not commits:
            return {}
        stamp = f"{int(now.timestamp())} +0000"
        who = f"{author.name} <{author.email}> {stamp}"
        stream = bytearray()
        for mark, item in enumerate(commits, start=1):
            message = item.message.encode()
            stream += f"commit {_PENDING}{item.branch}\nmark :{mark}\nauthor {who}\ncommitter {who}\n".encode()
            stream += b"data %d\n%s\nfrom %s\n" % (len(message), message, item.parent.encode())
            for change in item.files:
                if change.content is None:
                    stream += f"D {change.path}\n".encode()
                else:
                    content = change.content.encode()
                    stream += b"M 100644 inline %s\ndata %d\n%s\n" % (change.path.encode(), len(content), content)
            stream += b"\n"
        with tempfile.TemporaryDirectory() as scratch:
            marks = Path(scratch) / "marks"
            self.run("fast-import", "--quiet", "--force", f"--export-marks={marks}", stdin=bytes(stream))
            shas = dict(line.split(" ", 1) for line in marks.read_text().splitlines())
        return {item.branch: shas[f":{mark}"] for mark, item in enumerate(commits, start=1)}

    def push(self, updates: Iterable[RefUpdate], prefix: str, base: str) -> PushResult:
        """Push every update at once with a lease per ref; raises ``GitError`` when the remote is unreachable
        (no status line per ref), or when asked to push the base branch or a branch outside ``prefix``."""
        updates = list(updates)
        if not updates:
            return PushResult((), {})
        args = ["push", "--porcelain", "origin"]
        for update in updates:
            if update.branch == base or not update.branch.startswith(prefix):
                raise GitError(f"git push: refusing to push {update.branch} (base {base}, prefix {prefix})")
            ref = f"refs/heads/{update.branch}"
            args.insert(2, f"--force-with-lease={ref}:{update.expected or ''}")
            args.append(f"{update.new}:{ref}" if update.new else f":{ref}")
        output = self.run(*args, check=False)
        statuses = {}
        for line in output.splitlines():
            parts = line.split("\t")
            if len(parts) >= 3 and ":" in parts[1]:
                statuses[parts[1].rsplit(":", 1)[1].removeprefix("refs/heads/")] = (parts[0], parts[2])
        missing = [u.branch for u in updates if u.branch not in statuses]
        if missing:
            self.run(*args)  # the whole push failed (unreachable remote, auth): raise with git's message
            raise GitError(f"git push: no status for {', '.join(missing)}")
        accepted = tuple(b for b, (flag, _) in statuses.items() if flag != "!")
        rejected = {b: summary for b, (flag, summary) in statuses.items() if flag == "!"}
        return PushResult(accepted, rejected)

    def _diffs(self, commits: Sequence[str]) -> dict[str, tuple[FileChange, ...]]:
        if not commits:
            return {}
        output = self.run(
            "diff-tree", "-r", "--no-renames", "--stdin", stdin="".join(f"{c}\n" for c in commits).encode()
        )
        entries: dict[str, list[tuple[str, str | None]]] = {}
        current = ""
        for line in output.splitlines():
            if not line.startswith(":"):
                current = line.strip()
                entries[current] = []
                continue
            meta, path = line.split("\t", 1)
            _, _, _, blob, status = meta.split(" ")
            entries[current].append((path, None if status == "D" else blob))
        blobs = self.blobs([b for items in entries.values() for _, b in items if b])
        return {
            commit: tuple(sorted((FileChange(p, blobs[b] if b else None) for p, b in items), key=lambda f: f.path))
            for commit, items in entries.items()
        }

    def merge_base(self, base: str, head: str) -> str:
        """The best common ancestor of two commits (``git merge-base``). Raises ``GitError``."""
        return self.run("merge-base", base, head).strip()

    def tree(self, commit: str) -> dict[str, str]:
        """Every file of ``commit``'s tree: ``{repository-relative path: blob}`` (``git ls-tree -r``; links and
        submodules left out)."""
        found = {}
        for entry in self.run("ls-tree", "-r", "-z", "--full-tree", commit).split("\0"):
            if entry:
                meta, path = entry.split("\t", 1)
                mode, kind, blob = meta.split(" ")
                if kind == "blob" and mode != "120000":
                    found[path] = blob
        return found

    def changed_files(self, base: str, head: str) -> list[str]:
        """The paths that differ between two commits (both sides of a rename), sorted."""
        output = self.run("diff", "--name-only", "--no-renames", "-z", base, head)
        return sorted(path for path in output.split("\0") if path)

    def blobs(self, shas: Sequence[str]) -> dict[str, str]:
        """The UTF-8 text of each blob (``git cat-file --batch``; undecodable bytes replaced)."""
        if not shas:
            return {}
        data = self.run_bytes("cat-file", "--batch", stdin="".join(f"{s}\n" for s in shas).encode())
        found: dict[str, str] = {}
        position = 0
        while position < len(data):
            header_end = data.index(b"\n", position)
            sha, _, size = data[position:header_end].decode().split(" ")
            start = header_end + 1
            found[sha] = data[start : start + int(size)].decode("utf-8", "replace")
            position = start + int(size) + 1
        return found


def _walk(head: str, commits: Mapping[str, tuple[list[str], str, str]]) -> list[str]:
    """Commits reachable from ``head`` that are not in the base, head first."""
    seen: list[str] = []
    stack = [head]
    while stack:
        sha = stack.pop()
        if sha in commits and sha not in seen:
            seen.append(sha)
            stack.extend(commits[sha][0])
    return seen


def _by(commit: tuple[list[str], str, str], bot: Author) -> bool:
    return commit[1] == bot.email and commit[2] == bot.email
