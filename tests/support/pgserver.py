"""A real PostgreSQL server for the tests: Debian's `postgresql` package (scripts/setup.sh installs
it), a fresh cluster in a temporary folder, started as the `postgres` user on a free port of
127.0.0.1 with a password, and torn down afterwards. No mock: what the history tests talk to is
the server the package ships."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def find_bindir() -> Path | None:
    """The newest installed server's bin folder (/usr/lib/postgresql/<version>/bin)."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0
    )
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    USER = "postgres"

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.base = Path(tempfile.mkdtemp(prefix="wl-pg-"))
        self.data, self.sockets, self.log = self.base / "data", self.base / "sockets", self.base / "server.log"
        self.password = "wl-" + secrets.token_hex(12)
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        self._dbs = 0

    def _run(self, *argv: str) -> subprocess.CompletedProcess:
        cmd = [str(self.bindir / argv[0]), *argv[1:]]
        if self.as_root:  # initdb and the server refuse to run as root: they run as the postgres user
            cmd = ["runuser", "-u", self.USER, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def start(self) -> PostgresServer:
        self.sockets.mkdir()
        pwfile = self.base / "pw"
        pwfile.write_text(self.password + "\n")
        if self.as_root:
            shutil.chown(self.base, self.USER)
            for path in (self.sockets, pwfile):
                shutil.chown(path, self.USER)
        user = self.USER if self.as_root else os.environ.get("USER", "postgres")
        self.user = user
        init = self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            user,
            "--pwfile",
            str(pwfile),
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed: {init.stderr or init.stdout}")
        pwfile.unlink()
        options = (
            f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c max_connections=40"
        )
        started = self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start"
        )
        if started.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {started.stderr or started.stdout}\n{log[-2000:]}")
        return self

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.base, ignore_errors=True)

    def url(self, database: str = "postgres", *, password: str | None = None) -> str:
        return f"postgresql://{self.user}:{password or self.password}@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        self._dbs += 1
        name = f"wl_{os.getpid()}_{self._dbs}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)
