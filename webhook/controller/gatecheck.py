"""The doctor's checks, run by the leading controller: a gate that stopped holding upgrades is reported where a
cluster admin looks, not found at the next manual ``upgrade-gate doctor``.

Every ``gate_check_s`` (``UPGRADE_GATE_GATE_CHECK_INTERVAL``, 300 s; 0: never) the leader runs
``webhook.controller.doctor.diagnose`` on its reads and reports:

- the gauge ``upgrade_gate_controller_gate_check{check,result}``: 1 for each check's current result (``ok``,
  ``warn``, ``fail``), 0 for the others, so an alert can fire on ``result="fail"``;
- a failing check, once until its message changes or it passes again: a log line (warning) and a Warning Event
  ``GateNotEnforced`` (action ``Check``) on the ClusterExtensionRevision CRD, whose note is the check's message and
  what to do; a check that passes again is a log line (info);
- reads that fail (RBAC, an unreachable API server): one warning until they work again; the gauge keeps the last
  results.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from webhook import logs
from webhook.controller.doctor import FAIL, RESULTS, REVISION_CRD_NAME, DoctorReads, Report, diagnose
from webhook.controller.events import WARNING, Notice
from webhook.controller.health import Metrics
from webhook.controller.recorder import EventRecorder
from webhook.errors import UpgradeGateError

log = logging.getLogger(__name__)

#: What the Events are about: the CRD the chart installs (cluster-scoped, so its Events live in ``default``).
REVISION_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": REVISION_CRD_NAME},
}


class GateCheck:
    """Runs the checks (``run()``) and reports what changed since the last run (see the module doc)."""

    def __init__(
        self,
        reads: DoctorReads,
        recorder: EventRecorder,
        metrics: Metrics,
        *,
        settings_namespace: str,
        check: Callable[..., Report] = diagnose,
    ) -> None:
        self.reads, self.recorder, self.metrics = reads, recorder, metrics
        self.settings_namespace = settings_namespace
        self._diagnose = check
        self._failing: dict[str, str] = {}  # check id -> the message last reported
        self._unreadable: str | None = None

    def run(self) -> Report | None:
        """One round; the report, or ``None`` when the cluster could not be read."""
        try:
            report = self._diagnose(self.reads, settings_namespace=self.settings_namespace)
        except UpgradeGateError as error:
            if str(error) != self._unreadable:
                log.warning("cannot check the gate", extra=logs.fields({logs.ERROR: str(error)}))
            self._unreadable = str(error)
            return None
        self._unreadable = None
        for check in report.checks:
            for result in RESULTS:
                self.metrics.gate_checks.labels(check.id, result).set(1 if check.result == result else 0)
            before = self._failing.pop(check.id, None)
            if check.result != FAIL:
                if before is not None:
                    log.info("gate check passes again", extra=logs.fields({logs.NAME: check.id}))
                continue
            note = check.message + (f"; fix: {check.action}" if check.action else "")
            self._failing[check.id] = note
            if note != before:
                log.warning(note, extra=logs.fields({logs.NAME: check.id, logs.EVENT: "GateNotEnforced"}))
                self.recorder.record(REVISION_CRD, Notice(WARNING, "GateNotEnforced", "Check", note))
        return report
