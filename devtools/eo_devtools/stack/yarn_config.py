"""The local YARN's configuration files, as pure functions of the state dir and the ports.

Layout under ``<state>/yarn``: ``conf/`` (the daemons' classpath head: ``core-site.xml``,
``yarn-site.xml``, ``capacity-scheduler.xml``, ``log4j.properties``), ``client-conf/`` (what
spark-submit reads through ``HADOOP_CONF_DIR``/``YARN_CONF_DIR``: ``core-site.xml`` and
``yarn-site.xml``), ``tmp/`` (``hadoop.tmp.dir`` and the daemons' ``java.io.tmpdir``),
``nm-local/`` (the NodeManager's local dirs: one ``usercache/<user>/appcache/<app>/<container>``
per container, holding its ``launch_container.sh``), ``nm-logs/`` (one
``<app>/<container>/{stdout,stderr}`` per container; log aggregation is off),
``node-attributes/`` and ``staging/`` (``spark.yarn.stagingDir``).

The cluster's filesystem is the local one (``fs.defaultFS=file:///``): the RM, the NM,
the containers and spark-submit share one machine, so a local path is the same file for
all of them, and no HDFS daemons are needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from xml.sax.saxutils import escape

from eo_devtools.stack.ports import LOOPBACK

RM_PORT_KEYS = ("yarn-rm", "yarn-rm-scheduler", "yarn-rm-tracker", "yarn-rm-admin", "yarn-rm-webapp")
"""The ResourceManager's ports: clients, AMs, NMs, admin, REST/web UI."""
NM_PORT_KEYS = ("yarn-nm", "yarn-nm-localizer", "yarn-nm-webapp")
"""The NodeManager's ports: container manager, localizer, REST/web UI."""
NM_MEMORY_MB = 4096
"""What the NodeManager offers: two Spark applications of one 768 MB driver and one 768 MB executor."""
NM_VCORES = 2
MIN_ALLOCATION_MB = 128
NM_HEARTBEAT_MS = 250
"""NM -> RM heartbeat; the capacity scheduler allocates containers on heartbeats (default 1000)."""
NM_EXPIRY_MS = 30_000
"""How long the RM waits for a silent NM before it marks it LOST (default 10 minutes)."""
DEBUG_DELAY_S = 600
"""How long the NM keeps a finished application's local dirs (launch files) and logs."""

_LOG4J = """\
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.http.requests=WARN
log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.RMAuditLogger=WARN
log4j.logger.org.apache.hadoop.yarn.server.nodemanager.NMAuditLogger=WARN
"""


def yarn_home(state_dir: Path) -> Path:
    """``<state>/yarn``: every file of the local YARN."""
    return state_dir / "yarn"


def conf_dir(state_dir: Path) -> Path:
    """The daemons' configuration directory (first on their classpath)."""
    return yarn_home(state_dir) / "conf"


def client_conf_dir(state_dir: Path) -> Path:
    """The Hadoop client configuration for spark-submit (``HADOOP_CONF_DIR``, ``YARN_CONF_DIR``)."""
    return yarn_home(state_dir) / "client-conf"


def staging_dir(state_dir: Path) -> Path:
    """Where spark-submit stages an application's files (``spark.yarn.stagingDir``)."""
    return yarn_home(state_dir) / "staging"


def nm_log_dir(state_dir: Path) -> Path:
    """The NodeManager's container log dir: ``<app id>/<container id>/{stdout,stderr}``."""
    return yarn_home(state_dir) / "nm-logs"


def nm_local_dir(state_dir: Path) -> Path:
    """The NodeManager's local dir (containers' working dirs and ``launch_container.sh``)."""
    return yarn_home(state_dir) / "nm-local"


def tmp_dir(state_dir: Path) -> Path:
    """``hadoop.tmp.dir`` and the daemons' ``java.io.tmpdir``."""
    return yarn_home(state_dir) / "tmp"


def _address(ports: Mapping[str, int], key: str) -> str:
    if key not in ports:
        raise KeyError(f"YARN configuration needs port {key!r}; the ports given are {sorted(ports)}")
    return f"{LOOPBACK}:{ports[key]}"


def core_site(state_dir: Path) -> dict[str, str]:
    """``core-site.xml``: the local filesystem as the cluster's, temporary files in the state dir."""
    return {"fs.defaultFS": "file:///", "hadoop.tmp.dir": str(tmp_dir(state_dir))}


