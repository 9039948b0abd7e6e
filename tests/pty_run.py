"""Run a command on a real pseudo-terminal and read what it drew, as a user's terminal would."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time

#: Colours, cursor moves and line erasing: what a terminal draws, not what it shows.
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_on_pty(command: list[str], *, timeout: float, columns: int = 120) -> tuple[int, str]:
    """(exit code, output) of `command` with a pseudo-terminal as stdin, stdout and stderr."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": "40"}
    process = subprocess.Popen(
        command, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the slave side closed: the process is gone
                    break
                if not data:
                    break
                chunks.append(data)
            elif process.poll() is not None:
                break
        else:
            process.kill()
            raise TimeoutError(b"".join(chunks).decode(errors="replace")[-3000:])
    finally:
        os.close(master)
    return process.wait(timeout=30), b"".join(chunks).decode(errors="replace")


def screen_lines(raw: str) -> list[str]:
    """The lines left on screen: a carriage return or an erase redraws the line in place."""
    lines = []
    for line in raw.replace("\r\n", "\n").split("\n"):
        pieces = [_CONTROL.sub("", piece).rstrip() for piece in line.split("\r")]
        lines.append(next((p for p in reversed(pieces) if p), ""))
    while lines and not lines[-1]:
        lines.pop()
    return lines
