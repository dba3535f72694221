"""Redis (Debian's ``redis-server``) as the Celery broker of the stack's Airflow.

One ``redis-server`` in the foreground on 127.0.0.1, its port recorded under ``redis`` in
``stack.json``. Its files live in ``<state>/redis/``: ``redis.conf`` (mode 600: it holds
the password) and the append-only file, fsynced every second, so queued and unacknowledged
Celery messages survive a restart of the broker. The password is generated once into
``<state>/secrets/redis_password`` (mode 600) and reaches Redis through that config file
and Airflow through the ``AIRFLOW__CELERY__BROKER_URL`` environment variable: never a
command line, never a log (Celery and kombu print the URL with the password masked).
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path
from urllib.parse import quote

import redis

from eo_devtools.stack.airflow_config import write_private
from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.service import MissingBinaryError, Service

REDIS_PORT_KEY = "redis"
REDIS_SERVER = "redis-server"
DATABASE = 0


def redis_password(state_dir: Path) -> str:
    """The broker's password, created on first use (``<state>/secrets/redis_password``, mode 600)."""
    path = state_dir / "secrets" / "redis_password"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.parent.chmod(0o700)
        write_private(path, secrets.token_urlsafe(24) + "\n")
    return path.read_text().strip()


def broker_url(state_dir: Path, port: int) -> str:
    """``redis://:PASSWORD@127.0.0.1:PORT/0``: Celery's broker URL (contains the secret)."""
    return f"redis://:{quote(redis_password(state_dir), safe='')}@{LOOPBACK}:{port}/{DATABASE}"


def public_url(port: int) -> str:
    """The broker's address without the password (what ``status`` shows)."""
    return f"redis://{LOOPBACK}:{port}/{DATABASE}"


def redis_server_binary() -> str:
    """Path of ``redis-server``; :class:`MissingBinaryError` naming the package when absent."""
    found = shutil.which(REDIS_SERVER)
    if found is None:
        raise MissingBinaryError(
            "redis: redis-server not found on PATH; the Celery executor needs Redis as its broker: "
            "install Debian's redis-server (scripts/setup.sh does: apt-get install redis-server)"
        )
    return found


class RedisService(Service):
    """``redis-server <state>/redis/redis.conf`` on 127.0.0.1:``ports["redis"]``."""

    name = "redis"
    port_keys = (REDIS_PORT_KEY,)
    startup_timeout_s = 30.0
    stop_grace_s = 15.0  # SIGTERM: Redis fsyncs its append-only file and exits

    @property
    def home(self) -> Path:
        return self.state_dir / "redis"

    @property
    def config_path(self) -> Path:
        return self.home / "redis.conf"

    def preflight(self) -> None:
        redis_server_binary()

    def prepare(self) -> None:
        """Write ``redis.conf`` (mode 600) for the current port and password."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.home.chmod(0o700)
        lines = [
            f"bind {LOOPBACK}",
            f"port {self.port}",
            "protected-mode yes",
            "daemonize no",
            'logfile ""',  # stdout: the stack's logs/redis.log
            f"dir {self.home}",
            "appendonly yes",  # queued and unacked messages survive a broker restart
            "appendfsync everysec",
            'save ""',
            f"requirepass {redis_password(self.state_dir)}",
        ]
        write_private(self.config_path, "\n".join(lines) + "\n")

    def argv(self) -> list[str]:
        return [redis_server_binary(), str(self.config_path)]

    def cwd(self) -> Path:
        return self.home

    def healthy(self) -> bool:
        """True when an authenticated PING answers."""
        client = redis.Redis(
            host=LOOPBACK, port=self.port, password=redis_password(self.state_dir), socket_timeout=2
        )
        try:
            return bool(client.ping())
        except (redis.RedisError, OSError):
            return False
        finally:
            client.close()

    @property
    def url(self) -> str:
        """Celery's broker URL for this server (contains the password: never log it)."""
        return broker_url(self.state_dir, self.port)
