"""PostgreSQL for the local stack: initdb + postgres as a non-root user, role and db ``eo``.

The password of role ``eo`` is generated once, stored in ``<state>/secrets/ledger_password``
(mode 600) and handed to initdb through a temporary mode-600 file: it never appears
on a command line or in a log.

TLS is always on (``ssl=on``, the certificate of ``stack_pki``; its key copied to a mode-600
file owned by the server's OS user). ``<state>/postgres/pg_hba.conf`` (rewritten on every
start) lets role ``eo_tls`` in over TLS from 127.0.0.1 only, with a client certificate signed
by the stack CA whose CN is ``eo_tls`` (``cert`` auth); its sessions act as ``eo`` (a member
of it, ``ALTER ROLE ... SET role``), so what they create is ``eo``'s. Every other login keeps
the password (``scram-sha-256``, over TLS or not): password clients see exactly the errors
they saw before (a separate role, so libpq's ``sslmode=prefer`` never meets the cert rule).
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
from pathlib import Path
from urllib.parse import quote

import psycopg2

from eo_devtools.stack.pki import stack_pki
from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.process import ServiceStartError, log_tail
from eo_devtools.stack.service import MissingBinaryError, Service

ROLE = "eo"
TLS_ROLE = "eo_tls"  # logs in by client certificate only, then acts as ROLE
DATABASE = "eo"
ROOT_RUN_USER = "postgres"


def postgres_bin_dir() -> Path:
    """Directory holding initdb and postgres.

    ``$EO_PG_BIN_DIR`` when set (and then only it), else the newest
    ``/usr/lib/postgresql/*/bin``, else the directory of ``initdb`` on PATH.
    """
    configured = os.environ.get("EO_PG_BIN_DIR")
    if configured:
        candidates = [configured]
    else:
        candidates = sorted(
            glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True
        )
        on_path = shutil.which("initdb")
        if on_path:
            candidates.append(str(Path(on_path).parent))
    for candidate in candidates:
        if (Path(candidate) / "initdb").is_file() and (Path(candidate) / "postgres").is_file():
            return Path(candidate)
    where = f"EO_PG_BIN_DIR={configured}" if configured else "/usr/lib/postgresql/*/bin and PATH"
    raise MissingBinaryError(
        f"postgres: initdb and postgres not found in {where}; install the PostgreSQL server "
        "(scripts/setup.sh does: apt-get install postgresql) or set EO_PG_BIN_DIR"
    )


def ledger_password(state_dir: Path) -> str:
    """The ``eo`` role's password, created on first use (file mode 600)."""
    path = state_dir / "secrets" / "ledger_password"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.parent.chmod(0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(24))
    return path.read_text().strip()


def _check_traversable(path: Path, uid: int, gid: int) -> None:
    for ancestor in [path, *path.parents]:
        st = ancestor.stat()
        if st.st_uid == uid:
            ok = bool(st.st_mode & 0o100)
        elif st.st_gid == gid:
            ok = bool(st.st_mode & 0o010)
        else:
            ok = bool(st.st_mode & 0o001)
        if not ok:
            raise ServiceStartError(
                f"postgres: OS user uid={uid} cannot enter {ancestor} (mode {oct(st.st_mode & 0o777)}), "
                f"so it cannot use its data directory under {path}; choose a state dir it can reach"
            )


