"""Git forges' pull-request APIs (GitHub, GitLab) over an injectable transport, and a fake of each for tests."""

from webhook.io.forges.api import Forge, ForgeConfig, PullRequest, make_forge

__all__ = ["Forge", "ForgeConfig", "PullRequest", "make_forge"]
