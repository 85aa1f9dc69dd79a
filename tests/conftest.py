"""Session-wide fixtures: one real kube-apiserver for every integration test that asks for it, and one real OLM v1
(operator-controller and catalogd on an API server of its own) for the tests that watch it upgrade."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import apiserver as harness
from tests import olm_harness


@pytest.fixture(scope="session")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.ApiServer]:
    """A real kube-apiserver 1.32 with etcd on loopback, shared by the session; skipped (with the reason) when the
    harness or its binaries are absent."""
    with harness.running(tmp_path_factory.mktemp("kube")) as server:
        yield server


@pytest.fixture(scope="session")
def olm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[olm_harness.Olm]:
    """The real OLM v1 (Helm applier) with a local registry, on a kube-apiserver of its own (operator-controller
    reconciles every ClusterExtension, including the ones other tests write by hand); skipped with the reason when
    the harness, a binary or root is missing."""
    harness.skip_unless_available("olm", olm_harness.unavailable())
    run = tmp_path_factory.mktemp("olm")
    with olm_harness.running(run) as olm:
        yield olm
