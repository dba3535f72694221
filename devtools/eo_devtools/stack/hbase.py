"""Apache HBase for the local stack: standalone HMaster and HBase's own Thrift1 server.

Standalone mode runs one JVM holding the master, the region servers and ZooKeeper (HBase's
``LocalHBaseCluster``), with ``hbase.rootdir`` on the local filesystem under
``<state>/hbase/root`` (so tables survive ``down`` then ``up``; the write-ahead log is
replayed after a crash). The topology's ``hbase_regionservers`` (N, default 1) says how
many region servers that JVM runs: N = 1 is the stack as it always was (the region server
on its own fixed port); N > 1 sets ``hbase.regionservers`` = N and gives the region servers
ephemeral ports (``hbase.regionserver.port`` 0: they live and die with the master's JVM;
clients find them through ZooKeeper and ``hbase:meta``), waits for all N before the master
assigns regions, and runs the balancer every :data:`BALANCER_PERIOD_MS`. The Thrift1 server,
the one happybase speaks, is a second JVM that reaches the first through ZooKeeper.
Web UIs are off. Both JVMs get the ``--add-opens`` options HBase's own ``bin/hbase`` adds
on JDK 17.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

import happybase

from eo_devtools.stack.hbase_admin import HBaseTableTool
from eo_devtools.stack.hbase_layout import JDK17_OPTIONS, hbase_home
from eo_devtools.stack.java_service import JavaService
from eo_devtools.stack.ports import LOOPBACK, accepts_connections

_LOG4J = """\
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.org.apache.hadoop=WARN
log4j.logger.org.apache.hadoop.hbase=INFO
log4j.logger.org.apache.hadoop.hbase.metrics=WARN
"""


#: How often the master's balancer runs with several region servers (HBase's default is
#: 5 minutes; a short period lets tests and the demo see regions move between servers).
BALANCER_PERIOD_MS = 20_000


def site_xml(site: dict[str, str]) -> str:
    """A Hadoop-style configuration file (``hbase-site.xml``, ``core-site.xml``) holding ``site``."""
    properties = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
        for k, v in site.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{properties}</configuration>\n'


def _write_site(conf: Path, site: dict[str, str]) -> None:
    """``<conf>/hbase-site.xml`` holding ``site``."""
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "hbase-site.xml").write_text(site_xml(site))


class HBaseService(JavaService):
    """HBase standalone (master + ``topology.hbase_regionservers`` region servers + ZooKeeper in one JVM).

    The ``hbase-regionserver`` port is the region server's with one region server; with
    several, the region servers take ephemeral ports and that port stays unused.
    """

    name = "hbase"
    port_keys = ("hbase-master", "hbase-regionserver", "hbase-zookeeper")
    component = "hbase"
    main_class = "org.apache.hadoop.hbase.master.HMaster"
    heap = "1536m"
    stop_grace_s = 45.0
    startup_timeout_s = 120.0

    @property
    def home(self) -> Path:
        return hbase_home(self.state_dir)

    def _port(self, index: int) -> int:
        """The port of ``port_keys[index]``: 0 the master, 1 the region server, 2 ZooKeeper."""
        return self.ports[self.port_keys[index]]

    @property
    def regionservers(self) -> int:
        """How many region servers the master's JVM runs."""
        return self.topology.hbase_regionservers

    def site(self) -> dict[str, str]:
        """``hbase-site.xml`` of both JVMs."""
        count = self.regionservers
        return {
            "hbase.cluster.distributed": "false",
            "hbase.rootdir": (self.home / "root").as_uri(),
            "hbase.tmp.dir": str(self.home / "tmp"),
            "hbase.zookeeper.quorum": LOOPBACK,
            "hbase.zookeeper.property.clientPort": str(self._port(2)),
            "hbase.zookeeper.property.dataDir": str(self.home / "zk"),
            "hbase.master.hostname": LOOPBACK,
            "hbase.master.port": str(self._port(0)),
            "hbase.master.info.port": "-1",
            "hbase.regionserver.hostname": LOOPBACK,
            # Several region servers in one JVM cannot share a port: 0 = an ephemeral one each.
            # (``hbase.localcluster.assign.random.ports`` would only replace HBase's default
            # ports 16000/16020, and the master keeps its fixed port: clients and the health
            # check use it.)
            "hbase.regionserver.port": str(self._port(1)) if count == 1 else "0",
            "hbase.regionserver.info.port": "-1",
            # The local filesystem has no hflush/hsync capability flags; HBase refuses to
            # write its WAL there unless told not to check.
            "hbase.unsafe.stream.capability.enforce": "false",
            "hbase.wal.provider": "filesystem",
            # The master waits for exactly the region servers it runs (not its default 4.5 s
            # for more), so regions are spread over all of them from the start.
            "hbase.master.wait.on.regionservers.mintostart": str(count),
            "hbase.master.wait.on.regionservers.maxtostart": str(count),
            "hbase.thrift.info.port": "-1",
        }

    def master_site(self) -> dict[str, str]:
        """``master-conf/hbase-site.xml``: :meth:`site` plus what only this JVM sets.

        On SIGTERM the embedded ZooKeeper may stop before the region server has deleted its
        ephemeral node, and the region server's ZooKeeper calls then retry with HBase's
        default backoff (1 s, doubling): stopping took about 25 s instead of 1-2 s. With
        100 ms the same number of retries ends within a second or two. Only this JVM, whose
        ZooKeeper is in-process, gets it: the Thrift server's client keeps HBase's default
        retries (it outlives a master restart). (A master stopped while still initializing,
        seconds after its start, can still hang until the SIGKILL after ``stop_grace_s``.)
        """
        site = {**self.site(), "zookeeper.recovery.retry.intervalmill": "100"}
        if self.regionservers > 1:
            # HMasterCommandLine's count of LocalHBaseCluster region servers.
            site["hbase.regionservers"] = str(self.regionservers)
            site["hbase.balancer.period"] = str(BALANCER_PERIOD_MS)
        return site

    def config_dirs(self) -> list[Path]:
        return [self.home / "master-conf"]

    def jvm_options(self) -> list[str]:
        return [*JDK17_OPTIONS, f"-Dlog4j.configuration={(self.home / 'conf' / 'log4j.properties').as_uri()}"]

    def program_args(self) -> list[str]:
        return ["start"]

    def prepare(self) -> None:
        """Write ``conf/hbase-site.xml`` (clients, the Thrift server), ``master-conf/hbase-site.xml``
        (this JVM, :meth:`master_site`) and ``conf/log4j.properties``."""
        conf = self.home / "conf"
        _write_site(conf, self.site())
        _write_site(self.home / "master-conf", self.master_site())
        (conf / "log4j.properties").write_text(_LOG4J)

    def healthy(self) -> bool:
        """True when the master, ZooKeeper and every region server are up.

        One region server: its fixed port accepts connections. Several: the master and
        ZooKeeper ports accept connections and the master lists all N region servers as live
        (one short JVM of :class:`~eo_devtools.stack.hbase_admin.HBaseTableTool` ``servers``,
        asked only once the ports are open). Regions answering reads is proven by the Thrift
        server's health check, which the stack runs next.
        """
        if self.regionservers == 1:
            return all(accepts_connections(self.ports[key]) for key in self.port_keys)
        if not all(accepts_connections(self.ports[key]) for key in ("hbase-master", "hbase-zookeeper")):
            return False
        try:
            return len(HBaseTableTool(self.state_dir).servers(timeout_s=30)) >= self.regionservers
        except Exception:
            return False


