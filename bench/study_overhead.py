"""What Ray Tune + MLflow cost per trial: N trials as a study vs one after another in-process.

    python bench/study_overhead.py --trials 1000 --json out.json             # dry trials
    python bench/study_overhead.py --train-seconds 60 --trials 4 --repeats 2 --json out.json

Dry mode (the default): each trial is near-instant (train.steps 0, no metrics or probes:
model build, MLflow run, artifacts, report), so the numbers are raystudy's and Ray's
overhead, not training; `--sequential` of the same trials run without Ray for comparison.

Timed mode (`--train-seconds S`): N trials that each train for about S seconds (the step
count is calibrated in-process first; the smoke study's colour-dSprites beta-VAE, batch 32,
one thread, MIG only), run

1. one after another in this process, without Ray (`run_trial` + `LocalReporter`), then
2. as a Ray Tune study for each `--concurrency` c (`execution.max_concurrent_trials`);
   c = 1 runs them one at a time like (1), so its extra wall time is Ray's and Tune's
   overhead: scheduling, actors, Tune's checkpoint persistence at every report.

Both run `--repeats` times in ABBA order (sequential first in even repeats, last in odd
ones), so that the load a shared machine drifts through hits both alike. Figures: total
wall; overhead = (Tune wall - sequential wall) / Tune wall at c = 1, median over repeats;
where the wall went, from the trials' MLflow run start and end times: before the first run
opened (for Tune: the worker's start and imports; `ray.init` is timed apart, as
`ray_init_s`, and excluded), between runs (c = 1 only), after the last; and the median run
duration, which also tells whether the load drifted between the runs.
"""

from __future__ import annotations

import argparse
import itertools
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `python bench/...` from anywhere

from bench._table import Load, markdown, record, write_json

ROOT = Path(__file__).resolve().parents[1]
DRY = [
    "train.steps=0",
    "evaluation.metrics=[]",
    "evaluation.probes=[]",
    "evaluation.num_eval_images=0",
    "model.latent_dim=4",
]
#: Timed trials: training dominates; a light evaluation still runs, as in a real study.
TIMED = [
    "model.objective=beta_vae",
    "train.input_noise=false",
    "train.report_every=50",
    "evaluation.metrics=[mig]",
    "evaluation.probes=[]",
    "evaluation.num_train=1000",
    "evaluation.num_test=500",
    "evaluation.num_eval_images=200",
    "resources.cpu=1",
]


def seeds(n: int) -> str:
    return f"grid={{seed: {list(range(n))}}}"


def run_sequential(spec: Any, folder: Path, n: int) -> tuple[str, str]:
    """The first `n` trials of `spec` one after another here; (tracking uri, experiment)."""
    from raystudy.tracking.study_run import StudyTracker, default_uri
    from raystudy.trials.common import TrialContext
    from raystudy.trials.single import LocalReporter, run_trial

    folder.mkdir(parents=True)
    uri = default_uri(folder)
    tracker = StudyTracker.start(uri, "sequential", folder / "art", tags={})
    for i, config in enumerate(spec.trials()[:n]):
        ctx = TrialContext(
            uri,
            tracker.experiment_id,
            tracker.parent_run_id,
            "sequential",
            trial_id=f"seq{i}",
            trial_name=f"seq{i}",
            cpus=float(spec.resources.cpu),
        )
        run_trial(config, ctx, LocalReporter())
    return uri, tracker.experiment_id


def run_times(uri: str, experiment_id: str) -> list[tuple[float, float]]:
    """(start, end) wall-clock seconds of every finished trial run of an experiment, from
    MLflow, in order of start."""
    from mlflow.tracking import MlflowClient

    from raystudy.tags import TRIAL_RUNS

    runs = MlflowClient(uri).search_runs(
        [experiment_id], filter_string=TRIAL_RUNS, max_results=10_000
    )
    return sorted((r.info.start_time / 1e3, r.info.end_time / 1e3) for r in runs if r.info.end_time)


