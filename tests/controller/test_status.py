"""A revision's state, its conditions and its Events (``webhook.controller.status`` and ``.events``), driven by
``tests/data/controller/status.yaml``: the revision status contract of the README."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from tests import tables
from webhook.controller.events import notices
from webhook.controller.status import assess, revision_status, state_of

TABLE = tables.load("controller/status.yaml")
NOW = datetime.datetime(2026, 3, 2, 10, 0, 0, tzinfo=datetime.UTC)
EARLIER = "2026-03-01T10:00:00Z"


def revision(row: dict[str, Any]) -> dict[str, Any]:
    before = [
        {**c, "lastTransitionTime": EARLIER, "observedGeneration": 1}
        for c in TABLE["before"].get(row.get("before"), [])
    ]
    status = {"observedGeneration": 1, "conditions": before} if before else {}
    status.update({"fromVersion": row["fromVersion"]} if "fromVersion" in row else {})
    metadata = {"name": "cnpg-1.28.0", "generation": 2, "resourceVersion": "7"}
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtensionRevision",
        "metadata": {**metadata, **({"annotations": row["annotations"]} if "annotations" in row else {})},
        "spec": {"clusterExtensionRef": {"name": "cnpg"}, **row["revision"]},
        **({"status": status} if status else {}),
    }


def extension(row: dict[str, Any]) -> dict[str, Any] | None:
    given = row["extension"]
    if given is None:
        return None
    conditions = []
    if "progressing" in given:
        status, reason, message = given["progressing"]
        conditions.append({"type": "Progressing", "status": status, "reason": reason, "message": message})
    bundle = {"name": f"cnpg.v{given['installed']}", "version": given["installed"]}
    return {
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": "cnpg"},
        "status": {"install": {"bundle": bundle}, "conditions": conditions},
    }


@pytest.mark.parametrize("row", tables.params(TABLE["rows"]))
def test_revision_status(row: dict[str, Any]) -> None:
    obj = revision(row)
    assessment = assess(obj, extension(row))
    status = revision_status(obj, assessment, now=NOW)
    written = {c["type"]: c for c in status["conditions"]}
    assert assessment.state == row["state"]
    assert {kind: [c["status"], c["reason"]] for kind, c in written.items()} == {
        kind: [str(s), reason] for kind, (s, reason) in row["conditions"].items()
    }
    assert written["Ready"]["message"] == row["message"]
    assert status["observedGeneration"] == 2
    assert all(c["observedGeneration"] == 2 for c in status["conditions"])
    for kind, condition in written.items():
        old = next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == kind), None)
        flipped = old is None or old["status"] != condition["status"]
        assert condition["lastTransitionTime"] == ("2026-03-02T10:00:00Z" if flipped else EARLIER), kind
    assert state_of(status["conditions"]) == row["state"]
    before = (obj.get("status") or {}).get("conditions")
    assert [n.reason for n in notices("cnpg-1.28.0", before, assessment)] == row["events"]


def test_conditions_of_other_controllers_keep_their_content_and_place() -> None:
    foreign = {
        "type": "example.com/Scanned",
        "status": "True",
        "reason": "Clean",
        "message": "",
        "lastTransitionTime": EARLIER,
    }
    obj = revision({"revision": {"version": "1.28.0"}})
    obj["status"] = {"conditions": [foreign, {"type": "Ready", "status": "Unknown", "reason": "Old", "message": ""}]}
    status = revision_status(obj, assess(obj, extension({"extension": {"installed": "1.27.1"}})), now=NOW)
    assert [c["type"] for c in status["conditions"]] == [
        "example.com/Scanned", "Ready", "Approved", "Progressing", "Succeeded"
    ]  # fmt: skip
    assert status["conditions"][0] == foreign


def test_a_status_that_already_says_everything_is_written_again_unchanged() -> None:
    obj = revision({"revision": {"version": "1.28.0"}})
    ext = extension({"extension": {"installed": "1.27.1"}})
    first = revision_status(obj, assess(obj, ext), now=NOW)
    again = {**obj, "status": first}
    assert revision_status(again, assess(again, ext), now=NOW + datetime.timedelta(hours=1)) == first
    assert notices("cnpg-1.28.0", first["conditions"], assess(again, ext)) == []


def test_the_printer_columns_read_the_state_and_the_version_the_upgrade_started_from() -> None:
    obj = revision({"revision": {"version": "1.28.0", "approved": True}})
    pending = revision_status(obj, assess(obj, extension({"extension": {"installed": "1.27.1"}})), now=NOW)
    assert (pending["state"], pending["fromVersion"]) == ("Progressing", "1.27.1")
    done = {**obj, "status": pending}
    succeeded = revision_status(done, assess(done, extension({"extension": {"installed": "1.28.0"}})), now=NOW)
    assert (succeeded["state"], succeeded["fromVersion"]) == ("Succeeded", "1.27.1"), "kept once it succeeded"
    gone = revision_status(done, assess(done, None), now=NOW)
    assert (gone["state"], gone["fromVersion"]) == ("Failed", "1.27.1")


def test_operator_controllers_longest_message_still_makes_a_valid_condition() -> None:
    obj = revision({"revision": {"version": "1.28.0", "approved": True}})
    long = extension({"extension": {"installed": "1.27.1", "progressing": ["True", "Retrying", "x" * 32768]}})
    status = revision_status(obj, assess(obj, long), now=NOW)
    assert {len(c["message"]) for c in status["conditions"] if c["type"] != "Approved"} == {32768}
