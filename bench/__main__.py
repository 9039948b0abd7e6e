"""One table from the JSON files the benchmarks wrote.

    python -m bench train_step.json peer.json render.json metrics.json ...

Each file names the benchmark that wrote it (``"bench"``; older files without it are known by
their shape), whose module turns it back into rows (its ``summary``). Every row carries the
date and the load average under which it was measured.
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

from bench._table import markdown

BENCHES = (
    "train_step",
    "study_overhead",
    "peer",
    "cpu_share",
    "gpu_packing",
    "seeds_per_trial",
    "cpu_ceiling",
    "render",
    "metrics",
    "analysis",
    "laptop_settings",
    "real_domain",
    "photo_domain_gap",
    "driver_scale",
    "store_writes",
    "trial_cost",
)


def which(payload: dict[str, Any], path: Path) -> str:
    """The benchmark that wrote `payload`: its own word, else its shape, else the file name."""
    if "bench" in payload:
        return str(payload["bench"])
    if "tune_study" in payload:
        return "study_overhead"
    if "suite_seconds" in payload:
        return "metrics"
    if "cells" in payload and "seconds" in payload:
        return "analysis"
    if "rows" in payload and "batch" in payload and "reps" in payload:
        return "render"
    if path.stem in BENCHES:
        return path.stem
    raise SystemExit(f"{path}: not a JSON file any of {', '.join(BENCHES)} writes")


def load_text(payload: dict[str, Any]) -> str:
    """The load average a file was measured under, as "start-end" of the 1-minute figure."""
    start, end = payload.get("load_start"), payload.get("load_end")
    if start and end:
        return f"{start['one']:.1f}-{end['one']:.1f}"
    legacy = payload.get("load_average") or payload.get("load_avg_1min")
    if isinstance(legacy, list):
        return f"{legacy[0]:.1f}"
    return "" if legacy is None else f"{legacy:.1f}"


def rows_of(path: Path) -> list[tuple[str, str, str, str]]:
    try:
        payload = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SystemExit(f"{path}: cannot read it as JSON: {exc}") from None
    name = which(payload, path)
    module = importlib.import_module(f"bench.{name}")
    when, load = payload.get("date", ""), load_text(payload)
    if not hasattr(module, "summary"):
        return [(f"{name} ({path.name})", f"bench.{name} has no summary() yet", when, load)]
    return [(what, value, when, load) for what, value in module.summary(payload)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", type=Path, nargs="+", help="JSON files written with --json")
    args = parser.parse_args(argv)
    rows = [row for path in args.files for row in rows_of(path)]
    print(markdown(["measurement", "figure", "date", "load (1 min)"], rows, right=4))


if __name__ == "__main__":
    main()