class PostgresService(Service):
    """PostgreSQL on 127.0.0.1:``port`` with data under ``<state>/postgres/data``."""

    name = "postgres"
    port_keys = ("postgres",)
    stop_signal = signal.SIGINT  # "fast" shutdown: does not wait for clients to disconnect
    startup_timeout_s = 60.0

    def preflight(self) -> None:
        postgres_bin_dir()

    @property
    def home(self) -> Path:
        return self.state_dir / "postgres"

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    def run_as(self) -> str | None:
        return ROOT_RUN_USER if os.geteuid() == 0 else None

    def cwd(self) -> Path:
        return self.home

    def _owner(self) -> tuple[int, int]:
        user = self.run_as()
        if user is None:
            return os.getuid(), os.getgid()
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise ServiceStartError(
                f"postgres: running as root needs the OS user {user!r} to run PostgreSQL, and it does not "
                "exist; install the postgresql package (it creates the user)"
            ) from None
        return entry.pw_uid, entry.pw_gid

    @property
    def hba_file(self) -> Path:
        return self.home / "pg_hba.conf"

    @property
    def tls_key(self) -> Path:
        return self.home / "server.key"

    def _write_tls_files(self) -> None:
        """The server key (mode 600, owned by the server's user) and pg_hba.conf."""
        uid, gid = self._owner()
        pki = stack_pki(self.state_dir)
        self.tls_key.unlink(missing_ok=True)
        fd = os.open(self.tls_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(pki.server_key.read_bytes())
        os.chown(self.tls_key, uid, gid)
        self.hba_file.write_text(
            f"hostssl all {TLS_ROLE} {LOOPBACK}/32 cert\nhost all all {LOOPBACK}/32 scram-sha-256\n"
        )
        os.chown(self.hba_file, uid, gid)

    def prepare(self) -> None:
        if (self.data_dir / "PG_VERSION").exists():
            self._write_tls_files()
            return
        uid, gid = self._owner()
        self.home.mkdir(parents=True, exist_ok=True)
        os.chown(self.home, uid, gid)
        _check_traversable(self.home, uid, gid)
        pwfile = self.home / ".initdb_pw"
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(ledger_password(self.state_dir) + "\n")
        os.chown(pwfile, uid, gid)
        argv = [str(postgres_bin_dir() / "initdb"), "-D", str(self.data_dir), "-U", ROLE]
        argv += ["--pwfile", str(pwfile), "--auth", "scram-sha-256", "-E", "UTF8", "--no-locale"]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(self.log_path, "ab") as log:
                result = subprocess.run(
                    argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.home, user=self.run_as(), check=False
                )
        finally:
            pwfile.unlink(missing_ok=True)
        if result.returncode != 0:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            raise ServiceStartError(
                f"postgres: initdb failed (exit {result.returncode}); last lines of {self.log_path}:\n"
                f"{log_tail(self.log_path)}"
            )
        self._write_tls_files()

    def argv(self) -> list[str]:
        pki = stack_pki(self.state_dir)
        return [
            str(postgres_bin_dir() / "postgres"),
            "-D",
            str(self.data_dir),
            "-c",
            f"listen_addresses={LOOPBACK}",
            "-c",
            f"port={self.port}",
            "-c",
            "unix_socket_directories=",
            "-c",
            "max_connections=200",
            "-c",
            "fsync=off",
            "-c",
            f"hba_file={self.hba_file}",
            "-c",
            "ssl=on",
            "-c",
            f"ssl_cert_file={pki.server_cert}",
            "-c",
            f"ssl_key_file={self.tls_key}",
            "-c",
            f"ssl_ca_file={pki.ca}",
        ]

    def dsn(self, database: str = DATABASE) -> str:
        """``postgresql://eo:PASSWORD@127.0.0.1:PORT/<database>`` (contains the secret)."""
        password = quote(ledger_password(self.state_dir), safe="")
        return f"postgresql://{ROLE}:{password}@{LOOPBACK}:{self.port}/{database}"

    def healthy(self) -> bool:
        try:
            conn = psycopg2.connect(self.dsn("postgres"), connect_timeout=2)
        except psycopg2.OperationalError:
            return False
        try:
            with conn.cursor() as cur:
                cur.execute("select 1")
                return cur.fetchone() == (1,)
        finally:
            conn.close()

    def after_start(self) -> None:
        conn = psycopg2.connect(self.dsn("postgres"), connect_timeout=5)
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute("select 1 from pg_database where datname = %s", (DATABASE,))
                if cur.fetchone() is None:
                    cur.execute(f'create database "{DATABASE}" owner "{ROLE}"')
                cur.execute("select 1 from pg_roles where rolname = %s", (TLS_ROLE,))
                if cur.fetchone() is None:
                    cur.execute(f'create role "{TLS_ROLE}" login in role "{ROLE}"')
                    cur.execute(f'alter role "{TLS_ROLE}" set role = "{ROLE}"')
        finally:
            conn.close()
