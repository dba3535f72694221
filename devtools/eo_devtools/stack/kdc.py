"""The local stack's KDC: MIT krb5kdc on 127.0.0.1 with the throwaway realm ``EO.TEST``.

Contract: everything lives under ``<state>/kerberos/`` -- ``kdc.conf`` (the KDC's profile),
``krb5.conf`` (what clients use, ``KRB5_CONFIG``), the principal database and its stash,
``keytabs/<name>.keytab`` (mode 600). The master password is random, reaches ``kdb5_util``
on stdin only and is kept nowhere but in the stash (mode 600). :meth:`Kdc.start` creates the
realm once with :data:`PRINCIPALS` and runs the KDC on a free port (TCP and UDP) recorded as
:data:`KDC_PORT_KEY`; :meth:`Kdc.stop` stops it. :meth:`Kdc.add_principal` adds a principal
with a keytab, optionally with a short maximum ticket life.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from eo_devtools.stack.ports import LOOPBACK, accepts_connections, find_free_port
from eo_devtools.stack.process import running_pid, start_process, stop_process_group, wait_until_healthy

REALM = "EO.TEST"
KDC_PORT_KEY = "kdc"

#: Principal -> keytab name: the HBase and Kafka services, the pipeline's client, another client.
PRINCIPALS = {
    "hbase/localhost": "hbase",
    "kafka/localhost": "kafka",
    "eo-writer": "eo-writer",
    "eo-other": "eo-other",
}


class KdcError(RuntimeError):
    """A KDC admin command failed (its output says why; it never holds a secret)."""


class Kdc:
    """The KDC of the stack in ``state_dir``."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.dir = state_dir / "kerberos"
        self.kdc_conf = self.dir / "kdc.conf"
        self.krb5_conf = self.dir / "krb5.conf"
        self.database = self.dir / "principal"
        self.stash = self.dir / "stash"
        self.log_path = state_dir / "logs" / "kdc.log"
        self.pid_path = state_dir / "pids" / "kdc.pid"

    def keytab(self, name: str) -> Path:
        """The keytab of ``name`` (a :data:`PRINCIPALS` value or an added principal's name)."""
        return self.dir / "keytabs" / f"{name.replace('/', '_')}.keytab"

    def env(self) -> dict[str, str]:
        """The environment of the krb5 tools: this realm's profiles, nothing else's."""
        return {
            **os.environ,
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.kdc_conf),
        }

    def _write_confs(self, port: int) -> None:
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        (self.dir / "keytabs").mkdir(mode=0o700, exist_ok=True)
        self.kdc_conf.write_text(
            f"[kdcdefaults]\n kdc_ports = {port}\n kdc_tcp_ports = {port}\n\n"
            f"[realms]\n {REALM} = {{\n  database_name = {self.database}\n"
            f"  key_stash_file = {self.stash}\n  max_life = 10h 0m 0s\n"
            f"  max_renewable_life = 7d 0h 0m 0s\n  acl_file = {self.dir / 'kadm5.acl'}\n }}\n\n"
            f"[logging]\n kdc = FILE:{self.log_path}\n"
        )
        self.krb5_conf.write_text(
            f"[libdefaults]\n default_realm = {REALM}\n dns_lookup_kdc = false\n"
            " dns_lookup_realm = false\n rdns = false\n udp_preference_limit = 1\n"
            " ignore_acceptor_hostname = true\n\n"
            f"[realms]\n {REALM} = {{\n  kdc = {LOOPBACK}:{port}\n }}\n\n"
            f"[domain_realm]\n localhost = {REALM}\n"
        )

    def _create_realm(self) -> None:
        """Create the database and its stash; the master password goes through stdin."""
        password = secrets.token_urlsafe(24)
        result = subprocess.run(
            ["kdb5_util", "create", "-s", "-r", REALM],
            input=f"{password}\n{password}\n",
            env=self.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise KdcError(f"kdb5_util create failed: {result.stderr.strip()}")
        self.stash.chmod(0o600)
        for principal, name in PRINCIPALS.items():
            self.add_principal(principal, name)

    def _kadmin(self, query: str) -> None:
        result = subprocess.run(
            ["kadmin.local", "-r", REALM, "-q", query],
            env=self.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 or "error" in result.stderr.lower():
            raise KdcError(f"kadmin.local {query.split()[0]} failed: {result.stderr.strip()}")

    def add_principal(self, principal: str, name: str | None = None, *, max_life: str | None = None) -> Path:
        """Add ``principal`` (random key) and write its keytab (mode 600); return the keytab.

        ``max_life`` (e.g. ``"30 seconds"``) caps its tickets' lifetime.
        """
        keytab = self.keytab(name or principal)
        life = f' -maxlife "{max_life}"' if max_life else ""
        self._kadmin(f"addprinc -randkey{life} {principal}")
        keytab.unlink(missing_ok=True)
        self._kadmin(f"ktadd -k {keytab} {principal}")
        keytab.chmod(0o600)
        return keytab

    def healthy(self, port: int) -> bool:
        return accepts_connections(port)

    def start(self, recorded: Mapping[str, int], write_ports: Callable[[Mapping[str, int]], None]) -> None:
        """Create the realm when missing and run the KDC until it answers; its port written
        through ``write_ports`` (a recorded one kept)."""
        port = recorded.get(KDC_PORT_KEY)
        taken = {p for k, p in recorded.items() if k != KDC_PORT_KEY}
        while port is None or port in taken:
            port = find_free_port()
        write_ports({**recorded, KDC_PORT_KEY: port})
        self._write_confs(port)
        if not self.stash.exists():
            self._create_realm()
        if running_pid(self.pid_path) is not None:
            return
        self.pid_path.parent.mkdir(exist_ok=True)
        pid = start_process(
            ["krb5kdc", "-n", "-r", REALM],
            log_path=self.log_path,
            pid_path=self.pid_path,
            env=self.env(),
            cwd=self.dir,
        )
        wait_until_healthy("kdc", pid, lambda: self.healthy(port), log_path=self.log_path, timeout_s=15)

    def stop(self, recorded: Mapping[str, int], write_ports: Callable[[Mapping[str, int]], None]) -> None:
        """Stop the KDC (its realm stays for the next start) and write the ports without it."""
        pid = running_pid(self.pid_path)
        if pid is not None:
            stop_process_group(pid)
        self.pid_path.unlink(missing_ok=True)
        if KDC_PORT_KEY in recorded:
            write_ports({k: p for k, p in recorded.items() if k != KDC_PORT_KEY})

    def client_env(self) -> dict[str, str]:
        """``KRB5_CONFIG`` while the KDC runs, else nothing."""
        if running_pid(self.pid_path) is None:
            return {}
        return {"KRB5_CONFIG": str(self.krb5_conf)}
