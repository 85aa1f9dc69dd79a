"""Events through the ``events.k8s.io/v1`` API, deduplicated as client-go's ``tools/events`` recorder does.

An Event is identified by what it says (regarding, related, reporting controller, action, reason, type, note).
The first occurrence is created as a new Event named ``<regarding name>.<nanoseconds in hex>``; a repeat within
``series_window_s`` (6 minutes, client-go's) of the last one is not a new Event: the existing one becomes a
series (``series.count`` 2, 3, ... and ``series.lastObservedTime``), patched at once (client-go batches the
count to a 30-minute heartbeat; here the count is always current). A later repeat starts a new Event.
A cluster-scoped object's Events live in the ``default`` namespace, as client-go puts them.

The recorder never raises: an Event that cannot be written is logged and dropped (an Event is best effort and
must not stop a reconcile), as client-go's recorder does.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from webhook import logs
from webhook.controller.events import Notice
from webhook.errors import ClusterError
from webhook.objects import KubeObject

log = logging.getLogger(__name__)

EVENTS_API = "events.k8s.io/v1"
CONTROLLER_NAME = "upgrade-gate.io/controller"
MAX_NOTE = 1024  # bytes


class EventSink(Protocol):
    """Where Events go: ``create(namespace, body)`` and ``patch(namespace, name, patch)`` (JSON merge patch);
    both raise ``ClusterError``."""

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        """Create one Event."""
        ...

    def patch_event(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        """Merge-patch one Event."""
        ...


@dataclass
class _Series:
    name: str
    namespace: str
    count: int
    last: datetime.datetime


def reference(obj: KubeObject) -> dict[str, str]:
    """An ``ObjectReference`` to ``obj``: apiVersion, kind, name, uid (and namespace when it has one)."""
    metadata = obj.get("metadata") or {}
    found = {
        "apiVersion": str(obj.get("apiVersion") or ""),
        "kind": str(obj.get("kind") or ""),
        "name": str(metadata.get("name") or ""),
        "namespace": str(metadata.get("namespace") or ""),
        "uid": str(metadata.get("uid") or ""),
    }
    return {key: value for key, value in found.items() if value}


class EventRecorder:
    """Records ``Notice`` values as Events about an object (``regarding``) and optionally a ``related`` one."""

    def __init__(
        self,
        sink: EventSink,
        instance: str,
        *,
        series_window_s: float = 360.0,
        clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self.sink, self.instance = sink, instance
        self.series_window_s = series_window_s
        self._clock = clock
        self._series: dict[tuple[str, ...], _Series] = {}
        self._purged = clock()
        self._lock = threading.Lock()

    def record(self, regarding: KubeObject, notice: Notice, related: KubeObject | None = None) -> None:
        """Create the Event, or count a repeat of it (see the module doc)."""
        about, other = reference(regarding), reference(related) if related is not None else None
        note = notice.note.encode()[:MAX_NOTE].decode(errors="ignore")  # events.k8s.io: at most 1 kB
        key = (
            repr(sorted(about.items())),
            repr(sorted((other or {}).items())),
            notice.action,
            notice.reason,
            notice.type,
            note,
        )
        now = self._clock()
        namespace = about.get("namespace") or "default"
        with self._lock:
            self._forget_before(now)
            series = self._series.get(key)
            if series is not None and (now - series.last).total_seconds() > self.series_window_s:
                series = None
            if series is not None:
                series.count += 1
                series.last = now
                patch = {"series": {"count": series.count, "lastObservedTime": _micro(now)}}
                name: str | None = series.name
            else:
                name = f"{about.get('name', 'object')}.{int(now.timestamp() * 1e9):x}"
                self._series[key] = _Series(name, namespace, 1, now)
                patch = {}
        try:
            if patch:
                self.sink.patch_event(namespace, str(name), patch)
            else:
                body = self._body(str(name), namespace, about, other, notice)
                self.sink.create_event(namespace, {**body, "eventTime": _micro(now), "note": note})
        except ClusterError as error:
            log.warning("event not recorded", extra=logs.fields({logs.NAME: about.get("name"), logs.ERROR: str(error)}))

    def _forget_before(self, now: datetime.datetime) -> None:
        """Drop the series whose window has passed (looked at once a window at most: recording stays O(1))."""
        if (now - self._purged).total_seconds() < self.series_window_s:
            return
        self._purged = now
        horizon = now - datetime.timedelta(seconds=self.series_window_s)
        for key in [k for k, s in self._series.items() if s.last < horizon]:
            del self._series[key]

    def _body(
        self,
        name: str,
        namespace: str,
        about: Mapping[str, str],
        other: Mapping[str, str] | None,
        notice: Notice,
    ) -> dict[str, Any]:
        return {
            "apiVersion": EVENTS_API,
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "reportingController": CONTROLLER_NAME,
            "reportingInstance": self.instance,
            "action": notice.action,
            "reason": notice.reason,
            "type": notice.type,
            "regarding": dict(about),
            **({"related": dict(other)} if other else {}),
        }


def _micro(moment: datetime.datetime) -> str:
    """``metav1.MicroTime``: RFC 3339 in UTC with microseconds."""
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