def dry(args: argparse.Namespace) -> dict[str, Any]:
    from raystudy.checks import load_spec
    from raystudy.study.driver import run_study
    from raystudy.tune.state import FINISHED

    spec = load_spec(ROOT / "search_spaces/smoke.yaml", ["name=overhead", *DRY, seeds(args.trials)])
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        outcome = run_study(spec, output=Path(tmp), verbose=0)
        wall = time.monotonic() - started
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows["tune_study"] = {
            "trials": args.trials,
            "finished": outcome.states.get(FINISHED, 0),
            "wall_s": round(wall, 1),
            "s_per_trial": round(wall / args.trials, 3),
            "driver_max_rss_mb": round(rss_mb),
        }
        started = time.monotonic()
        run_sequential(spec, Path(tmp) / "sequential", args.sequential)
        seq = time.monotonic() - started
        rows["sequential_no_ray"] = {
            "trials": args.sequential,
            "wall_s": round(seq, 1),
            "s_per_trial": round(seq / args.sequential, 3),
        }
    rows["ratio_tune_vs_sequential_per_trial"] = round(
        rows["tune_study"]["s_per_trial"] / rows["sequential_no_ray"]["s_per_trial"], 2
    )
    for name, row in rows.items():
        print(f"{name:36s} {row}")
    return {"mode": "dry", **rows}


def calibrate_steps(spec: Any, seconds: float) -> tuple[int, float]:
    """Training steps of the spec's first trial that take about `seconds` on one thread here."""
    import torch

    from raystudy.data import get_dataset
    from raystudy.models import build
    from raystudy.scoring import build_split
    from raystudy.training.loop import train

    config = spec.trials()[0]
    torch.set_num_threads(int(spec.resources.cpu))
    dataset = get_dataset(config.dataset.name, **config.dataset.options)
    split = build_split(config, dataset)
    model, objective = build(
        config.model, dataset.channels, dataset.resolution, dataset.factors.num_factors
    )
    cpu = torch.device("cpu")
    warm = config.train.model_copy(update={"steps": 3, "report_every": 3, "checkpoint_every": None})
    timed_ = config.train.model_copy(
        update={"steps": 30, "report_every": 30, "checkpoint_every": None}
    )
    train(model, objective, dataset, split, warm, seed=0, device=cpu)
    start = time.perf_counter()
    train(model, objective, dataset, split, timed_, seed=0, device=cpu)
    per_step = (time.perf_counter() - start) / 30
    report = config.train.report_every
    return max(report, round(seconds / per_step / report) * report), per_step


def timed(args: argparse.Namespace) -> dict[str, Any]:
    from raystudy.checks import load_spec
    from raystudy.tune.cluster import connect

    base = ["name=overhead", *TIMED, seeds(args.trials)]
    spec = load_spec(ROOT / "search_spaces/smoke.yaml", base)
    steps, per_step = calibrate_steps(spec, args.train_seconds)
    print(f"calibrated: {per_step * 1e3:.0f} ms/step -> {steps} steps per trial ({Load.now()})")
    base.append(f"train.steps={steps}")
    spec = load_spec(ROOT / "search_spaces/smoke.yaml", base)
    start = time.monotonic()
    connect(None)
    ray_init = time.monotonic() - start
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            # ABBA: the load a shared machine drifts through hits both ways of running alike.
            order = [0, *args.concurrency] if r % 2 == 0 else [*args.concurrency[::-1], 0]
            for c in order:
                if c == 0:
                    start = time.time()
                    uri, experiment = run_sequential(spec, Path(tmp) / f"seq{r}", args.trials)
                    times = run_times(uri, experiment)
                    rows.append(_row("sequential, no Ray", 1, start, time.time(), times, r))
                else:
                    rows.append(_tune_row(base, c, r, Path(tmp)))
                print(rows[-1], f"[{Load.now()}]", flush=True)
    # Per repeat: the share of the one-at-a-time Tune wall that sequential did not need.
    shares = []
    for r in range(args.repeats):
        seq = next(x for x in rows if x["repeat"] == r and x["what"].startswith("sequential"))
        one = next((x for x in rows if x["repeat"] == r and x["what"] == TUNE.format(1)), None)
        if one is not None:
            shares.append((one["wall_s"] - seq["wall_s"]) / one["wall_s"])
    overhead = statistics.median(shares) if shares else None
    print(table(rows))
    print(f"ray.init: {ray_init:.1f} s (not in the walls above)")
    if overhead is not None:
        print(
            f"Ray/Tune overhead at 1 trial at a time: {100 * overhead:.1f}% of the Tune wall "
            f"(median of {len(shares)} repeat(s): {', '.join(f'{100 * x:.1f}%' for x in shares)})"
        )
    return {
        "mode": "timed",
        "train_seconds": args.train_seconds,
        "steps": steps,
        "calibrated_s_per_step": per_step,
        "ray_init_s": ray_init,
        "overhead_fraction": overhead,
        "overhead_fractions": shares,
        "rows": rows,
    }


