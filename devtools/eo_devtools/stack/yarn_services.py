"""The local YARN's two daemons: a ResourceManager and one NodeManager, each its own JVM.

Both run ``java -cp <state>/yarn/conf:<jars>/* <main class>`` (the jars pinned by
``jvm/yarn/pom.xml``, Apache Hadoop 3.5.0) on 127.0.0.1, with ``JAVA_HOME`` exported
(containers run ``$JAVA_HOME/bin/java``) and ``java.io.tmpdir`` under the state dir. Their
configuration: :mod:`.yarn_config`. The RM is healthy when its REST API reports the cluster
STARTED; the NM when its own REST API answers and the RM lists it RUNNING. Starting and
stopping them as a cluster: :mod:`.yarn_cluster`.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from eo_devtools.stack.java_service import JavaService
from eo_devtools.stack.jvm_artifacts import java_binary
from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.spark_services import write_executor_python
from eo_devtools.stack.yarn_config import (
    NM_PORT_KEYS,
    RM_PORT_KEYS,
    conf_dir,
    nm_log_dir,
    tmp_dir,
    write_conf,
)

RESOURCE_MANAGER = "yarn-resourcemanager"
NODE_MANAGER = "yarn-nodemanager"


def java_home() -> Path:
    """The JDK whose ``bin/java`` the stack runs (what ``JAVA_HOME`` must name for containers)."""
    return Path(java_binary()).resolve().parent.parent


def webapp_url(webapp_port: int) -> str:
    """``http://127.0.0.1:<port>``: the RM's web UI and REST API (``/ws/v1/cluster/...``)."""
    return f"http://{LOOPBACK}:{webapp_port}"


def rest_json(url: str, timeout_s: float = 5.0) -> dict[str, Any] | None:
    """The JSON a YARN REST endpoint answers, or None when it does not answer."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            data: dict[str, Any] = json.load(answer)
    except (OSError, ValueError):
        return None
    return data


def cluster_nodes(webapp_port: int) -> list[dict[str, Any]]:
    """The RM's ``/ws/v1/cluster/nodes`` entries (``id``, ``state``, ``totalResource``, ...);
    empty when the RM does not answer or knows no node."""
    data = rest_json(f"{webapp_url(webapp_port)}/ws/v1/cluster/nodes") or {}
    nodes = (data.get("nodes") or {}).get("node") or []
    return list(nodes)


def running_node_ids(webapp_port: int) -> set[str]:
    """``host:port`` of every node the RM lists as RUNNING (the host as Hadoop resolves
    127.0.0.1: usually ``localhost``)."""
    return {node["id"] for node in cluster_nodes(webapp_port) if node.get("state") == "RUNNING"}


def node_port(node_id: str) -> int:
    """The container manager port of a node id ``host:port``."""
    return int(node_id.rsplit(":", 1)[1])


def container_processes(state_dir: Path) -> list[int]:
    """Pids of the live container processes of the NodeManager of ``state_dir``.

    Containers run in sessions of their own (the NM starts them with ``setsid``) and with an
    environment of their own, in which ``LOG_DIRS`` names their log dir under
    :func:`.yarn_config.nm_log_dir`.
    """
    prefix = f"LOG_DIRS={nm_log_dir(state_dir)}/".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(item.startswith(prefix) for item in environ):
            found.append(int(entry.name))
    return found


class YarnDaemon(JavaService):
    """What the RM and NM share: the jars, the conf dir, the environment, no secrets."""

    component = "yarn"
    heap = "512m"
    startup_timeout_s = 120.0
    stop_grace_s = 20.0

    def config_dirs(self) -> list[Path]:
        return [conf_dir(self.state_dir)]

    def jvm_options(self) -> list[str]:
        return [
            f"-Djava.io.tmpdir={tmp_dir(self.state_dir)}",
            f"-Dhadoop.log.dir={self.state_dir / 'logs'}",
            "-Djava.net.preferIPv4Stack=true",
        ]

    def program_args(self) -> list[str]:
        return []

    def prepare(self) -> None:
        """Write the conf dirs (:func:`.yarn_config.write_conf`) and the containers' Python."""
        write_conf(self.state_dir, self.ports)
        write_executor_python(self.state_dir)

    def cwd(self) -> Path:
        return tmp_dir(self.state_dir)

    def environment(self) -> dict[str, str]:
        env = super().environment()
        env["JAVA_HOME"] = str(java_home())
        env["HADOOP_CONF_DIR"] = str(conf_dir(self.state_dir))
        for inherited in ("HADOOP_HOME", "HADOOP_YARN_HOME", "YARN_CONF_DIR", "CLASSPATH"):
            env.pop(inherited, None)
        return env

    @property
    def rm_webapp_port(self) -> int:
        return self.ports[RM_PORT_KEYS[4]]


class ResourceManagerService(YarnDaemon):
    """The ResourceManager with the capacity scheduler (one queue, ``default``)."""

    name = RESOURCE_MANAGER
    port_keys = RM_PORT_KEYS
    main_class = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"

    def healthy(self) -> bool:
        """True when ``/ws/v1/cluster/info`` answers with state STARTED."""
        data = rest_json(f"{webapp_url(self.rm_webapp_port)}/ws/v1/cluster/info") or {}
        return (data.get("clusterInfo") or {}).get("state") == "STARTED"


class NodeManagerService(YarnDaemon):
    """The one NodeManager; its node id is ``<host>:<yarn-nm port>`` (:meth:`node_id`)."""

    name = NODE_MANAGER
    port_keys = NM_PORT_KEYS
    main_class = "org.apache.hadoop.yarn.server.nodemanager.NodeManager"
    # On SIGTERM the NM unregisters and kills its containers within a second, then waits
    # about 7 s for the RM to confirm their applications' end and 10 s for its log-deletion
    # scheduler: SIGKILL after 5 s skips the waits (its callers sweep leftover containers).
    stop_grace_s = 5.0

    def node_id(self) -> str | None:
        """This NM's id as the RM lists it RUNNING, None when the RM does not."""
        port = self.ports[NM_PORT_KEYS[0]]
        ids = [node for node in running_node_ids(self.rm_webapp_port) if node_port(node) == port]
        return ids[0] if ids else None

    def healthy(self) -> bool:
        """True when the NM's own ``/ws/v1/node/info`` answers and the RM lists it RUNNING."""
        own = rest_json(f"http://{LOOPBACK}:{self.ports[NM_PORT_KEYS[2]]}/ws/v1/node/info")
        return own is not None and self.node_id() is not None
