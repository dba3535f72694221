"""What the HBase servers and the Admin tool share: where the stack's HBase files are
(:func:`hbase_home`) and the JVM options HBase needs on JDK 17 (:data:`JDK17_OPTIONS`).

Its own module so that :mod:`eo_devtools.stack.hbase` (the services) and
:mod:`eo_devtools.stack.hbase_admin` (the Admin tool, which the services' health check
runs) both import it without importing each other in a circle.
"""

from __future__ import annotations

from pathlib import Path

# What bin/hbase adds for JDK 17 (HBASE-26038), so HBase's shaded netty and its
# reflective tricks work on the module system.
JDK17_OPTIONS: tuple[str, ...] = (
    "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
    "--add-modules=jdk.unsupported",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.dns=ALL-UNNAMED",
    "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
)


def hbase_home(state_dir: Path) -> Path:
    """``<state>/hbase``: configuration in ``conf/`` (the master's own in ``master-conf/``),
    data in ``root/``, ZooKeeper in ``zk/``."""
    return state_dir / "hbase"
