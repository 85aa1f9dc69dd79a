"""The controller's machinery without a cluster: the work queue (client-go's semantics), the Event recorder
(client-go's deduplication), and a reconcile's writes, conflicts and refusals against an in-memory store."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import pytest

from tests.controller.test_status import NOW, extension, revision
from webhook.controller.events import Notice
from webhook.controller.queue import WorkQueue
from webhook.controller.reconciler import Reconciler, RetryLater
from webhook.controller.recorder import EventRecorder
from webhook.errors import ClusterError
from webhook.io.kube.cache import Resource
from webhook.io.kube.writer import WriteError
from webhook.objects import InMemoryObjectStore
from webhook.settings import ControllerSettings

# --- work queue -----------------------------------------------------------------------------------------------------


def test_a_key_waiting_in_the_queue_is_not_added_twice() -> None:
    queue = WorkQueue()
    for key in ("a", "b", "a"):
        queue.add(key)
    assert [queue.get(0), queue.get(0), queue.get(0)] == ["a", "b", None]


def test_a_key_added_while_processed_runs_again_after_it_is_done_never_at_once() -> None:
    queue = WorkQueue()
    queue.add("a")
    assert queue.get(0) == "a"
    queue.add("a")
    assert queue.get(0) is None, "not handed out while being processed"
    queue.done("a")
    assert queue.get(0) == "a"


def test_a_failing_key_is_retried_after_a_doubling_backoff_and_forget_resets_it() -> None:
    now = [0.0]
    queue = WorkQueue(base_s=1.0, max_s=5.0, clock=lambda: now[0])
    delays = []
    for _ in range(5):
        queue.add("a")
        assert queue.get(0) == "a"
        delays.append(queue.retry("a"))
        queue.done("a")
        assert queue.get(0) is None, "not before its backoff"
        now[0] += delays[-1]
        assert queue.get(0) == "a"
        queue.done("a")
    assert delays == [1.0, 2.0, 4.0, 5.0, 5.0]
    queue.forget("a")
    assert queue.retry("a") == 1.0


# --- Event recorder -------------------------------------------------------------------------------------------------


class Sink:
    def __init__(self, fail: bool = False) -> None:
        self.created: list[tuple[str, dict[str, Any]]] = []
        self.patched: list[tuple[str, str, dict[str, Any]]] = []
        self.fail = fail

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        if self.fail:
            raise ClusterError("create Event: 403 forbidden")
        self.created.append((namespace, dict(body)))

    def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        self.patched.append((namespace, name, dict(patch)))


HELD = Notice("Warning", "UpgradeHeld", "Hold", "held by the freeze window")


def test_a_repeated_event_becomes_one_event_with_a_count_as_client_go_records_it() -> None:
    sink, now = Sink(), [NOW]
    recorder = EventRecorder(sink, "upgrade-gate.io/controller-pod-a", clock=lambda: now[0])
    rev, ext = revision({"revision": {"version": "1.28.0"}}), extension({"extension": {"installed": "1.27.1"}})
    recorder.record(rev, HELD, ext)
    now[0] += datetime.timedelta(minutes=1)
    recorder.record(rev, HELD, ext)
    recorder.record(rev, HELD, ext)
    ((namespace, body),) = sink.created
    assert namespace == "default", "a cluster-scoped object's Events live in default"
    assert body["metadata"]["name"].startswith("cnpg-1.28.0.")
    assert (body["reason"], body["type"], body["note"], body["action"]) == ("UpgradeHeld", "Warning", HELD.note, "Hold")
    assert body["regarding"] == {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtensionRevision",
                                 "name": "cnpg-1.28.0"}  # fmt: skip
    assert body["related"]["name"] == "cnpg" and body["eventTime"] == "2026-03-02T10:00:00.000000Z"
    assert [p["series"]["count"] for _, name, p in sink.patched if name == body["metadata"]["name"]] == [2, 3]
    assert sink.patched[-1][2]["series"]["lastObservedTime"] == "2026-03-02T10:01:00.000000Z"


def test_a_repeat_after_the_series_window_or_with_another_note_is_a_new_event() -> None:
    sink, now = Sink(), [NOW]
    recorder = EventRecorder(sink, "pod-a", clock=lambda: now[0])
    rev = revision({"revision": {"version": "1.28.0"}})
    recorder.record(rev, HELD)
    recorder.record(rev, Notice("Warning", "UpgradeHeld", "Hold", "held by another window"))
    now[0] += datetime.timedelta(minutes=7)
    recorder.record(rev, HELD)
    assert len(sink.created) == 3 and sink.patched == []


def test_an_event_that_cannot_be_written_never_stops_the_caller() -> None:
    EventRecorder(Sink(fail=True), "pod-a").record(revision({"revision": {"version": "1.28.0"}}), HELD)


# --- one reconcile --------------------------------------------------------------------------------------------------


class Writer:
    """Records writes; ``refuse`` makes status writes fail with that HTTP status."""

    def __init__(self, refuse: int = 0) -> None:
        self.refuse = refuse
        self.writes: list[tuple[str, str, dict[str, Any]]] = []

    def create(self, resource: Resource, body: Mapping[str, Any]) -> dict[str, Any]:
        self.writes.append(("create", resource.kind, dict(body)))
        return dict(body)

    def patch(self, resource: Resource, name: str, patch: Mapping[str, Any], *, status: bool = False) -> dict[str, Any]:
        if self.refuse:
            raise WriteError(f"patch {resource.kind} {name} status: {self.refuse} refused", self.refuse)
        self.writes.append(("patch status" if status else "patch", name, dict(patch)))
        return dict(patch)

    def delete(self, resource: Resource, name: str, uid: str = "") -> None:
        self.writes.append(("delete", name, {"uid": uid}))


def reconciler(writer: Writer, sink: Sink, *objects: dict[str, Any] | None) -> Reconciler:
    store = InMemoryObjectStore(o for o in objects if o is not None)
    recorder = EventRecorder(sink, "pod-a", clock=lambda: NOW)
    return Reconciler(store, lambda name: ["cnpg-1.28.0"], writer, recorder, clock=lambda: NOW)


def test_a_reconcile_writes_the_status_once_with_its_resource_version_and_a_resync_writes_nothing() -> None:
    writer, sink = Writer(), Sink()
    rev, ext = revision({"revision": {"version": "1.28.0"}}), extension({"extension": {"installed": "1.27.1"}})
    reconciler(writer, sink, rev, ext).reconcile("cnpg")
    ((kind, name, patch),) = writer.writes
    assert (kind, name, patch["metadata"]) == ("patch status", "cnpg-1.28.0", {"resourceVersion": "7"})
    assert [(n, b["reason"]) for n, b in sink.created] == [("default", "UpgradeAvailable")] * 2, "revision + extension"
    current = {**rev, "status": patch["status"]}
    writer.writes.clear()
    reconciler(writer, sink, current, ext).reconcile("cnpg")
    assert writer.writes == [], "a resync of an up-to-date revision makes no request"


@pytest.mark.parametrize(
    ("status", "warned"),
    [pytest.param(409, False, id="a conflict is retried without an Event"),
     pytest.param(403, True, id="a forbidden status write is reported by a Warning Event and retried")],
)  # fmt: skip
def test_a_status_write_that_fails_is_retried_later(status: int, warned: bool) -> None:
    sink = Sink()
    rev, ext = revision({"revision": {"version": "1.28.0"}}), extension({"extension": {"installed": "1.27.1"}})
    with pytest.raises(RetryLater, match=f"{status} refused"):
        reconciler(Writer(refuse=status), sink, rev, ext).reconcile("cnpg")
    reasons = [b["reason"] for _, b in sink.created]
    assert reasons == (["StatusNotWritten"] if warned else []), "no Event for a change that was not written"


def test_the_controller_settings_come_from_the_environment() -> None:
    env = {"UPGRADE_GATE_CONTROLLER_MODE": "Cluster", "UPGRADE_GATE_RESYNC": "60", "POD_NAMESPACE": "ops",
           "UPGRADE_GATE_LEADER_ELECTION": "false"}  # fmt: skip
    settings = ControllerSettings.from_env(env)
    assert (settings.mode, settings.resync_s, settings.namespace, settings.leader_election) == (
        "cluster",
        60,
        "ops",
        False,
    )
    assert ControllerSettings.from_env({}) == ControllerSettings()
    assert ControllerSettings.from_env({}).lease_name == "upgrade-gate-controller"


def test_a_long_note_is_cut_to_the_events_apis_one_kilobyte_without_splitting_a_character() -> None:
    sink = Sink()
    EventRecorder(sink, "pod-a").record(
        revision({"revision": {"version": "1.28.0"}}), Notice("Warning", "X", "Y", "é" * 900)
    )
    ((_, body),) = sink.created
    assert len(body["note"].encode()) <= 1024 and body["note"] == "é" * 512


# --- a prompt retry once a held upgrade is approved ------------------------------------------------------------------

HELD_BY_GATE = ["True", "Retrying", 'admission webhook "upgrades-helm.upgrade-gate.dev" denied the request: held']


@pytest.mark.parametrize(
    ("spec", "progressing", "annotated", "retried"),
    [
        pytest.param({"approved": True, "approvedAt": "2026-03-02T09:00:00Z"}, HELD_BY_GATE, None, True,
                     id="an approved revision whose upgrade operator-controller reports held asks for a retry"),
        pytest.param({"approved": True, "approvedAt": "2026-03-02T09:00:00Z"}, HELD_BY_GATE,
                     "cnpg-1.28.0@2026-03-02T09:00:00Z", False, id="once per approval"),
        pytest.param({"approved": True, "approvedAt": "2026-03-02T09:30:00Z"}, HELD_BY_GATE,
                     "cnpg-1.28.0@2026-03-02T09:00:00Z", True, id="a new approval asks again"),
        pytest.param({"approved": False}, HELD_BY_GATE, None, False, id="not before the approval"),
        pytest.param({"approved": True}, ["True", "Succeeded", "installing"], None, False,
                     id="not while operator-controller is not retrying"),
    ],
)  # fmt: skip
def test_an_approval_makes_operator_controller_retry_the_held_upgrade_at_once(
    spec: dict[str, Any], progressing: list[str], annotated: str | None, retried: bool
) -> None:
    writer, sink = Writer(), Sink()
    rev = revision({"revision": {"version": "1.28.0", **spec}})
    ext = extension({"extension": {"installed": "1.27.1", "progressing": progressing}})
    assert ext is not None
    if annotated:
        ext["metadata"]["annotations"] = {"upgrade-gate.io/retry-for": annotated}
    reconciler(writer, sink, rev, ext).reconcile("cnpg")
    extension_patches = [(name, patch) for kind, name, patch in writer.writes if kind == "patch"]
    if not retried:
        assert extension_patches == []
        assert "RetryRequested" not in [b["reason"] for _, b in sink.created]
        return
    token = f"cnpg-1.28.0@{spec.get('approvedAt')}"
    assert extension_patches == [("cnpg", {"metadata": {"annotations": {"upgrade-gate.io/retry-for": token}}})]
    (event,) = [b for _, b in sink.created if b["reason"] == "RetryRequested"]
    assert event["regarding"]["name"] == "cnpg"
    assert event["note"] == (
        "ClusterExtensionRevision cnpg-1.28.0 is approved: operator-controller retries the upgrade to 1.28.0 now"
    )


def test_a_refused_retry_request_is_reported_and_retried_later() -> None:
    class Refusing(Writer):
        def patch(
            self, resource: Resource, name: str, patch: Mapping[str, Any], *, status: bool = False
        ) -> dict[str, Any]:
            if not status:
                raise WriteError(f"patch {resource.kind} {name}: 403 forbidden", 403)
            return super().patch(resource, name, patch, status=status)

    sink = Sink()
    rev = revision({"revision": {"version": "1.28.0", "approved": True, "approvedAt": "2026-03-02T09:00:00Z"}})
    ext = extension({"extension": {"installed": "1.27.1", "progressing": HELD_BY_GATE}})
    with pytest.raises(RetryLater, match="403 forbidden"):
        reconciler(Refusing(), sink, rev, ext).reconcile("cnpg")
    assert "RetryNotRequested" in [b["reason"] for _, b in sink.created]


def _held_by(sentence: str) -> list[str]:
    denial = f"admission webhook \"upgrades-helm.upgrade-gate.dev\" denied the request: ValidatingAdmissionPolicy 'x' with binding 'x' denied request: {sentence}"  # noqa: E501
    return ["True", "Retrying", f'error for resolved bundle "cnpg.v1.28.0" with version "1.28.0": {denial}']


FREEZE = "2026-03-02T09:00:00Z/2026-03-02T11:00:00Z"
HELD_BY_FREEZE = _held_by(f"upgrade of cnpg from 1.27.1 to 1.28.0 is approved but held by the freeze window {FREEZE}")
WAITING = _held_by("upgrade of cnpg from 1.27.1 to 1.28.0 is approved and waits for a maintenance window: "
                   "Mon 12:00-14:00, Tue 02:00-04:00 (UTC)")  # fmt: skip


@pytest.mark.parametrize(
    ("progressing", "at", "again_s", "token"),
    [
        pytest.param(HELD_BY_FREEZE, NOW, 3600.0, None, id="a freeze that holds: look again when it closes"),
        pytest.param(HELD_BY_FREEZE, NOW + datetime.timedelta(hours=1), None, f"@{FREEZE}",
                     id="the freeze closed: retry now"),
        pytest.param(WAITING, NOW, 7200.0, None, id="waiting for a maintenance window: look again when one opens"),
        pytest.param(WAITING, NOW + datetime.timedelta(hours=2), None, "@Mon 12:00-14:00, Tue 02:00-04:00",
                     id="the maintenance window opened: retry now"),
    ],
)  # fmt: skip
def test_a_window_that_lets_a_held_upgrade_go_makes_operator_controller_retry_then(
    progressing: list[str], at: datetime.datetime, again_s: float | None, token: str | None
) -> None:
    writer, sink = Writer(), Sink()
    rev = revision({"revision": {"version": "1.28.0", "approved": True, "approvedAt": "2026-03-02T08:00:00Z"}})
    ext = extension({"extension": {"installed": "1.27.1", "progressing": progressing}})
    assert ext is not None
    ext["metadata"]["annotations"] = {"upgrade-gate.io/retry-for": "cnpg-1.28.0@2026-03-02T08:00:00Z"}  # approved
    store = InMemoryObjectStore([rev, ext])
    recorder = EventRecorder(sink, "pod-a", clock=lambda: at)
    again = Reconciler(store, lambda name: ["cnpg-1.28.0"], writer, recorder, clock=lambda: at).reconcile("cnpg")
    assert again == again_s
    patches = [patch for kind, _, patch in writer.writes if kind == "patch"]
    if token is None:
        assert patches == []
        return
    value = f"cnpg-1.28.0@2026-03-02T08:00:00Z{token}"
    assert patches == [{"metadata": {"annotations": {"upgrade-gate.io/retry-for": value}}}]


def test_a_queued_key_comes_back_after_its_delay_without_a_backoff() -> None:
    now = [0.0]
    queue = WorkQueue(clock=lambda: now[0])
    queue.add_after("a", 30.0)
    assert queue.get(0) is None
    now[0] = 30.0
    assert queue.get(0) == "a"
    queue.done("a")
    assert queue.retry("a") == 1.0, "add_after left the backoff alone"
