"""ServeSettings read from the environment: defaults, every variable, and clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from webhook import settings
from webhook.errors import InputError
from webhook.settings import ServeSettings


def test_an_empty_environment_gives_the_defaults() -> None:
    assert ServeSettings.from_env({}) == ServeSettings()


def test_every_variable_is_read() -> None:
    env = {
        "UPGRADE_GATE_HOST": "0.0.0.0",
        "UPGRADE_GATE_PORT": "9443",
        "UPGRADE_GATE_DEV_CERTS": "/tmp/c",
        "UPGRADE_GATE_POLICIES": "/etc/p",
        "UPGRADE_GATE_OBJECTS": "/etc/o",
        "UPGRADE_GATE_CLUSTER": "ON",
        "KUBERNETES_SERVICE_HOST": "10.0.0.1",
        "KUBECONFIG": "/k",
        "POD_NAMESPACE": "gate",
        "UPGRADE_GATE_CEL_ENGINE": "CEL-EXPR",
        "UPGRADE_GATE_WORKERS": "3",
        "UPGRADE_GATE_THREADS": "8",
        "UPGRADE_GATE_KEEPALIVE": "30",
        "UPGRADE_GATE_MAX_CONNECTIONS": "100",
        "UPGRADE_GATE_IO_TIMEOUT": "5",
        "UPGRADE_GATE_MAX_REQUESTS": "500",
        "UPGRADE_GATE_MAX_WORKER_MEMORY": "200",
        "UPGRADE_GATE_REQUEST_TIMEOUT": "2.5",
        "UPGRADE_GATE_RELOAD_INTERVAL": "0.5",
        "UPGRADE_GATE_RESYNC": "60",
        "PROMETHEUS_MULTIPROC_DIR": "/tmp/m",
        "UPGRADE_GATE_LOG_LEVEL": "debug",
    }
    assert ServeSettings.from_env(env) == ServeSettings(
        host="0.0.0.0",
        port=9443,
        dev_certs=Path("/tmp/c"),
        policies=Path("/etc/p"),
        objects=Path("/etc/o"),
        cluster="on",
        in_pod=True,
        kubeconfig=Path("/k"),
        namespace="gate",
        cel_engine="cel-expr",
        workers=3,
        threads=8,
        keepalive_s=30,
        max_connections=100,
        io_timeout_s=5,
        max_requests=500,
        max_worker_memory_mib=200,
        request_timeout_s=2.5,
        reload_interval_s=0.5,
        resync_s=60,
        metrics_dir=Path("/tmp/m"),
        log_level="DEBUG",
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        pytest.param(
            {"UPGRADE_GATE_PORT": "https"}, "UPGRADE_GATE_PORT='https': not a number", id="a port that is not a number"
        ),
        pytest.param(
            {"UPGRADE_GATE_REQUEST_TIMEOUT": "0"},
            "UPGRADE_GATE_REQUEST_TIMEOUT='0': must be at least 0.1",
            id="a zero deadline",
        ),
        pytest.param(
            {"UPGRADE_GATE_CLUSTER": "maybe"},
            "UPGRADE_GATE_CLUSTER='maybe': expected auto, on or off",
            id="an unknown cluster mode",
        ),
        pytest.param(
            {"UPGRADE_GATE_CEL_ENGINE": "cel-go"},
            "UPGRADE_GATE_CEL_ENGINE='cel-go': expected cel-python or cel-expr",
            id="an unknown CEL engine",
        ),
    ],
)
def test_a_bad_value_names_its_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(InputError) as raised:
        ServeSettings.from_env(env)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("settings", "watches"),
    [
        pytest.param(ServeSettings(), False, id="auto outside a pod does not watch a cluster"),
        pytest.param(ServeSettings(in_pod=True), True, id="auto in a pod watches its cluster"),
        pytest.param(ServeSettings(cluster="on"), True, id="on watches the kubeconfig's cluster"),
        pytest.param(ServeSettings(in_pod=True, objects=Path("o")), False, id="objects stand in for the cluster"),
        pytest.param(ServeSettings(in_pod=True, cluster="off"), False, id="off never watches"),
    ],
)
def test_when_the_cluster_is_watched(settings: ServeSettings, watches: bool) -> None:
    assert settings.watches_cluster is watches


@pytest.mark.parametrize(
    ("cpu_max", "limit"),
    [("150000 100000\n", 2), ("50000 100000\n", 1), ("max 100000\n", None), ("garbage\n", None), (None, None)],
)
def test_workers_default_to_the_cpus_the_container_may_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpu_max: str | None, limit: int | None
) -> None:
    """A cgroup CPU limit (cpu.max: quota and period in microseconds) caps the default, rounded up; without one
    (unlimited, unreadable, absent) the CPUs the process may run on decide."""
    runnable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    path = tmp_path / "cpu.max"
    if cpu_max is not None:
        path.write_text(cpu_max)
    monkeypatch.setattr(settings, "CPU_MAX", path)
    assert ServeSettings(workers=0).worker_count == (min(runnable, limit) if limit else runnable)
    assert ServeSettings(workers=3).worker_count == 3
