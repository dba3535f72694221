"""The stack's Kerberized HBase (``eo-stack up --kerberos``): a standalone HBase whose RPC is
Kerberos-only, and its Thrift1 server taking SASL/GSSAPI at ``auth-conf`` from clients.

Contract: :class:`HBaseKerberosPart` runs, after the KDC (:mod:`.kdc`), two JVMs beside the
stack's plain HBase:

- :class:`KerberosHBaseService`: the standalone shape of :class:`.hbase.HBaseService` (master,
  one region server and ZooKeeper in one JVM; data under ``<state>/hbase-kerberos``) with
  ``hbase.security.authentication=kerberos`` and ``hadoop.security.authentication=kerberos``:
  master and region server log in from the ``hbase/localhost`` keytab, and every RPC between
  them and from their clients is SASL/GSSAPI. ZooKeeper stays unauthenticated (in-process,
  loopback only; HBase's znodes then carry no ACLs).
- :class:`KerberosThriftService`: HBase's Thrift1 server on the buffered transport with
  ``hbase.thrift.security.qop=auth-conf``: it logs in as ``hbase/localhost``, accepts only
  GSSAPI clients whose SASL layer encrypts, and runs each call as its client, impersonated
  (``ugi=eo-writer (auth:PROXY) via hbase/localhost``). Authorization stays off, so the
  impersonation needs no proxy-user rule.

Its ports are recorded under :data:`KERBEROS_HBASE_PORT_KEYS`. :meth:`HBaseKerberosPart.connection`
is ``eo_hbase_kerberos``: the Thrift server, logging in as ``eo-writer`` from its keytab. No
setting holds a secret: the keytabs are files of mode 600 named by path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eo_devtools.stack.hbase import HBaseService, HBaseThriftService, _write_site, site_xml
from eo_devtools.stack.hbase_layout import JDK17_OPTIONS
from eo_devtools.stack.kdc import REALM, Kdc
from eo_devtools.stack.ports import LOOPBACK, accepts_connections
from eo_devtools.stack.stack_part import StackPart

HBASE_PRINCIPAL = f"hbase/localhost@{REALM}"
CLIENT_PRINCIPAL = f"eo-writer@{REALM}"
THRIFT_PORT_KEY = "hbase-krb-thrift"
KERBEROS_HBASE_PORT_KEYS = (
    "hbase-krb-master",
    "hbase-krb-regionserver",
    "hbase-krb-zookeeper",
    THRIFT_PORT_KEY,
)

_CORE_SITE = site_xml({"hadoop.security.authentication": "kerberos"})


def kerberos_home(state_dir: Path) -> Path:
    """``<state>/hbase-kerberos``: ``conf/``, ``master-conf/``, ``thrift-conf/``, data in ``root/``."""
    return state_dir / "hbase-kerberos"


def security_site(kdc: Kdc) -> dict[str, str]:
    """What makes HBase's RPC Kerberos-only: both authentications, the servers' principal and keytab."""
    keytab = str(kdc.keytab("hbase"))
    return {
        "hbase.security.authentication": "kerberos",
        "hadoop.security.authentication": "kerberos",
        "hbase.master.kerberos.principal": HBASE_PRINCIPAL,
        "hbase.master.keytab.file": keytab,
        "hbase.regionserver.kerberos.principal": HBASE_PRINCIPAL,
        "hbase.regionserver.keytab.file": keytab,
    }


def _krb5_option(kdc: Kdc) -> str:
    return f"-Djava.security.krb5.conf={kdc.krb5_conf}"


class KerberosHBaseService(HBaseService):
    """The Kerberized standalone HBase (see the module)."""

    name = "hbase-kerberos"
    port_keys = KERBEROS_HBASE_PORT_KEYS[:3]
    heap = "768m"

    @property
    def home(self) -> Path:
        return kerberos_home(self.state_dir)

    def site(self) -> dict[str, str]:
        return {**super().site(), **security_site(Kdc(self.state_dir))}

    def jvm_options(self) -> list[str]:
        return [*super().jvm_options(), _krb5_option(Kdc(self.state_dir))]

    def prepare(self) -> None:
        """:meth:`.HBaseService.prepare`, plus ``core-site.xml`` (Hadoop's login reads it) in both
        configuration directories."""
        super().prepare()
        for conf in ("conf", "master-conf"):
            (self.home / conf / "core-site.xml").write_text(_CORE_SITE)


class KerberosThriftService(HBaseThriftService):
    """The Thrift1 server of the Kerberized HBase, SASL/GSSAPI at ``auth-conf`` (see the module)."""

    name = "hbase-kerberos-thrift"
    port_keys = (THRIFT_PORT_KEY,)
    heap = "384m"

    @property
    def conf(self) -> Path:
        return kerberos_home(self.state_dir) / "thrift-conf"

    def site(self) -> dict[str, str]:
        """The HBase client's site of the Kerberized HBase plus the Thrift server's login and qop.

        The transport stays buffered (``hbase.regionserver.thrift.framed`` false): HBase refuses
        SASL on the framed one.
        """
        kdc = Kdc(self.state_dir)
        return {
            **KerberosHBaseService(self.state_dir, self.ports).site(),
            "hbase.thrift.kerberos.principal": HBASE_PRINCIPAL,
            "hbase.thrift.keytab.file": str(kdc.keytab("hbase")),
            "hbase.thrift.security.qop": "auth-conf",
            "hbase.regionserver.thrift.framed": "false",
        }

    def prepare(self) -> None:
        _write_site(self.conf, self.site())
        (self.conf / "core-site.xml").write_text(_CORE_SITE)

    def config_dirs(self) -> list[Path]:
        return [self.conf]

    def jvm_options(self) -> list[str]:
        log4j = kerberos_home(self.state_dir) / "conf" / "log4j.properties"
        return [*JDK17_OPTIONS, f"-Dlog4j.configuration={log4j.as_uri()}", _krb5_option(Kdc(self.state_dir))]

    def connection_extra(self) -> dict[str, str]:
        """``eo_hbase_kerberos``'s extra: ``eo-writer`` from its keytab, to ``hbase/localhost``."""
        kdc = Kdc(self.state_dir)
        return {
            "auth": "kerberos",
            "kerberos_principal": CLIENT_PRINCIPAL,
            "kerberos_keytab": str(kdc.keytab("eo-writer")),
            "kerberos_service": "hbase",
            "kerberos_service_host": "localhost",
            "krb5_conf": str(kdc.krb5_conf),
            "sasl_qop": "auth-conf",
        }

    def healthy(self) -> bool:
        """True when ``getTableNames`` answers over SASL as ``eo-writer``.

        The probe runs in a child process: a Kerberos login sets process-wide variables
        (:mod:`airflow_provider_eo.clients.hbase_thrift`), which the caller must not inherit.
        """
        if not accepts_connections(self.port):
            return False
        probe = subprocess.run(
            [sys.executable, "-m", "eo_devtools.stack.hbase_kerberos_probe", str(self.port)],
            input=json.dumps(self.connection_extra()),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return probe.returncode == 0


class HBaseKerberosPart(StackPart):
    """The Kerberized HBase and its SASL Thrift server of the stack in ``state_dir``."""

    port_keys = KERBEROS_HBASE_PORT_KEYS
    conn_var = "AIRFLOW_CONN_EO_HBASE_KERBEROS"

    def services(self, ports: Mapping[str, int]) -> tuple[KerberosHBaseService, KerberosThriftService]:
        return KerberosHBaseService(self.state_dir, ports), KerberosThriftService(self.state_dir, ports)

    def connection(self, recorded: Mapping[str, int]) -> str:
        """``eo_hbase_kerberos`` (:meth:`KerberosThriftService.connection_extra`)."""
        thrift = KerberosThriftService(self.state_dir, recorded)
        extra: dict[str, Any] = thrift.connection_extra()
        return json.dumps({"conn_type": "hbase", "host": LOOPBACK, "port": thrift.port, "extra": extra})
