"""A real `mlflow server` on 127.0.0.1 for tests and benchmarks: started, stopped (as a crash
would) and started again on the same port and store. Importable without pytest (the benchmarks
under bench/ start theirs with it)."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def steady_port() -> int:
    """A free port for a server that is stopped and started again on it: below the kernel's
    ephemeral range and above Ray's worker ports (10002-19999). A port from `free_port` is
    one the kernel hands out again to any outgoing connection (a Ray worker's, MLflow's) and
    was lost that way while a store was down under load; the kernel never hands out this one."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    ports = list(range(20000, max(low, 20001)))
    random.shuffle(ports)
    for port in ports[:200]:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return free_port()


class MlflowServer:
    """A real `mlflow server` on 127.0.0.1 over a sqlite store in `root` (or the database
    `backend`); `stop()` and `start()` again keep the port and the store, as a restarted
    server would.

    `workers`: its request worker processes (None: MLflow's default, 4, as `mlflow server` runs
    on a cluster's head, cluster.yaml); `log`: a file for its output (None: discarded)."""

    def __init__(
        self,
        root: Path,
        port: int | None = None,
        backend: str | None = None,
        workers: int | None = 1,
        log: Path | None = None,
    ) -> None:
        self.root, self.port = root, port or steady_port()
        self.backend = backend or f"sqlite:///{root / 'server.db'}"
        self.workers, self.log = workers, log
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout_s: float = 90.0) -> MlflowServer:
        workers = [] if self.workers is None else ["--workers", str(self.workers)]
        out = subprocess.DEVNULL if self.log is None else self.log.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mlflow",
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--backend-store-uri",
                self.backend,
                "--artifacts-destination",
                str(self.root / "artifacts"),
                *workers,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            # As `raystudy ui` starts it: without MLflow 3's GenAI job runner, which no study
            # uses (7 more processes; test_tracking_server took 77 s with it, 70 s without).
            env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
            start_new_session=True,  # it starts workers of its own: stop the whole session
        )
        if out is not subprocess.DEVNULL:
            out.close()  # the server holds its own copy
        deadline = time.monotonic() + timeout_s
        while not self.healthy():
            if time.monotonic() > deadline:
                self.stop()
                seen = f": see {self.log}" if self.log else ""
                raise AssertionError(f"mlflow server did not answer {self.url}/health{seen}")
            time.sleep(0.5)
        return self

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        """SIGKILL, as a crashed or unplugged server: nothing is flushed or closed politely."""
        if self.proc is None:
            return
        os.killpg(self.proc.pid, signal.SIGKILL)  # the server and the workers it started
        self.proc.wait(timeout=30)
        self.proc = None
