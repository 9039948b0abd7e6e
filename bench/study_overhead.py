"""What Ray Tune + MLflow cost per trial: N trials as a study vs one after another in-process.

    python bench/study_overhead.py --trials 1000 --json bench/study_overhead.json

Each trial is near-instant by default (train.steps 0, no metrics or probes: model build,
MLflow run, artifacts, report), so the numbers are raystudy's and Ray's overhead, not
training. Prints a table; `--json` writes it.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DRY = [
    "train.steps=0",
    "evaluation.metrics=[]",
    "evaluation.probes=[]",
    "evaluation.num_eval_images=0",
    "model.latent_dim=4",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--sequential", type=int, default=20, help="trials run without Ray")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from raystudy.spec import load_spec
    from raystudy.study import run_study
    from raystudy.tracking import StudyTracker, default_uri
    from raystudy.trial import LocalReporter, TrialContext, run_trial

    seeds = f"grid={{seed: {list(range(args.trials))}}}"
    spec = load_spec(ROOT / "search_spaces/smoke.yaml", ["name=overhead", *DRY, seeds])
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        outcome = run_study(spec, output=Path(tmp), verbose=0)
        wall = time.monotonic() - started
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows["tune_study"] = {
            "trials": args.trials,
            "finished": outcome.states.get("TERMINATED", 0),
            "wall_s": round(wall, 1),
            "s_per_trial": round(wall / args.trials, 3),
            "driver_max_rss_mb": round(rss_mb),
        }
        seq_dir = Path(tmp) / "sequential"
        seq_dir.mkdir()
        uri = default_uri(seq_dir)
        tracker = StudyTracker.start(uri, "sequential", seq_dir / "art", tags={})
        trials = spec.trials()[: args.sequential]
        started = time.monotonic()
        for i, config in enumerate(trials):
            ctx = TrialContext(
                uri,
                tracker.experiment_id,
                tracker.parent_run_id,
                "sequential",
                trial_id=f"seq{i}",
                trial_name=f"seq{i}",
            )
            run_trial(config, ctx, LocalReporter())
        seq = time.monotonic() - started
        rows["sequential_no_ray"] = {
            "trials": len(trials),
            "wall_s": round(seq, 1),
            "s_per_trial": round(seq / len(trials), 3),
        }
    rows["ratio_tune_vs_sequential_per_trial"] = round(
        rows["tune_study"]["s_per_trial"] / rows["sequential_no_ray"]["s_per_trial"], 2
    )
    for name, row in rows.items():
        print(f"{name:36s} {row}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    sys.exit(0 if rows["tune_study"]["finished"] == args.trials else 1)


if __name__ == "__main__":
    main()
