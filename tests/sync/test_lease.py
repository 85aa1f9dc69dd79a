"""Leader election on a coordination.k8s.io/v1 Lease with client-go's rules, against an in-memory Lease API."""

from __future__ import annotations

import copy
import datetime
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from webhook.errors import InputError
from webhook.io.kube.cluster import LeaseElector

T0 = datetime.datetime(2026, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)


class Leases:
    """``CoordinationV1Api``'s read/create/replace on one namespace, with resourceVersion conflicts."""

    def __init__(self) -> None:
        self.lease: Any = None
        self.version = 0

    def read_namespaced_lease(self, name: str, namespace: str) -> Any:
        if self.lease is None:
            raise ApiException(status=404, reason="Not Found")
        return copy.deepcopy(self.lease)

    def create_namespaced_lease(self, namespace: str, lease: Any) -> Any:
        if self.lease is not None:
            raise ApiException(status=409, reason="AlreadyExists")
        return self._store(lease)

    def replace_namespaced_lease(self, name: str, namespace: str, lease: Any) -> Any:
        assert self.lease is not None
        if lease.metadata.resource_version != self.lease.metadata.resource_version:
            raise ApiException(status=409, reason="Conflict")
        return self._store(lease)

    def _store(self, lease: Any) -> Any:
        self.version += 1
        lease.metadata.resource_version = str(self.version)
        self.lease = copy.deepcopy(lease)
        return lease


def elector(leases: Leases, identity: str, now: list[datetime.datetime]) -> LeaseElector:
    made = LeaseElector(None, "upgrade-gate", "upgrade-gate-sync", identity, duration_s=15, clock=lambda: now[0])
    made._api = leases  # type: ignore[assignment]  # the Lease API is the only thing the elector calls
    return made


def test_one_replica_leads_and_the_other_waits_until_the_lease_expires() -> None:
    leases, now = Leases(), [T0]
    first, second = elector(leases, "pod-a", now), elector(leases, "pod-b", now)
    assert first.try_acquire() and first.is_leader
    assert not second.try_acquire() and not second.is_leader
    now[0] = T0 + datetime.timedelta(seconds=10)
    assert first.try_acquire(), "the holder renews"
    now[0] = T0 + datetime.timedelta(seconds=20)
    assert not second.try_acquire(), "renewed at +10 s, the lease of 15 s still holds at +20 s"
    now[0] = T0 + datetime.timedelta(seconds=26)
    assert second.try_acquire()
    assert leases.lease is not None
    assert (leases.lease.spec.holder_identity, leases.lease.spec.lease_transitions) == ("pod-b", 1)
    assert not first.try_acquire() and not first.is_leader


def test_a_replica_that_loses_the_update_race_is_not_the_leader() -> None:
    leases, now = Leases(), [T0]
    first = elector(leases, "pod-a", now)
    first.try_acquire()
    stale = leases.read_namespaced_lease("upgrade-gate-sync", "upgrade-gate")
    now[0] = T0 + datetime.timedelta(minutes=1)
    leases.replace_namespaced_lease("upgrade-gate-sync", "upgrade-gate", copy.deepcopy(stale))
    racer = elector(leases, "pod-b", now)
    original = leases.read_namespaced_lease
    leases.read_namespaced_lease = lambda name, namespace: stale  # type: ignore[method-assign]
    assert not racer.try_acquire()
    leases.read_namespaced_lease = original  # type: ignore[method-assign]


def test_an_outage_is_logged_once_readiness_names_it_and_its_end_is_logged(caplog: Any) -> None:
    """A Lease API that fails for six rounds, then works: one warning with the reason (not six), ``problem`` set
    meanwhile, one info line when it works again."""

    class Failing(Leases):
        def __init__(self) -> None:
            super().__init__()
            self.failures = 6

        def read_namespaced_lease(self, name: str, namespace: str) -> Any:
            if self.failures:
                self.failures -= 1
                raise ApiException(status=503, reason="Service Unavailable")
            return super().read_namespaced_lease(name, namespace)

    leases, now = Failing(), [T0]
    made = elector(leases, "pod-a", now)
    seen: list[str | None] = []

    class Stop:
        def __init__(self) -> None:
            self.rounds = 0

        def is_set(self) -> bool:
            return self.rounds >= 8

        def wait(self, timeout: float) -> bool:
            seen.append(made.problem)
            self.rounds += 1
            return False

    with caplog.at_level("INFO", logger="webhook.io.kube.cluster"):
        made.keep(Stop())  # type: ignore[arg-type]
    assert seen == ["get lease upgrade-gate/upgrade-gate-sync: 503 Service Unavailable"] * 6 + [None, None]
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "leader election failing"),
        ("INFO", "leader election works again"),
    ]
    assert made.is_leader


def test_a_lease_namespace_that_does_not_exist_is_named() -> None:
    class NoNamespace(Leases):
        def create_namespaced_lease(self, namespace: str, lease: Any) -> Any:
            raise ApiException(status=404, reason="Not Found")

    made = elector(NoNamespace(), "pod-a", [T0])
    with pytest.raises(InputError, match='namespace "upgrade-gate" does not exist: the Lease upgrade-gate-sync'):
        made.try_acquire()
