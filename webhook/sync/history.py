"""The history the sync plan reads about the branches it touches (``History``): the pull requests closed
unmerged (asked of the forge per head branch, as GitHub's and GitLab's APIs answer, once per cycle) and whether
a bot branch's change landed in the base branch (git). Read between the two halves of the plan
(``webhook.sync.planning.wanted_history`` says which branches), so no plan step does I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

from webhook.io import Repo
from webhook.io.forges import PullRequest
from webhook.manifests import read_text
from webhook.plan import BranchState
from webhook.sync.inputs import CycleInputs, Snapshot
from webhook.sync.timings import Timings


@dataclass(frozen=True, slots=True)
class History:
    """What the forge and git say about the branches a plan touches: the pull requests ``closed`` unmerged, by
    head branch, and the bot branches whose change ``landed`` in the base branch."""

    closed: Mapping[str, tuple[PullRequest, ...]]
    landed: frozenset[str]


def read_history(
    repo: Repo,
    inputs: CycleInputs,
    snapshot: Snapshot,
    wanted: tuple[Collection[str], Collection[str]],
    *,
    closed: MutableMapping[str, tuple[PullRequest, ...]],
    timings: Timings,
) -> History:
    """The pull requests closed unmerged of the branches ``wanted[0]`` (each asked of the forge once per cycle:
    ``closed`` keeps the answers across attempts) and which bot branches of ``wanted[1]`` landed."""
    forge = inputs.forge
    for branch in sorted(wanted[0]):
        if forge is not None and branch not in closed:
            with timings.timed("forge"):
                closed[branch] = tuple(forge.closed_pull_requests(branch, inputs.config.base_branch))
    landed = frozenset(b for b in wanted[1] if _landed(repo, snapshot.base_sha, snapshot.states[b]))
    return History(dict(closed), landed)


def _landed(repo: Repo, base_sha: str, state: BranchState) -> bool:
    """Whether a bot branch's change is in the base branch: its head is (a merge or a fast-forward), or every
    file its one commit writes reads the same there (a squash or rebase merge)."""
    if repo.merge_base(base_sha, state.head) == state.head:
        return True
    return bool(state.changes) and all(_reads(repo.path / c.path, c.content) for c in state.changes or ())


def _reads(path: Path, content: str | None) -> bool:
    """Whether the checked-out file at ``path`` has ``content`` (``None``: the file is absent)."""
    if content is None:
        return not path.exists()
    return path.is_file() and read_text(path) == content
