"""The policy set the server's master publishes and its workers adopt: shared memory across a fork, and a
runtime that follows another's loads without reading the files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.serve.conftest import OBJECTS, POLICIES
from webhook.serve.runtime import PolicyRuntime
from webhook.serve.shared import SharedRecord

BROKEN = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: x}\nspec: 1\n"


def test_a_value_published_after_a_fork_is_read_by_the_forked_process() -> None:
    record = SharedRecord(capacity=4096)
    assert record.read() == (0, None)
    reply_read, reply_write = os.pipe()
    go_read, go_write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked process
        os.read(go_read, 1)
        version, value = record.read()
        os.write(reply_write, f"{version} {value}".encode())
        os._exit(0)
    assert record.publish("first") == 1
    assert record.publish("second") == 2
    os.write(go_write, b"x")
    assert os.read(reply_read, 100) == b"2 second"
    os.waitpid(child, 0)
    for descriptor in (reply_read, reply_write, go_read, go_write):
        os.close(descriptor)


def test_a_value_larger_than_the_shared_memory_is_refused_and_the_previous_one_stays() -> None:
    record = SharedRecord(capacity=64)
    record.publish("small")
    with pytest.raises(ValueError, match="do not fit in the 64 bytes"):
        record.publish("x" * 100)
    assert record.read() == (1, "small")


def test_a_worker_adopts_each_published_set_from_its_texts_and_keeps_it_when_a_load_fails(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    shutil.copytree(POLICIES, policies)
    shared = SharedRecord()
    master = PolicyRuntime(policies, OBJECTS, shared=shared)
    worker = PolicyRuntime(tmp_path / "elsewhere", shared=shared)  # reads no file of its own
    assert worker.current() is None
    assert master.load()
    first = worker.current()
    assert first is not None and master.snapshot is not None
    assert (first.generation, first.sources, first.objects) == (1, master.snapshot.sources, master.snapshot.objects)
    assert first.summary() == master.snapshot.summary()
    assert worker.current() is first  # nothing new published: the same snapshot, no compilation

    extensions = policies / "extensions.yaml"
    extensions.write_text(extensions.read_text().replace("validationActions: [Deny]", "validationActions: [Warn]"))
    assert master.load()
    extensions.unlink()  # the worker compiles what the master read, not what the files say now
    second = worker.current()
    assert second is not None and second.generation == 2
    assert any("validationActions: [Warn]" in text for _, text in second.sources)

    (policies / "zz-broken.yaml").write_text(BROKEN)
    assert not master.load()
    assert worker.current() is second
    assert worker.error is not None and worker.error == master.error and "zz-broken.yaml" in worker.error
    assert worker.readiness()[0] is True


def test_a_staged_set_is_compiled_ahead_and_served_only_once_activated(tmp_path: Path) -> None:
    policies = tmp_path / "policies"
    shutil.copytree(POLICIES, policies)
    shared = SharedRecord()
    master = PolicyRuntime(policies, OBJECTS, shared=shared)
    worker = PolicyRuntime(tmp_path / "elsewhere", shared=shared)
    assert master.load()
    first = worker.current()
    extensions = policies / "extensions.yaml"
    extensions.write_text(extensions.read_text().replace("validationActions: [Deny]", "validationActions: [Warn]"))

    assert master.stage()
    assert worker.current() is first  # staged: still deciding with the active set
    ahead = worker.prepare()
    assert ahead is not None and ahead.generation == 2
    assert worker.prepare() is None  # once
    assert worker.current() is first

    master.activate()
    assert worker.current() is ahead  # adopted as compiled ahead, not compiled again
    assert master.snapshot is not None and master.snapshot.generation == 2 and master.staged is None
