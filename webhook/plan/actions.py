"""The sync loop's vocabulary as enums: what a ``Change`` does (``Kind``), what becomes of a subject's branch
(``BranchAction``) and what the report says about a subject (``Action``).

Each is a ``StrEnum`` whose values are the words the report, the pull request bodies and ``-o json`` have always
used, so a member compares equal to its word and prints as it (``f"{Action.PROPOSED}" == "proposed"``).
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """What a ``Change`` proposes: a ClusterExtensionRevision (``propose``, ``update``, ``remove``), a catalog
    image switch, an add-on installVersion step, or several extensions' changes on one branch (``group``,
    ``grouping: per-cluster``)."""

    PROPOSE = "propose"
    UPDATE = "update"
    REMOVE = "remove"
    CATALOG_IMAGE = "catalog-image"
    ADDON_VERSION = "addon-version"
    GROUP = "group"


class BranchAction(StrEnum):
    """What to do with a subject's branch (``webhook.plan.branch_action``): ``push`` it (again) as one commit on
    the base branch, ``keep`` it (it carries exactly the change), leave it alone (``human``: a person committed
    to it), ``withdraw`` it (nothing to propose, a bot branch proposes something), or nothing (``none``)."""

    PUSH = "push"
    KEEP = "keep"
    HUMAN = "human"
    WITHDRAW = "withdraw"
    NONE = "none"


class Action(StrEnum):
    """What a cycle reports about a subject (``upgrade-gate sync``'s action column), in the report's order.

    ``proposed``/``updated``/``removed``: a branch pushed with the change; ``merged``: the proposal's change is
    in the base branch (its branch deleted); ``withdrawn``: a proposal no longer needed, its change not in the
    base branch (pull request closed unmerged, branch deleted); ``opened``: a pull request opened for a branch
    that already carried the change (its earlier opening failed); ``held``: an add-on upgrade waiting for its
    canaries; ``waiting``: a change due outside the ``schedule`` windows; ``skipped``: left alone (a person's
    commits, a pull request closed unmerged, manifests with errors); ``unchanged``: nothing to do; and the
    problems (``PROBLEMS``) ``invalid`` (a manifest that cannot be used), ``unresolved`` (an upgrade that
    cannot be worked out) and ``failed`` (a push rejected every attempt).
    """

    PROPOSED = "proposed"
    UPDATED = "updated"
    REMOVED = "removed"
    MERGED = "merged"
    WITHDRAWN = "withdrawn"
    OPENED = "opened"
    HELD = "held"
    WAITING = "waiting"
    SKIPPED = "skipped"
    UNCHANGED = "unchanged"
    INVALID = "invalid"
    UNRESOLVED = "unresolved"
    FAILED = "failed"


PROBLEMS = (Action.INVALID, Action.UNRESOLVED, Action.FAILED)
"""Actions that mean something needs a person: ``upgrade-gate sync`` exits 1 when an entry has one."""
