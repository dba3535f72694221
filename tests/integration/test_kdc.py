"""The stack's KDC (eo_devtools.stack.kdc): a real MIT krb5kdc on loopback, realm EO.TEST.

Asserts kinit's exact outcomes: eo-writer's keytab logs in as eo-writer@EO.TEST (klist's
principal lines exact); eo-other's keytab cannot log in as eo-writer; a stopped KDC fails
kinit with "Cannot contact any KDC"; keytabs are mode 600; a principal added with a short
maximum ticket life has it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from eo_devtools.stack.kdc import KDC_PORT_KEY, PRINCIPALS, Kdc

pytestmark = pytest.mark.integration


class _Ports:
    """The recorded ports, as the stack's ``_write_ports`` keeps them."""

    def __init__(self) -> None:
        self.ports: dict[str, int] = {}

    def write(self, ports: Mapping[str, int]) -> None:
        self.ports = dict(ports)


@pytest.fixture
def kdc(tmp_path: Path) -> Iterator[tuple[Kdc, _Ports]]:
    kdc, ports = Kdc(tmp_path), _Ports()
    kdc.start(ports.ports, ports.write)
    try:
        yield kdc, ports
    finally:
        kdc.stop(ports.ports, ports.write)


def _run(kdc: Kdc, tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**kdc.env(), "KRB5CCNAME": f"FILE:{tmp_path / 'ccache'}"}
    return subprocess.run(list(argv), env=env, capture_output=True, text=True, check=False, timeout=15)


def test_writer_keytab_logs_in(kdc: tuple[Kdc, _Ports], tmp_path: Path) -> None:
    server, ports = kdc
    assert KDC_PORT_KEY in ports.ports
    login = _run(server, tmp_path, "kinit", "-kt", str(server.keytab("eo-writer")), "eo-writer")
    assert (login.returncode, login.stdout, login.stderr) == (0, "", "")
    listing = _run(server, tmp_path, "klist")
    assert listing.returncode == 0
    lines = listing.stdout.splitlines()
    assert lines[:2] == [f"Ticket cache: FILE:{tmp_path / 'ccache'}", "Default principal: eo-writer@EO.TEST"]
    assert lines[4].split()[-1] == "krbtgt/EO.TEST@EO.TEST"
    for name in PRINCIPALS.values():
        assert server.keytab(name).stat().st_mode & 0o777 == 0o600


def test_other_keytab_is_not_the_writer(kdc: tuple[Kdc, _Ports], tmp_path: Path) -> None:
    server, _ = kdc
    login = _run(server, tmp_path, "kinit", "-kt", str(server.keytab("eo-other")), "eo-writer")
    assert login.returncode == 1
    assert login.stderr == (
        "kinit: Keytab contains no suitable keys for eo-writer@EO.TEST while getting initial credentials\n"
    )


def test_stopped_kdc_cannot_be_contacted(kdc: tuple[Kdc, _Ports], tmp_path: Path) -> None:
    server, ports = kdc
    recorded = dict(ports.ports)
    server.stop(ports.ports, ports.write)
    assert KDC_PORT_KEY not in ports.ports
    server._write_confs(recorded[KDC_PORT_KEY])  # the clients' krb5.conf still names the old port
    login = _run(server, tmp_path, "kinit", "-kt", str(server.keytab("eo-writer")), "eo-writer")
    assert login.returncode == 1
    assert login.stderr == (
        "kinit: Cannot contact any KDC for realm 'EO.TEST' while getting initial credentials\n"
    )


def test_short_lived_principal(kdc: tuple[Kdc, _Ports], tmp_path: Path) -> None:
    server, _ = kdc
    keytab = server.add_principal("eo-short", max_life="30 seconds")
    assert keytab.stat().st_mode & 0o777 == 0o600
    login = _run(server, tmp_path, "kinit", "-kt", str(keytab), "eo-short")
    assert login.returncode == 0
    query = subprocess.run(
        ["kadmin.local", "-r", "EO.TEST", "-q", "getprinc eo-short"],
        env=server.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Maximum ticket life: 0 days 00:00:30\n" in query.stdout