class HBaseThriftService(JavaService):
    """HBase's Thrift1 server (buffered transport, binary protocol) on 127.0.0.1:``port``."""

    name = "hbase-thrift"
    port_keys = ("hbase-thrift",)
    component = "hbase"
    main_class = "org.apache.hadoop.hbase.thrift.ThriftServer"
    heap = "512m"
    startup_timeout_s = 120.0

    def config_dirs(self) -> list[Path]:
        return [hbase_home(self.state_dir) / "conf"]

    def jvm_options(self) -> list[str]:
        log4j = hbase_home(self.state_dir) / "conf" / "log4j.properties"
        return [*JDK17_OPTIONS, f"-Dlog4j.configuration={log4j.as_uri()}"]

    def program_args(self) -> list[str]:
        return ["-b", LOOPBACK, "-p", str(self.port), "start"]

    def healthy(self) -> bool:
        """True when Thrift answers ``getTableNames`` and a read of ``hbase:meta`` (regions online)."""
        if not accepts_connections(self.port):
            return False
        try:
            connection = happybase.Connection(LOOPBACK, self.port, timeout=5000)
            try:
                connection.tables()
                connection.client.getRow(b"hbase:meta", b"hbase:namespace", {})
            finally:
                connection.close()
        except Exception:
            return False
        return True
