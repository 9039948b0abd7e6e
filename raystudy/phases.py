"""Where a trial's time goes: wall and CPU seconds per named phase, as `time/*` metrics.

A `PhaseClock` times the phases of one trial (building the data and model, training, each
metric, each probe family, the decoder test, figures, the logged model, MLflow writes, ...).
Phases nest, and each second is counted once: a phase's own time excludes the phases opened
inside it (the MLflow writes made during training count as `mlflow`, not as `train`), so the
phases add up to the time they cover, and `other` is what the trial spent outside all of them.

The code being timed names its phases with `phase(name)`, which counts for the clock that
`timing(clock)` made current and does nothing when none is: scoring, training and the MLflow
writer time themselves the same way inside a trial, a benchmark or a notebook.

Only the thread that made the clock is timed: a phase entered from another thread (MLflow's
system-metrics sampler logs from its own) passes through uncounted rather than corrupting the
nesting. CPU seconds are the process's (`time.process_time`, every thread), so a phase whose
torch or xgboost work runs on 2 threads shows up to twice its wall time.

This module imports only the key contract.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from raystudy.keys import TIME, time_key

if TYPE_CHECKING:
    import pandas as pd

#: The phase holding what a trial spent outside every named phase.
OTHER = "other"
#: The whole trial, from its start to its timings being logged.
TOTAL = "total"
#: The two measures of a phase: `time/<phase>/wall_s` and `time/<phase>/cpu_s`.
WALL, CPU = "wall_s", "cpu_s"
#: The phases that are a trial's training: the steps, their batches' rendering, and the
#: reports and checkpoints between them; what a trial spends elsewhere is its fixed cost.
TRAINING_PHASES = ("train", "render", "report")


@dataclass
class _Open:
    name: str
    wall0: float
    cpu0: float
    # What phases opened inside this one took: subtracted from its own time.
    inner_wall: float = 0.0
    inner_cpu: float = 0.0


@dataclass
class PhaseClock:
    """Wall and CPU seconds per phase of one trial (or one model of a stacked trial)."""

    wall: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    _started: tuple[float, float] = field(
        default_factory=lambda: (time.perf_counter(), time.process_time())
    )
    _thread: int = field(default_factory=threading.get_ident)
    _open: list[_Open] = field(default_factory=list)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as phase `name` (added to what `name` has already taken)."""
        if threading.get_ident() != self._thread:
            yield
            return
        entry = _Open(name, time.perf_counter(), time.process_time())
        self._open.append(entry)
        try:
            yield
        finally:
            self._open.pop()
            wall = time.perf_counter() - entry.wall0
            cpu = time.process_time() - entry.cpu0
            self.add(name, wall - entry.inner_wall, cpu - entry.inner_cpu)
            if self._open:
                self._open[-1].inner_wall += wall
                self._open[-1].inner_cpu += cpu

    def add(self, name: str, wall: float, cpu: float) -> None:
        """Count `wall` and `cpu` seconds more for phase `name`."""
        self.wall[name] = self.wall.get(name, 0.0) + max(wall, 0.0)
        self.cpu[name] = self.cpu.get(name, 0.0) + max(cpu, 0.0)

    def metrics(self, parts: int = 1) -> dict[str, float]:
        """`time/<phase>/wall_s` and `cpu_s` of every phase, `time/other/*` (the time since
        the clock started that no phase took) and `time/total/*`; each divided by `parts`
        (one model's share of what a stack of `parts` models went through together)."""
        wall = max(time.perf_counter() - self._started[0], sum(self.wall.values()))
        cpu = max(time.process_time() - self._started[1], sum(self.cpu.values()))
        table = {name: (self.wall[name], self.cpu[name]) for name in sorted(self.wall)}
        table[OTHER] = (wall - sum(self.wall.values()), cpu - sum(self.cpu.values()))
        table[TOTAL] = (wall, cpu)
        out: dict[str, float] = {}
        for name, (w, c) in table.items():
            out[time_key(name, WALL)] = round(w / parts, 4)
            out[time_key(name, CPU)] = round(c / parts, 4)
        return out


def added(*timings: Mapping[str, float]) -> dict[str, float]:
    """`time/*` tables added key by key: a stacked model's share of the stack's phases and
    the phases of its own scoring."""
    out: dict[str, float] = {}
    for table in timings:
        for key, value in table.items():
            out[key] = round(out.get(key, 0.0) + value, 4)
    return out