TUNE = "Ray Tune, {} at a time"


def _tune_row(base: list[str], c: int, repeat: int, folder: Path) -> dict[str, Any]:
    """The trials as a Tune study, `c` at a time."""
    from raystudy.checks import load_spec
    from raystudy.study.driver import run_study

    spec = load_spec(
        ROOT / "search_spaces/smoke.yaml",
        [*base, f"name=overhead_c{c}_r{repeat}", f"execution.max_concurrent_trials={c}"],
    )
    start = time.time()
    outcome = run_study(spec, output=folder, verbose=0)
    end = time.time()
    if not outcome.ok:
        raise SystemExit(f"the Tune study did not finish: {outcome.states}")
    times = run_times(outcome.info.tracking_uri, outcome.info.experiment_id)
    return _row(TUNE.format(c), c, start, end, times, repeat)


def _row(
    what: str, c: int, start: float, end: float, runs: list[tuple[float, float]], repeat: int
) -> dict[str, Any]:
    """Where the wall time went: before the first trial run opened (start-up: for Tune the
    first worker's start and imports), between runs (one at a time only: what it costs to
    hand the worker its next trial), after the last closed (Tune's final bookkeeping)."""
    durations = [b - a for a, b in runs]
    gaps = [b[0] - a[1] for a, b in itertools.pairwise(runs)] if c == 1 else []
    return {
        "what": what,
        "repeat": repeat,
        "concurrency": c,
        "trials": len(runs),
        "wall_s": end - start,
        "first_run_opened_s": runs[0][0] - start,
        "median_gap_s": statistics.median(gaps) if gaps else None,
        "after_last_run_s": end - max(b for _, b in runs),
        "outside_runs_s_per_trial": (end - start - sum(durations) / c) / len(runs),
        "median_run_s": statistics.median(durations),
    }


def table(rows: list[dict[str, Any]]) -> str:
    def gap(r: dict[str, Any]) -> str:
        return "" if r["median_gap_s"] is None else f"{r['median_gap_s']:.2f}"

    return markdown(
        [
            "how",
            "repeat",
            "trials",
            "wall s",
            "to first run s",
            "gap between runs s",
            "after last run s",
            "median trial run s",
        ],
        [
            (
                r["what"],
                r["repeat"],
                r["trials"],
                f"{r['wall_s']:.1f}",
                f"{r['first_run_opened_s']:.1f}",
                gap(r),
                f"{r['after_last_run_s']:.1f}",
                f"{r['median_run_s']:.1f}",
            )
            for r in rows
        ],
    )


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    if payload.get("mode") == "timed":
        out = [
            (
                f"study overhead, {r['trials']} trials of ~{r['median_run_s']:.0f} s: {r['what']}",
                f"{r['wall_s']:.0f} s wall, "
                f"{r['outside_runs_s_per_trial']:.2f} s/trial outside runs",
            )
            for r in payload["rows"]
        ]
        if payload.get("overhead_fraction") is not None:
            out.append(
                (
                    "study overhead: Ray + Tune share of wall",
                    f"{100 * payload['overhead_fraction']:.1f}%",
                )
            )
        return out
    tune, seq = payload["tune_study"], payload["sequential_no_ray"]
    return [
        (
            f"study overhead, {tune['trials']} dry trials via Tune / {seq['trials']} in-process",
            f"{tune['s_per_trial']:.3f} / {seq['s_per_trial']:.3f} s per trial",
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=None, help="dry: 100; timed: 4")
    parser.add_argument("--sequential", type=int, default=20, help="dry: trials run without Ray")
    parser.add_argument("--train-seconds", type=float, default=0.0, help="timed mode: S per trial")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2], help="timed mode")
    parser.add_argument("--repeats", type=int, default=2, help="timed mode: ABBA repeats")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    args.trials = args.trials or (4 if args.train_seconds else 100)
    started = Load.now()
    payload = timed(args) if args.train_seconds else dry(args)
    print(f"started with {started}; ended with {Load.now()}")
    write_json(args.json, record("study_overhead", started, payload))
    if payload["mode"] == "dry":
        sys.exit(0 if payload["tune_study"]["finished"] == args.trials else 1)


if __name__ == "__main__":
    main()
