"""Fake forges for tests, one per forge ``webhook.io.forges`` speaks: each is the REST subset the real client
uses, in the forge's documented shapes, in memory; the real client runs over its ``transport`` (``client()``), or
any client over its loopback ``url``."""

from webhook.io.forges.fake.base import FakeForge
from webhook.io.forges.fake.github import FakeGitHub
from webhook.io.forges.fake.gitlab import FakeGitLab

__all__ = ["FakeForge", "FakeGitHub", "FakeGitLab"]