def phase_of(key: str) -> tuple[str, str] | None:
    """(`phase`, `wall_s` or `cpu_s`) of a `time/<phase>/<measure>` key; None for any other."""
    if not key.startswith(TIME):
        return None
    phase, _, measure = key.removeprefix(TIME).rpartition("/")
    return (phase, measure) if phase and measure in (WALL, CPU) else None


def phase_table(metrics: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """`{phase: {"wall_s": .., "cpu_s": ..}}` from the finite `time/*` values of `metrics`."""
    out: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        parsed = phase_of(key)
        # NaN: a table's run that logged no such phase (MLflow's frame has every column).
        if parsed is not None and math.isfinite(value):
            out.setdefault(parsed[0], {})[parsed[1]] = float(value)
    return out


_CURRENT: ContextVar[PhaseClock | None] = ContextVar("raystudy_phase_clock", default=None)


@contextmanager
def timing(clock: PhaseClock) -> Iterator[PhaseClock]:
    """Make `clock` the one `phase` counts for, inside the block."""
    token = _CURRENT.set(clock)
    try:
        yield clock
    finally:
        _CURRENT.reset(token)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time the block as phase `name` of the current clock (`timing`); no clock, no timing."""
    clock = _CURRENT.get()
    if clock is None:
        yield
        return
    with clock.phase(name):
        yield


def summed(tables: Iterable[Mapping[str, float]]) -> tuple[dict[str, dict[str, float]], int]:
    """The phases of many runs' metrics added up (`phase_table` of each), and how many of the
    runs had timings at all; a run without a value for a phase adds nothing to it."""
    total: dict[str, dict[str, float]] = {}
    timed = 0
    for metrics in tables:
        table = phase_table(metrics)
        if not table:
            continue
        timed += 1
        for name, measures in table.items():
            into = total.setdefault(name, {})
            for measure, value in measures.items():
                into[measure] = into.get(measure, 0.0) + value
    return total, timed


def format_phases(
    table: Mapping[str, Mapping[str, float]], runs: int, indent: str = "  "
) -> list[str]:
    """Lines saying where `runs` runs' time went: each phase's wall and CPU seconds and its
    share of the total wall time, largest first, `total` last."""
    rows = {name: m for name, m in table.items() if name != TOTAL}
    total = table.get(TOTAL, {}).get(WALL) or sum(m.get(WALL, 0.0) for m in rows.values())
    if not rows or not total:
        return []
    width = max(len(name) for name in [*rows, TOTAL])
    out = [f"{indent}Where the time went ({runs} run{'s' if runs != 1 else ''} timed):"]
    for name, m in sorted(rows.items(), key=lambda item: -item[1].get(WALL, 0.0)):
        wall = m.get(WALL, 0.0)
        out.append(
            f"{indent}  {name:{width}s} {_seconds(wall):>9s} {100 * wall / total:5.1f}%"
            f"   CPU {_seconds(m.get(CPU, 0.0)):>9s}"
        )
    cpu = table.get(TOTAL, {}).get(CPU, sum(m.get(CPU, 0.0) for m in rows.values()))
    out.append(f"{indent}  {TOTAL:{width}s} {_seconds(total):>9s} 100.0%   CPU {_seconds(cpu):>9s}")
    return out


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 600 else f"{s / 60:.1f} min"


def runs_phases(runs: pd.DataFrame) -> tuple[dict[str, dict[str, float]], int] | None:
    """Every phase summed over the runs of an MLflow `search_runs` frame that logged timings,
    and how many did (`summed`); None when no run did (a study from before timings, external
    encoders)."""
    prefix = f"metrics.{TIME}"
    columns = [c for c in runs.columns if c.startswith(prefix)]
    if not columns:
        return None
    frame = runs[columns].rename(columns=lambda c: c.removeprefix("metrics."))
    return summed(frame.to_dict("records"))


def phase_lines(runs: pd.DataFrame) -> list[str]:
    """Where the runs' time went (`raystudy.phases`), as `runs_phases` sums it; none when no
    run logged timings."""
    phases = runs_phases(runs)
    return [] if phases is None else format_phases(*phases)
