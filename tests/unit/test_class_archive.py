"""A JVM server's class-data archive (eo_devtools.stack.class_archive), made with a real JDK."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from eo_devtools.stack.class_archive import archive_path, ensure_archive, jdk_digest
from eo_devtools.stack.jvm_artifacts import java_binary
from eo_devtools.stack.ports import accepts_connections, find_free_port
from eo_devtools.stack.process import ServiceStartError

SERVER = """
import java.net.ServerSocket;
public class Serve {
    public static void main(String[] args) throws Exception {
        try (ServerSocket socket = new ServerSocket(Integer.parseInt(args[0]), 1,
                java.net.InetAddress.getLoopbackAddress())) {
            while (true) { socket.accept().close(); }
        }
    }
}
"""


@pytest.fixture(scope="module")
def server_jar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-class TCP server (``Serve <port>``) in a jar (CDS takes jars, not class directories)."""
    source = tmp_path_factory.mktemp("serve")
    (source / "Serve.java").write_text(SERVER)
    bin_dir = Path(java_binary()).resolve().parent
    subprocess.run([bin_dir / "javac", "-d", source, source / "Serve.java"], check=True, timeout=120)
    subprocess.run([bin_dir / "jar", "cf", source / "serve.jar", "-C", source, "Serve.class"], check=True)
    return source / "serve.jar"


def test_the_archive_is_named_by_the_jdk_and_made_once(server_jar: Path, tmp_path: Path) -> None:
    java = java_binary()
    archive = archive_path(tmp_path, java)
    assert archive == tmp_path / f"classes-{jdk_digest(java)}.jsa"
    port = find_free_port()
    argv = [java, "-cp", str(server_jar), "Serve", str(port)]
    made = ensure_archive(archive, argv, lambda: accepts_connections(port), tmp_path / "archive.log")
    assert made == archive and archive.stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["archive.log", archive.name]  # no partial left
    assert not accepts_connections(port)  # the server that made it is stopped
    # Made already: returned as is, nothing run (this argv would fail).
    assert ensure_archive(archive, ["/bin/false"], lambda: False, tmp_path / "unused.log") == archive
    assert not (tmp_path / "unused.log").exists()


def test_a_server_that_never_answers_fails_naming_its_log(tmp_path: Path) -> None:
    archive = tmp_path / "classes.jsa"
    log = tmp_path / "archive.log"
    with pytest.raises(ServiceStartError) as failed:
        ensure_archive(archive, [java_binary(), "-version"], lambda: False, log, timeout_s=60)
    assert str(failed.value) == f"making the class archive {archive}: the server did not answer; see {log}"
    assert "version" in log.read_text()
    assert not archive.exists()
