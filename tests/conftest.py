"""Session-wide fixtures: one real kube-apiserver for every integration test that asks for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import apiserver as harness


@pytest.fixture(scope="session")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.ApiServer]:
    """A real kube-apiserver 1.32 with etcd on loopback, shared by the session; skipped when the harness is absent."""
    if not harness.harness_path().is_file():
        pytest.skip(
            f"no kube-apiserver harness at {harness.harness_path()} (set UPGRADE_GATE_KUBE_HARNESS to run the "
            "integration tests against a real API server)"
        )
    run = tmp_path_factory.mktemp("kube")
    server = harness.start(run)
    try:
        yield server
    finally:
        harness.stop(run)
