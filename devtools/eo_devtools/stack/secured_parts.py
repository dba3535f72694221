"""The stack's secured parts, switched on and off together: ``eo-stack up --tls`` and ``--kerberos``.

Contract: ``--tls`` runs :data:`TLS_PARTS` (the OAUTHBEARER Kafka node and its OAuth issuer, the
registry's HTTPS proxy, the HTTPS Thrift server), ``--kerberos`` the KDC (:mod:`.kdc`) and then
:data:`KERBEROS_PARTS` (the Kerberized HBase). :meth:`SecuredParts.switch` starts (True), stops
(False) or keeps as recorded (None) each group; :meth:`SecuredParts.conn_env` gives the
``AIRFLOW_CONN_*`` of every running part (some hold secrets: never log them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from eo_devtools.stack.hbase_kerberos import HBaseKerberosPart
from eo_devtools.stack.hbase_thrift_tls import HBaseThriftTlsPart
from eo_devtools.stack.kafka_oauth_part import KafkaOAuthPart
from eo_devtools.stack.kdc import KDC_PORT_KEY, Kdc
from eo_devtools.stack.registry_tls_part import RegistryTlsPart
from eo_devtools.stack.stack_part import StackPart, WritePorts

TLS_PARTS: tuple[type[StackPart], ...] = (KafkaOAuthPart, RegistryTlsPart, HBaseThriftTlsPart)
KERBEROS_PARTS: tuple[type[StackPart], ...] = (HBaseKerberosPart,)


def is_secured_key(key: str) -> bool:
    """Is ``key`` a port of a secured part (or the KDC's)?"""
    return key == KDC_PORT_KEY or any(part.is_key(key) for part in (*TLS_PARTS, *KERBEROS_PARTS))


class SecuredParts:
    """The secured parts of the stack in ``state_dir``; ``recorded`` reads ``stack.json``'s ports
    afresh, ``write_ports`` writes them."""

    def __init__(self, state_dir: Path, recorded: Callable[[], Mapping[str, int]], write_ports: WritePorts):
        self.state_dir = state_dir
        self.recorded = recorded
        self.write_ports = write_ports

    def switch(self, *, tls: bool | None, kerberos: bool | None) -> None:
        """Start (True), stop (False) or keep as recorded (None) the TLS and the Kerberos parts."""
        recorded = self.recorded()
        if tls or (tls is None and TLS_PARTS[0].is_running(recorded)):
            for part in TLS_PARTS:
                part(self.state_dir).start(self.recorded(), self.write_ports)
        elif tls is False:
            for part in reversed(TLS_PARTS):
                part(self.state_dir).stop(self.recorded(), self.write_ports)
        kdc = Kdc(self.state_dir)
        if kerberos or (kerberos is None and KDC_PORT_KEY in recorded):
            kdc.start(self.recorded(), self.write_ports)
            for part in KERBEROS_PARTS:
                part(self.state_dir).start(self.recorded(), self.write_ports)
        elif kerberos is False:
            for part in reversed(KERBEROS_PARTS):
                part(self.state_dir).stop(self.recorded(), self.write_ports)
            kdc.stop(self.recorded(), self.write_ports)

    def status(self) -> dict[str, dict[str, Any]]:
        """Every running part's services' status entries."""
        recorded = self.recorded()
        result: dict[str, dict[str, Any]] = {}
        for part in (*TLS_PARTS, *KERBEROS_PARTS):
            if part.is_running(recorded):
                result.update(part(self.state_dir).status(recorded))
        return result

    def conn_env(self) -> dict[str, str]:
        """``AIRFLOW_CONN_*`` -> value of every running part's connection."""
        recorded = self.recorded()
        return {
            part.conn_var: part(self.state_dir).connection(recorded)
            for part in (*TLS_PARTS, *KERBEROS_PARTS)
            if part.is_running(recorded)
        }
