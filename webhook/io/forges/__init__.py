"""Git forges' pull-request APIs (GitHub, GitLab) over an injectable transport, and a fake of each for tests.

Modules: ``base`` (the ``Forge`` protocol, ``ForgeConfig``, ``PullRequest``, the HTTP ``Transport``), one client
per forge (``github``, ``gitlab``) and ``fake`` (a fake of each)."""

from __future__ import annotations

from webhook.io.forges.base import Forge, ForgeConfig, PullRequest, Transport, urllib_transport
from webhook.io.forges.github import GitHub
from webhook.io.forges.gitlab import GitLab

__all__ = ["Forge", "ForgeConfig", "PullRequest", "make_forge"]


def make_forge(
    config: ForgeConfig, token: str, *, timeout_s: float = 30.0, transport: Transport | None = None
) -> Forge | None:
    """The forge ``config`` names, or ``None`` for ``type: none`` (branches are pushed, no pull request);
    ``transport`` replaces the HTTP transport (``urllib_transport``), e.g. with a fake forge's."""
    if config.type == "github":
        return GitHub(config.url, config.repository, token, timeout_s, transport or urllib_transport)
    if config.type == "gitlab":
        return GitLab(config.url, config.repository, token, timeout_s, transport or urllib_transport)
    return None
