"""Upgrade edges from the installed bundle (operator-controller ``filter.legacySuccessor``).

A bundle B succeeds the installed bundle I when, in a considered channel, the entry named B has
``replaces == I.name``, or ``I.name in skips``, or a ``skipRange`` (blang/semver v4) containing I's version.
One hop only; a skipRange that does not parse is silently ignored, as upstream. When several entries give
an edge to the same bundle, the one reported is deterministic: replaces before skips before skipRange,
then the first considered channel.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from webhook.errors import InvalidConstraint
from webhook.olm.catalog import Bundle, Channel, ChannelEntry, VersionRelease
from webhook.olm.resolve.extension import InstalledBundle
from webhook.versions import SkipRange, parse_skip_range

_KIND_ORDER = {"replaces": 0, "skips": 1, "skipRange": 2}


@dataclass(frozen=True, slots=True)
class Edge:
    """How the resolved bundle was reached.

    ``kind`` is ``replaces``, ``skips`` or ``skipRange`` (an upgrade edge of entry ``entry`` in
    ``channel``, with ``value`` the replaced name, skipped name or range), ``installed`` (the installed
    bundle resolved to itself: no upgrade), or ``none`` (no edge needed: a first install, or
    ``SelfCertified`` with no catalog edge).
    """

    kind: str
    channel: str | None = None
    entry: str | None = None
    value: str | None = None

    def describe(self) -> str:
        """A short sentence for text output."""
        if self.kind == "replaces":
            return f"{self.entry} replaces {self.value} in channel {self.channel}"
        if self.kind == "skips":
            return f"{self.entry} skips {self.value} in channel {self.channel}"
        if self.kind == "skipRange":
            return f'{self.entry} has skipRange "{self.value}" in channel {self.channel}'
        if self.kind == "installed":
            return "the installed bundle is the newest candidate"
        return "no upgrade edge needed"


@functools.lru_cache(maxsize=8192)
def skip_range(text: str) -> SkipRange | None:
    """The parsed ``olm.skipRange``, or ``None`` when it does not parse (upstream ignores it)."""
    try:
        return parse_skip_range(text)
    except InvalidConstraint:
        return None


@dataclass(frozen=True, slots=True)
class Successors:
    """The successors of one installed bundle within the considered channels, computed once."""

    installed: InstalledBundle
    installed_version: VersionRelease
    channels: tuple[Channel, ...]
    edges: dict[str, Edge]

    @classmethod
    def of(cls, installed: InstalledBundle, version: VersionRelease, channels: tuple[Channel, ...]) -> Successors:
        """Index every entry of ``channels`` that has an edge from ``installed`` (by bundle name)."""
        edges: dict[str, Edge] = {}
        for channel in channels:
            for entry in channel.entries:
                edge = _edge(entry, channel.name, installed.name, version)
                known = edges.get(entry.name)
                if edge is not None and (known is None or _KIND_ORDER[edge.kind] < _KIND_ORDER[known.kind]):
                    edges[entry.name] = edge
        return cls(installed, version, channels, edges)

    def edge(self, bundle: Bundle) -> Edge | None:
        """The upgrade edge leading to ``bundle``, or ``None``."""
        return self.edges.get(bundle.name)


def _edge(entry: ChannelEntry, channel: str, installed_name: str, installed: VersionRelease) -> Edge | None:
    if entry.replaces == installed_name:
        return Edge("replaces", channel, entry.name, entry.replaces)
    if installed_name in entry.skips:
        return Edge("skips", channel, entry.name, installed_name)
    if entry.skip_range:
        parsed = skip_range(entry.skip_range)
        if parsed is not None and parsed.admits(installed.version):
            return Edge("skipRange", channel, entry.name, entry.skip_range)
    return None
