"""``upgrade-gate serve`` refusing to start: one clear line on stderr and exit 2, before anything is written."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from tests.serve.process import SCRIPT, free_port


def _serve(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("UPGRADE_GATE_")}
    started = time.monotonic()
    done = subprocess.run(
        [str(SCRIPT), "serve", "--cluster", "off", *args],
        cwd=cwd,
        env={**environment, "PROMETHEUS_MULTIPROC_DIR": str(cwd / "metrics")},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done, time.monotonic() - started


def test_a_port_in_use_is_one_line_and_exit_2_at_once(tmp_path: Path) -> None:
    port = free_port()
    with socket.create_server(("127.0.0.1", port)):
        done, elapsed = _serve(tmp_path, "--port", str(port), "--policies", str(Path.cwd() / "policies"))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1:] == [f"upgrade-gate: cannot listen on 127.0.0.1:{port}: Address already in use"]
    assert [line for line in done.stderr.splitlines() if "gunicorn" in line] == []
    assert elapsed < 5


def test_outside_the_repository_no_policies_is_said_plainly_and_nothing_is_created(tmp_path: Path) -> None:
    done, _ = _serve(tmp_path, "--port", str(free_port()))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"upgrade-gate: no policies found: {tmp_path / 'policies'} does not exist "
        "(give --policies DIR|FILE or UPGRADE_GATE_POLICIES)"
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["metrics"]
