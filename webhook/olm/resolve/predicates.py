"""Bundle predicates that explain themselves (operator-controller ``catalogmetadata/filter``).

Each predicate is a small frozen object: calling it on a ``Bundle`` says whether the bundle stays a
candidate, and ``reason(bundle)`` says in a sentence why it was dropped. The resolver applies them in order
and records the first failing predicate's reason for each dropped bundle.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from webhook.olm.catalog import Bundle, Channel, VersionRelease
from webhook.olm.resolve.successors import Successors
from webhook.versions import Constraint


class Predicate(Protocol):
    """A named test on a bundle."""

    def __call__(self, bundle: Bundle) -> bool:
        """True if ``bundle`` remains a candidate."""
        ...

    def reason(self, bundle: Bundle) -> str:
        """Why ``bundle`` was dropped (called only when ``self(bundle)`` is false)."""
        ...


def channel_list(names: Iterable[str]) -> str:
    """Go's ``%v`` of a ``[]string``: ``[a b]``, the form upstream's messages use."""
    return "[" + " ".join(names) + "]"


@dataclass(frozen=True, slots=True)
class InAnyChannel:
    """Upstream ``InAnyChannel``: the bundle is an entry (by name) of at least one of these channels."""

    channels: tuple[Channel, ...]
    requested: tuple[str, ...]
    names: frozenset[str]

    @classmethod
    def of(cls, channels: tuple[Channel, ...], requested: tuple[str, ...]) -> InAnyChannel:
        """The predicate for the package channels selected by the requested channel names."""
        return cls(channels, requested, frozenset(e.name for c in channels for e in c.entries))

    def __call__(self, bundle: Bundle) -> bool:
        return bundle.name in self.names

    def reason(self, bundle: Bundle) -> str:
        return f"not in channels {channel_list(self.requested)}"


@dataclass(frozen=True, slots=True)
class InVersionRange:
    """Upstream ``InSemverRange``: the bundle's version (release stripped) satisfies ``spec.version``.

    A bundle whose version does not parse never matches.
    """

    constraint: Constraint
    text: str

    def __call__(self, bundle: Bundle) -> bool:
        vr = bundle.version_release
        return vr is not None and self.constraint.admits(vr.version)

    def reason(self, bundle: Bundle) -> str:
        if bundle.version_release is None:
            return f"version {bundle.version_text!r} does not parse, so it matches no range"
        return f'version {bundle.version_release} is outside the range "{self.text}"'


@dataclass(frozen=True, slots=True)
class SuccessorOf:
    """Upstream ``SuccessorsOf``: an upgrade edge from the installed bundle, or the installed version itself."""

    successors: Successors

    def __call__(self, bundle: Bundle) -> bool:
        return self.successors.edge(bundle) is not None or self.is_installed(bundle.version_release)

    def is_installed(self, vr: VersionRelease | None) -> bool:
        """True if ``vr`` is exactly the installed version and release (upstream ``ExactVersionRelease``)."""
        return vr is not None and vr.same_as(self.successors.installed_version)

    def reason(self, bundle: Bundle) -> str:
        installed = self.successors.installed
        where = channel_list(c.name for c in self.successors.channels)
        return f"no replaces, skips or skipRange edge from {installed.name} ({installed.version}) in channels {where}"
