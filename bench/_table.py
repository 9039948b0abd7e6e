"""What every benchmark shares: the machine and its load, interleaved timing, tables, JSON.

Benchmarks here run on a machine other jobs share, so a figure means little without the load
it was taken under, and a comparison of two variants timed one after the other mostly
measures how the load drifted between them. Hence:

- `interleaved` times the variants in alternating rounds (A B B A A B ...), so that drift
  hits every variant alike, and the comparable figure is the median of per-round ratios;
- `record` stamps every JSON with the machine, the versions and the load average at the
  start and the end of the run (`Load`).

Every benchmark's JSON carries ``"bench": <module name>``, so that `python -m bench FILE...`
can turn it back into rows of one combined table through that module's ``summary``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Load:
    """The 1/5/15-minute load averages of the machine, and how many CPUs it has."""

    one: float
    five: float
    fifteen: float
    cpus: int

    @classmethod
    def now(cls) -> Load:
        one, five, fifteen = os.getloadavg()
        return cls(one, five, fifteen, os.cpu_count() or 1)

    def __str__(self) -> str:
        return f"load {self.one:.2f} {self.five:.2f} {self.fifteen:.2f} on {self.cpus} CPUs"


def machine() -> dict[str, Any]:
    """What a figure was measured on: CPUs, platform, Python and torch versions and threads."""
    import torch

    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }


def timed(fn: Callable[[], object]) -> float:
    """Wall seconds of one call of ``fn``."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(
    variants: dict[str, Callable[[], float]], rounds: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Per-round figures of each variant, the variants alternating within every round.

    Each callable runs one round and returns its own figure (e.g. seconds per step). Round r
    runs the variants in order when r is even and in reverse when it is odd (ABBA), so that
    neither variant always follows the other. `warmup` untimed rounds come first.
    """
    names = list(variants)
    for _ in range(warmup):
        for name in names:
            variants[name]()
    out: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else reversed(names):
            out[name].append(variants[name]())
    return out


def median_ratio(numerator: Sequence[float], denominator: Sequence[float]) -> float:
    """Median over rounds of numerator[r] / denominator[r]: the figures of one round shared
    the same load, so their ratio is what is comparable across a drifting machine."""
    return statistics.median(a / b for a, b in zip(numerator, denominator, strict=True))


def quartiles(values: Sequence[float]) -> tuple[float, float]:
    """The 25th and 75th percentiles (the spread a median is quoted with)."""
    if len(values) < 2:
        return (values[0], values[0])
    q = statistics.quantiles(values, n=4)
    return (q[0], q[2])


def markdown(headers: Sequence[str], rows: Sequence[Sequence[object]], right: int = 1) -> str:
    """A Markdown table; columns from index `right` on are right-aligned (figures)."""
    align = ["---" if i < right else "---:" for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def record(bench: str, started: Load, payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` with what makes it a figure: bench name, date, machine, load at both ends."""
    return {
        "bench": bench,
        "date": _dt.date.today().isoformat(),
        "machine": machine(),
        "load_start": started.__dict__,
        "load_end": Load.now().__dict__,
        **payload,
    }


def write_json(path: Path | None, record_: dict[str, Any]) -> None:
    if path is not None:
        path.write_text(json.dumps(record_, indent=2, default=float))
        print(f"wrote {path}")


@contextlib.contextmanager
def work_folder(keep: Path | None) -> Iterator[Path]:
    """`keep` (made if missing, left in place) or a temporary folder removed at the end."""
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)
