"""A real, throwaway PostgreSQL cluster on 127.0.0.1 for tests: `initdb` into a temporary
folder, `postgres` on a free port, a database per store; stopped (as a crash would, or
politely) and started again on the same port and data; removed at the end. Importable without
pytest (`python -m bench.store_writes` starts one too): what is missing raises `Missing`, which
`postgres_or_skip` turns into a skipped test.

The binaries are looked for on PATH, in /usr/local/bin and in Debian's
/usr/lib/postgresql/<version>/bin (`apt-get install postgresql`). PostgreSQL refuses to run
as root: as root, `initdb` and `pg_ctl` run as the `postgres` user (which Debian's package
creates) over a folder it owns. Whatever is missing makes `postgres_or_skip` skip the test
and say what to install.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from mlflow_server import steady_port

INSTALL = "install PostgreSQL's server (Debian: `apt-get install postgresql`)"
PROGRAMS = ("initdb", "pg_ctl", "postgres")


class Missing(RuntimeError):
    """What a PostgreSQL server here needs and lacks; the message says what to install."""


def find_bin_dir() -> Path | None:
    """The first folder holding initdb, pg_ctl and postgres: PATH's, /usr/local/bin, then
    Debian's versioned folders, newest first."""
    on_path = shutil.which("initdb")
    candidates = [Path(on_path).resolve().parent] if on_path else []
    candidates.append(Path("/usr/local/bin"))
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = [d for d in debian.iterdir() if d.name.split(".")[0].isdigit()]
        versions.sort(key=lambda d: [int(p) for p in d.name.split(".") if p.isdigit()])
        candidates += [d / "bin" for d in reversed(versions)]
    for folder in candidates:
        if all(os.access(folder / p, os.X_OK) for p in PROGRAMS):
            return folder
    return None


class Postgres:
    """A PostgreSQL cluster in a temporary folder, trusting connections from 127.0.0.1."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.port = steady_port()
        # Not under pytest's tmp_path: its folders are private to this user, and the server
        # may run as another one.
        self.root = Path(tempfile.mkdtemp(prefix="raystudy-pg-"))
        self.data = self.root / "data"
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self._as: list[str] = []
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                self.remove()
                raise Missing(
                    f"running as root and there is no `postgres` user to run as; {INSTALL}"
                ) from None
            shutil.chown(self.root, "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
            self.user = "postgres"

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self._as, str(self.bin_dir / args[0]), *args[1:]],
            cwd=self.root,  # a folder the server's user may enter
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def init(self) -> Postgres:
        done = self._run(
            "initdb", "-D", str(self.data), "-A", "trust", "-U", self.user, "-E", "UTF8",
            "--no-sync",
        )  # fmt: skip
        if done.returncode:
            self.remove()
            raise Missing(f"initdb failed ({done.stderr.strip()[-300:]}); {INSTALL}")
        return self

    def start(self, fsync: bool = False) -> Postgres:
        """`fsync` off (the default): a test's data need not outlive the machine, only the
        server; on, as a real deployment runs it (a benchmark's timings)."""
        options = (
            f"-h 127.0.0.1 -p {self.port} -k {self.root} "
            f"-c fsync={'on' if fsync else 'off'} -c max_connections=300"
        )
        done = self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", options,
            "-w", "-t", "60", "start",
        )  # fmt: skip
        if done.returncode:
            raise AssertionError(f"postgres did not start: {done.stdout}{done.stderr}{self.log()}")
        return self

    def stop(self, mode: str = "fast") -> None:
        """`pg_ctl stop`: "fast" ends the sessions and checkpoints; "immediate" quits at once,
        as a crash would (the next start recovers from the write-ahead log)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def running(self) -> bool:
        return self._run("pg_ctl", "-D", str(self.data), "status").returncode == 0

    def log(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def create_database(self, name: str) -> str:
        """A new database; returns the URI MLflow (and the study spec) takes."""
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=self.port, user=self.user, dbname="postgres")
        try:
            conn.autocommit = True  # CREATE DATABASE cannot run in a transaction
            conn.cursor().execute(f'CREATE DATABASE "{name}"')
        finally:
            conn.close()
        return self.uri(name)

    def password_role(self, role: str, password: str, database: str) -> None:
        """A login role that must give `password` (scram-sha-256) over TCP, owning the new
        `database`; every other role is still trusted."""
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=self.port, user=self.user, dbname="postgres")
        try:
            conn.autocommit = True
            cur = conn.cursor()
            cur.execute(f'CREATE ROLE "{role}" LOGIN PASSWORD %s', (password,))
            cur.execute(f'CREATE DATABASE "{database}" OWNER "{role}"')
            cur.execute("SHOW hba_file")
            hba = Path(cur.fetchone()[0])
        finally:
            conn.close()
        # The first line that matches decides: this role's line goes before the trust lines.
        # (Written in place, so it keeps its owner when the server runs as `postgres`.)
        hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        done = self._run("pg_ctl", "-D", str(self.data), "reload")
        if done.returncode:
            raise AssertionError(f"pg_ctl reload failed: {done.stderr}")

    def uri(self, database: str) -> str:
        """The URI as a study spec stores it: the driver named (see `postgres_driver`)."""
        return f"postgresql+psycopg2://{self.user}@127.0.0.1:{self.port}/{database}"

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def started(fsync: bool = False) -> Postgres:
    """A started cluster (`Postgres.start`'s `fsync`); raises `Missing` with what is missing
    and how to install it."""
    try:
        import psycopg2  # noqa: F401  (MLflow's driver for postgresql:// stores)
    except ImportError:
        raise Missing("psycopg2 is missing: pip install -e '.[dev]'") from None
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise Missing(
            f"no PostgreSQL server binaries ({', '.join(PROGRAMS)}) on PATH, in /usr/local/bin "
            f"or /usr/lib/postgresql/*/bin; {INSTALL}"
        )
    return Postgres(bin_dir).init().start(fsync)


def postgres_or_skip() -> Postgres:
    """A started cluster, or the test skipped with what is missing and how to install it."""
    import pytest

    try:
        return started()
    except Missing as exc:
        pytest.skip(str(exc))
