"""How long `raystudy analyze` takes on a large study: a synthetic 1,000-trial results table.

    python -m bench.analysis --trials 1000 --by model --by beta

The table has the shape of a real one (9 dis/*, 3 eval/*, down/gbt10000_acc, 4 scenarios x 2
probes of transfer MAE, R^2 and 5 per-factor MAEs) with a known planted correlation
(`tests/planted_tables.py`). Times every phase of the analysis: correlations with 95%
bootstrap intervals (1,000 resamples), model selection, figures, writing files and report.
MLflow is left out (reading runs back depends on the store, not on the analysis). Prints a
table; `--json` writes it. The target (issue 7) is under 30 s in all on this CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    n = f"{payload['trials']} trials, {payload['bootstrap']} resamples"
    return [(f"analysis {name} ({n})", f"{s:.2f} s") for name, s in payload["seconds"].items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--by", action="append", default=[], help="grid axis to group by")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    started = time.perf_counter()
    from raystudy.analysis.core.groups import trial_groups, with_supervision
    from raystudy.analysis.core.results import finished
    from raystudy.analysis.figures.study import study_figures
    from raystudy.analysis.pipeline import Settings, compute, proxy_columns, write_analysis
    from raystudy.analysis.tables.correlations import correlation_table, transfer_correlations
    from raystudy.analysis.tables.selection import selection_table
    from tests.planted_tables import planted_results

    times: dict[str, float] = {"import": time.perf_counter() - started}
    frame = planted_results(args.trials, seed=0, failed=args.trials // 100, running=2)
    settings = Settings(by=tuple(args.by), n_boot=args.bootstrap)

    # Each phase on its own, to see where the time goes ...
    done = finished(with_supervision(frame))
    groups = trial_groups(done, settings.by)
    t = time.perf_counter()
    table = transfer_correlations(done, groups, n_boot=settings.n_boot)
    times["correlations + bootstrap"] = time.perf_counter() - t
    t = time.perf_counter()
    dis = [c for c in done.columns if c.startswith("metrics.dis/")]
    proxy = correlation_table(done, proxy_columns(done), dis, groups, n_boot=settings.n_boot)
    times["proxy correlations + bootstrap"] = time.perf_counter() - t
    t = time.perf_counter()
    selection_table(done, groups)
    times["model selection"] = time.perf_counter() - t
    t = time.perf_counter()
    figures = study_figures(done, table, proxy)
    for figure in figures:
        figure.png()
    times["figures (draw + PNG)"] = time.perf_counter() - t

    # ... and the whole analysis as `raystudy analyze` runs it, files and report included.
    t = time.perf_counter()
    analysis = compute(frame, settings)
    with tempfile.TemporaryDirectory() as tmp:
        files = write_analysis(
            analysis, Path(tmp), study="bench", planned_trials=len(frame), spec_text=""
        )
        report_mb = (Path(tmp) / "report.html").stat().st_size / 1e6
    times["TOTAL analysis (compute + write)"] = time.perf_counter() - t

    cells = len(analysis.correlations)
    print(
        f"{len(frame)} trials ({len(done)} finished), {len(groups)} groups, {cells} correlation "
        f"cells x {settings.n_boot} resamples, {len(files)} files, report {report_mb:.1f} MB, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    for name, seconds in times.items():
        print(f"  {name:34s} {seconds:7.2f} s")
    if args.json:
        record = {
            "bench": "analysis",
            "trials": len(frame),
            "groups": len(groups),
            "cells": cells,
            "bootstrap": settings.n_boot,
            "load_avg_1min": os.getloadavg()[0],
            "seconds": times,
        }
        args.json.write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
