"""This machine's calibration timings, kept between `raystudy plan` runs.

A group's timing (`TrainingTiming`, `FitTiming`) is stored under a key of everything that
makes it what it is: the group (all its fields), the device, the threads it was timed with,
the calibration's settings, raystudy's version and `METHOD` (raised when the way groups are
timed changes). A second plan of the same study on the same machine reads its timings back
instead of timing again, and says from when; `raystudy plan --recalibrate` times afresh (and
stores the new timings). One JSON file, `default_path()`; a file that cannot be read is
treated as empty, never as an error: it only saves time.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from datetime import datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from raystudy.plan.calibrate import FitTiming, StepTiming, TrainingTiming
from raystudy.plan.extrapolate import Line
from raystudy.plan.groups import EvaluationGroup, TrainingGroup

# The installed distribution's version: importing the package root would load its API
# (`raystudy.evaluate`, and MLflow behind it), which plan must not.
_VERSION = version("raystudy")

#: The calibration method's version: timings taken by another one are not reused.
METHOD = 3


def default_path() -> Path:
    """$XDG_CACHE_HOME/raystudy/plan-calibration.json (~/.cache when it is unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "raystudy" / "plan-calibration.json"


def cache_key(group: TrainingGroup | EvaluationGroup, device: str, threads: int,
              settings: str) -> str:  # fmt: skip
    return (
        f"{group!r} | {device} | {threads} thread(s) | {settings} | "
        f"raystudy {_VERSION} | method {METHOD}"
    )


def _line(data: dict[str, float]) -> Line:
    return Line(float(data["intercept"]), float(data["slope"]))


def training_from(data: dict[str, Any], group: TrainingGroup) -> TrainingTiming:
    """A stored `TrainingTiming` of `group`, rebuilt."""
    return TrainingTiming(
        group,
        tuple(StepTiming(**t) for t in data["timings"]),  # type: ignore[arg-type]
        _line(data["step"]),
        _line(data["encode"]),
        _line(data["recon"]),
        float(data["calibration_seconds"]),
    )


def fitting_from(data: dict[str, Any]) -> FitTiming:
    """A stored `FitTiming`, rebuilt."""
    return FitTiming(
        tuple(data["scales"]),  # type: ignore[arg-type]
        tuple(data["seconds"]),  # type: ignore[arg-type]
        _line(data["fit"]),
        _line(data["images"]),
        int(data["scenarios"]),
        float(data["intervention_seconds"]),
        float(data["calibration_seconds"]),
        _line(data["probes"]),
    )


class CalibrationCache:
    """The timings stored in `path`, read once; `put` writes the file again at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            loaded = json.loads(path.read_text())
            self.entries: dict[str, dict[str, Any]] = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            self.entries = {}

    def get(self, key: str) -> tuple[dict[str, Any], str] | None:
        """The stored timing and when it was taken ("2026-11-25 10:03"), if any."""
        entry = self.entries.get(key)
        if not isinstance(entry, dict) or "timing" not in entry:
            return None
        return entry["timing"], str(entry.get("taken", "?"))

    def put(self, key: str, timing: Any) -> None:
        data = asdict(timing)
        data.pop("group", None)  # in the key
        taken = datetime.now().strftime("%Y-%m-%d %H:%M")
        self.entries[key] = {"taken": taken, "timing": data}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.entries, indent=1))
            tmp.replace(self.path)
        except OSError:
            pass  # a cache that cannot be written costs time next run, nothing else
