"""``upgrade-gate controller`` as a user starts it: bad settings and a missing cluster are one line on stderr."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.apiserver import ApiServer
from webhook.cli import main

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


def _run(*args: str, **env: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["controller", *args], env={"KUBERNETES_SERVICE_HOST": "", **env})
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        pytest.param([], {"UPGRADE_GATE_CONTROLLER_MODE": "git"},
                     "UPGRADE_GATE_CONTROLLER_MODE='git': expected gitops or cluster", id="an unknown mode"),
        pytest.param(["--resync", "0s"], {}, "--interval '0s': must be positive", id="a resync of zero"),
        pytest.param([], {"UPGRADE_GATE_CONTROLLER_WORKERS": "0"},
                     "UPGRADE_GATE_CONTROLLER_WORKERS='0': must be at least 1", id="no worker"),
    ],
)  # fmt: skip
def test_a_setting_that_does_not_parse_is_bad_input(args: list[str], env: dict[str, str], message: str) -> None:
    assert _run(*args, **env) == (2, "", f"upgrade-gate: {message}\n")


def test_without_a_cluster_configuration_it_exits_1(tmp_path: Path) -> None:
    code, stdout, err = _run(KUBECONFIG=str(tmp_path / "missing"))
    assert (code, stdout) == (1, "")
    assert err.startswith("upgrade-gate: no cluster configuration: ") and err.count("\n") == 1


def test_a_health_port_in_use_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, stdout, err = _run(
            "--health-port", str(port), "--no-leader-election", KUBECONFIG=str(tmp_path / "kubeconfig")
        )
    assert (code, stdout) == (2, "")
    assert err == f"upgrade-gate: cannot serve /healthz on 127.0.0.1:{port}: Address already in use\n"


def test_an_api_server_it_cannot_reach_is_one_line_and_exit_3(tmp_path: Path) -> None:
    (tmp_path / "kubeconfig").write_text(KUBECONFIG)  # nothing listens on 127.0.0.1:9
    code, stdout, err = _run("--health-port", "0", KUBECONFIG=str(tmp_path / "kubeconfig"))
    assert (code, stdout) == (3, ""), "an outage: retry (docs/cli.md, exit codes)"
    assert err.startswith("upgrade-gate: get /version: ") and err.count("\n") == 1
    assert "127.0.0.1" in err and "port=9" in err


def test_a_lease_namespace_that_does_not_exist_is_bad_input_in_one_line(apiserver: ApiServer) -> None:
    code, stdout, err = _run(
        "--health-port", "0", KUBECONFIG=apiserver.kubeconfig, POD_NAMESPACE="nowhere", POD_NAME="controller-0"
    )
    assert (code, stdout) == (2, "")
    assert err == (
        'upgrade-gate: namespace "nowhere" does not exist: the Lease upgrade-gate-controller is kept there '
        "(POD_NAMESPACE); create the namespace, set POD_NAMESPACE, or turn leader election off\n"
    )


def test_a_file_that_is_no_kubeconfig_is_named_in_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("- just\n- a list\n")
    code, stdout, err = _run(KUBECONFIG=str(broken))
    assert (code, stdout) == (1, "")
    assert err.startswith(f"upgrade-gate: no cluster configuration: {broken}") and err.count("\n") == 1
