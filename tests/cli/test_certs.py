"""``upgrade-gate certs generate`` as a user runs it: bad input is one line on stderr and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from webhook.cli import main


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["certs", "generate", *args])
    return result.exit_code, result.stdout, result.stderr


def test_an_out_directory_under_a_file_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "certs"
    code, stdout, err = _run("--dns", "localhost", "--out", str(out))
    assert (code, stdout) == (2, "")
    assert err == f"upgrade-gate: --out {out}: cannot write there: Not a directory\n"


@pytest.mark.parametrize(
    "name",
    ["bad name!", "-leading.example.com", "a..b", "x" * 64 + ".example.com", "*"],
    ids=lambda n: f"{n[:20]!r} is not a DNS name",
)
def test_a_name_that_is_not_a_dns_name_is_bad_input(tmp_path: Path, name: str) -> None:
    code, _, err = _run("--dns", name, "--out", str(tmp_path))
    assert code == 2
    assert err.startswith(f"upgrade-gate: --dns {name!r}: not a DNS name")
    assert not list(tmp_path.iterdir()), "nothing is written"


@pytest.mark.parametrize(
    "name",
    ["localhost", "upgrade-gate-webhook.upgrade-gate.svc", "*.example.com", "a1-b2.c3", "Webhook.Example.COM"],
    ids=lambda n: f"{n} is a DNS name",
)
def test_dns_names_and_wildcards_are_accepted(tmp_path: Path, name: str) -> None:
    code, out, _ = _run("--dns", name, "--out", str(tmp_path))
    assert code == 0
    assert out.splitlines() == [str(tmp_path / f) for f in ("ca.crt", "ca.key", "tls.crt", "tls.key")]