def yarn_site(state_dir: Path, ports: Mapping[str, int]) -> dict[str, str]:
    """``yarn-site.xml`` of both daemons and of clients. Raises KeyError naming a missing port key."""
    home = yarn_home(state_dir)
    rm = dict(zip(RM_PORT_KEYS, (_address(ports, key) for key in RM_PORT_KEYS), strict=True))
    nm = dict(zip(NM_PORT_KEYS, (_address(ports, key) for key in NM_PORT_KEYS), strict=True))
    return {
        "yarn.resourcemanager.hostname": LOOPBACK,
        "yarn.resourcemanager.address": rm["yarn-rm"],
        "yarn.resourcemanager.scheduler.address": rm["yarn-rm-scheduler"],
        "yarn.resourcemanager.resource-tracker.address": rm["yarn-rm-tracker"],
        "yarn.resourcemanager.admin.address": rm["yarn-rm-admin"],
        "yarn.resourcemanager.webapp.address": rm["yarn-rm-webapp"],
        "yarn.resourcemanager.scheduler.class": (
            "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler"
        ),
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": str(NM_HEARTBEAT_MS),
        "yarn.nm.liveness-monitor.expiry-interval-ms": str(NM_EXPIRY_MS),
        "yarn.scheduler.minimum-allocation-mb": str(MIN_ALLOCATION_MB),
        "yarn.scheduler.maximum-allocation-mb": str(NM_MEMORY_MB),
        "yarn.scheduler.minimum-allocation-vcores": "1",
        "yarn.scheduler.maximum-allocation-vcores": str(NM_VCORES),
        "yarn.node-attribute.fs-store.root-dir": (home / "node-attributes").as_uri(),
        "yarn.node-labels.fs-store.root-dir": (home / "node-labels").as_uri(),
        "yarn.nodemanager.hostname": LOOPBACK,
        "yarn.nodemanager.address": nm["yarn-nm"],
        "yarn.nodemanager.localizer.address": nm["yarn-nm-localizer"],
        "yarn.nodemanager.webapp.address": nm["yarn-nm-webapp"],
        "yarn.nodemanager.resource.memory-mb": str(NM_MEMORY_MB),
        "yarn.nodemanager.resource.cpu-vcores": str(NM_VCORES),
        "yarn.nodemanager.vmem-check-enabled": "false",
        "yarn.nodemanager.pmem-check-enabled": "false",
        "yarn.nodemanager.disk-health-checker.enable": "false",
        "yarn.nodemanager.local-dirs": str(nm_local_dir(state_dir)),
        "yarn.nodemanager.log-dirs": str(nm_log_dir(state_dir)),
        "yarn.nodemanager.remote-app-log-dir": str(home / "app-logs"),
        "yarn.nodemanager.recovery.dir": str(home / "nm-recovery"),
        "yarn.nodemanager.delete.debug-delay-sec": str(DEBUG_DELAY_S),
        "yarn.log-aggregation-enable": "false",
        "yarn.nodemanager.aux-services": "",
    }


def capacity_scheduler() -> dict[str, str]:
    """``capacity-scheduler.xml``: one queue, ``default``, with the whole cluster; up to 80 % of
    it may go to application masters (Spark's cluster-mode drivers)."""
    return {
        "yarn.scheduler.capacity.root.queues": "default",
        "yarn.scheduler.capacity.root.default.capacity": "100",
        "yarn.scheduler.capacity.root.default.maximum-capacity": "100",
        "yarn.scheduler.capacity.root.default.state": "RUNNING",
        "yarn.scheduler.capacity.maximum-am-resource-percent": "0.8",
    }


def hadoop_xml(properties: Mapping[str, str]) -> str:
    """A Hadoop ``<configuration>`` file holding ``properties``, escaped."""
    body = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
        for k, v in properties.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n'


def write_conf(state_dir: Path, ports: Mapping[str, int]) -> None:
    """Write :func:`conf_dir` and :func:`client_conf_dir` (idempotent; creates the data dirs)."""
    core = hadoop_xml(core_site(state_dir))
    yarn = hadoop_xml(yarn_site(state_dir, ports))
    files = {
        conf_dir(state_dir): {
            "core-site.xml": core,
            "yarn-site.xml": yarn,
            "capacity-scheduler.xml": hadoop_xml(capacity_scheduler()),
            "log4j.properties": _LOG4J,
        },
        client_conf_dir(state_dir): {"core-site.xml": core, "yarn-site.xml": yarn},
    }
    for directory, contents in files.items():
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in contents.items():
            (directory / name).write_text(text)
    for data in (tmp_dir(state_dir), nm_local_dir(state_dir), nm_log_dir(state_dir), staging_dir(state_dir)):
        data.mkdir(parents=True, exist_ok=True)
