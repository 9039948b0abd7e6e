"""Writes/s of each MLflow store under concurrent trials, and where it stops keeping up.

    python -m bench.store_writes [--stores sqlite server-sqlite server-postgres postgres]
        [--writers 1 2 4 8 16 32] [--runs 3] [--spec search_spaces/smoke.yaml] [--set K=V]
        [--system-points 2] [--postgres-fsync on|off] [--keep DIR]
        [--dry-run] [--json PATH]

Per store and W (`--writers`): W writer processes, started together behind a barrier, each
writing `--runs` trial runs back to back, exactly as a trial of `--spec` writes its run
(`bench._trial_writes`: raystudy's own `TrialRun` and system-metrics code, the spec's params,
tags, dataset input, train/* points at each report and its final scores), with none of the
trial's training in between: what is measured is how fast the store takes a trial's writes.
A study keeps up while its trials' combined write rate stays below that.

Stores (one of each for the whole run; every cell writes a new experiment in it):
- `sqlite`: the study's default store, a sqlite file written by every trial process;
- `server-sqlite`: an `mlflow server` (MLflow's default 4 workers) over a sqlite file;
- `server-postgres`: an `mlflow server` over a PostgreSQL database, as cluster.yaml's head;
- `postgres`: the PostgreSQL database itself as tracking.uri (postgresql+psycopg2://).
The PostgreSQL cluster is the tests' throwaway one (tests/postgres.py), with fsync on.

Figures per cell: writes = the metric points, params and tags of the cell's trial runs as
read back from the store's database afterwards (MLflow's own tags on a run included); writes/s
= writes / wall, wall from the first writer leaving the barrier to the last one ending;
p50/p99 of every logging call (a run's open, tags, dataset, each log_metrics, finish; the two
reads a trial makes are counted apart); raystudy's busy retries (`tracking.retry.retry_busy`'s
repeats); errors (runs that raised, as they would fail their trial); dataset inputs the store
refused (the trial tags them and goes on: `record_lineage`). MLflow's own HTTP retries
inside one call are in its latency, not counted. Each store's knee: see `knee`.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import multiprocessing as mp
import queue
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import _servers
from bench._table import Load, markdown, record, work_folder, write_json
from bench._trial_writes import Job, TrialShape, WriterResult, trial_shape, write_runs

ROOT = Path(__file__).resolve().parents[1]
STORES = ("sqlite", "server-sqlite", "server-postgres", "postgres")
#: Calls that write; the reads a trial makes (its run's last steps) are reported apart.
READS = ("read",)


@dataclass(frozen=True)
class Store:
    """A tracking URI the writers use, and the database its writes land in (read back)."""

    name: str
    uri: str
    database: str


@contextlib.contextmanager
def stores(names: Sequence[str], folder: Path, fsync: bool) -> Iterator[list[Store]]:
    """The stores `names`, started in `folder` (a PostgreSQL cluster only if one is asked
    for, shared by both PostgreSQL stores, a database each)."""
    from raystudy.tracking.study_run import default_uri

    with contextlib.ExitStack() as stack:
        cluster = None
        if any("postgres" in n for n in names):
            try:
                cluster = stack.enter_context(_servers.postgres_cluster(fsync))
            except _servers.Missing as exc:
                raise SystemExit(f"the PostgreSQL stores cannot run here: {exc}") from None
        out = []
        for name in names:
            if name == "sqlite":
                (folder / name).mkdir(parents=True, exist_ok=True)
                uri = default_uri(folder / name)  # as a study's own store
                out.append(Store(name, uri, uri))
            elif name == "server-sqlite":
                server = stack.enter_context(_servers.mlflow_server(folder / name))
                out.append(Store(name, server.url, server.backend))
            elif name == "server-postgres":
                assert cluster is not None
                database = cluster.create_database("served")
                server = stack.enter_context(_servers.mlflow_server(folder / name, database))
                out.append(Store(name, server.url, database))
            else:
                assert cluster is not None
                database = cluster.create_database("direct")
                out.append(Store(name, database, database))
        yield out


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank q-th percentile (0 < q <= 100): the smallest value with at least q% of
    the values at or below it (Hyndman & Fan 1996, definition 1)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def stored(database: str, experiment_id: str, parent_run_id: str) -> dict[str, int]:
    """What the store holds for the trial runs of an experiment (its parent run left out):
    runs (FINISHED ones apart), metric points, params and tags, counted in its database."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(database, poolclass=NullPool)
    trial_runs = "FROM runs WHERE experiment_id = :e AND run_uuid <> :p"
    counts = {
        "runs": f"SELECT count(*) {trial_runs}",
        "finished": f"SELECT count(*) {trial_runs} AND status = 'FINISHED'",
    }
    for table_ in ("metrics", "params", "tags"):
        counts[table_] = (
            f"SELECT count(*) FROM {table_} WHERE run_uuid IN (SELECT run_uuid {trial_runs})"
        )
    try:
        with engine.connect() as conn:
            args = {"e": int(experiment_id), "p": parent_run_id}
            return {k: int(conn.execute(text(q), args).scalar_one()) for k, q in counts.items()}
    finally:
        engine.dispose()


def collect(procs: list[Any], results: Any) -> list[WriterResult]:
    """Every writer's result; a writer that died without one stops the bench, naming it."""
    out: list[WriterResult] = []
    while len(out) < len(procs):
        try:
            out.append(results.get(timeout=5))
        except queue.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise SystemExit(
                    f"writer process {dead[0].name} died (exit {dead[0].exitcode})"
                ) from None
    for p in procs:
        p.join(30)
    return out


def cell(store: Store, writers: int, runs: int, shape: TrialShape, folder: Path) -> dict[str, Any]:
    """W writers at once on `store`, `runs` trial runs each, in a new experiment."""
    from raystudy.tracking.study_run import StudyTracker

    # A new experiment each time, also in a kept store written before.
    study = f"writes_{store.name}_w{writers}_{time.time_ns()}".replace("-", "_")
    tracker = StudyTracker.start(store.uri, study, folder / "artifacts" / study, tags={})
    ctx = mp.get_context("spawn")  # fresh processes, as Ray's workers: no inherited clients
    barrier, results = ctx.Barrier(writers + 1), ctx.Queue()
    procs = [
        ctx.Process(
            target=write_runs,
            args=(
                Job(store.uri, tracker.experiment_id, tracker.parent_run_id, shape, runs, w),
                barrier,
                results,
            ),
            name=f"writer{w}",
            daemon=True,
        )
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    try:
        barrier.wait(timeout=600)  # every writer has imported and connected
    except Exception:
        raise SystemExit(f"{store.name}, {writers} writers: not all writers got ready") from None
    out = collect(procs, results)
    tracker.finish("FINISHED")
    held = stored(store.database, tracker.experiment_id, tracker.parent_run_id)
    return row(store.name, writers, runs, out, held)


def row(
    store: str, writers: int, runs: int, results: list[WriterResult], held: dict[str, int]
) -> dict[str, Any]:
    """A cell's figures from its writers' results and what the store holds."""
    wall = max(r.ended for r in results) - min(r.started for r in results)
    calls: dict[str, list[float]] = {}
    for r in results:
        for kind, seconds in r.calls.items():
            calls.setdefault(kind, []).extend(seconds)
    logging = [s for kind, v in calls.items() if kind not in READS for s in v]
    writes = held["metrics"] + held["params"] + held["tags"]
    sent = {k: sum(r.sent[k] for r in results) for k in ("metrics", "params", "tags")}
    errors = [e for r in results for e in r.errors]
    lineage_errors = [e for r in results for e in r.lineage_errors]
    return {
        "store": store,
        "writers": writers,
        "runs_per_writer": runs,
        "wall_s": wall,
        "stored": held,
        "sent": sent,
        "lost": {k: sent[k] - held[k] for k in ("metrics", "params")},
        "writes": writes,
        "writes_per_s": writes / wall if wall > 0 else 0.0,
        "logging_calls": len(logging),
        "p50_ms": 1000 * percentile(logging, 50) if logging else None,
        "p99_ms": 1000 * percentile(logging, 99) if logging else None,
        "per_call": {
            kind: {
                "n": len(v),
                "p50_ms": 1000 * percentile(v, 50),
                "p99_ms": 1000 * percentile(v, 99),
                "mean_ms": 1000 * statistics.fmean(v),
            }
            for kind, v in sorted(calls.items())
        },
        "retries": sum(r.retries for r in results),
        "errors": len(errors),
        "error_examples": sorted(set(errors))[:5],
        "lineage_errors": len(lineage_errors),
        "lineage_error_examples": sorted(set(lineage_errors))[:5],
    }


def knee(rows: Sequence[dict[str, Any]], min_gain: float = 0.1, blowup: float = 10.0) -> dict:
    """Where a store stops keeping up, going up in W: the largest W such that every step up
    to it raised writes/s by at least `min_gain` (10%) over the W before, with no errors and
    a p99 latency within `blowup` times the smallest W's; and why the next W fails (the
    saturation point of a throughput-vs-concurrency curve: beyond it more writers only queue).
    """
    ordered = sorted(rows, key=lambda r: r["writers"])
    if not ordered:
        raise ValueError("knee: no rows")
    best = max(ordered, key=lambda r: r["writes_per_s"])
    out: dict[str, Any] = {
        "keeps_up_to": None,
        "stops_at": None,
        "why": "",
        "best_writes_per_s": best["writes_per_s"],
        "best_at": best["writers"],
    }
    first = ordered[0]
    if first["errors"]:
        out.update(stops_at=first["writers"], why=f"{first['errors']} errors")
        return out
    out["keeps_up_to"] = first["writers"]
    for before, now in itertools.pairwise(ordered):
        if now["errors"]:
            why = f"{now['errors']} errors"
        elif now["p99_ms"] > blowup * first["p99_ms"]:
            why = f"p99 {now['p99_ms']:.0f} ms > {blowup:g} x {first['p99_ms']:.0f} ms"
        elif now["writes_per_s"] < (1 + min_gain) * before["writes_per_s"]:
            why = (
                f"{now['writes_per_s']:.0f} writes/s, not {1 + min_gain:g} x the "
                f"{before['writes_per_s']:.0f} at W={before['writers']}"
            )
        else:
            out["keeps_up_to"] = now["writers"]
            continue
        out.update(stops_at=now["writers"], why=why)
        break
    else:
        out["why"] = "still rising at the largest W"
    return out


def table(rows: Sequence[dict[str, Any]]) -> str:
    def ms(v: float | None) -> str:
        return "" if v is None else f"{v:.0f}"

    return markdown(
        [
            "store",
            "writers",
            "runs",
            "wall s",
            "writes (stored)",
            "writes/s",
            "p50 ms",
            "p99 ms",
            "retries",
            "errors",
            "dataset refused",
        ],
        [
            (
                r["store"],
                r["writers"],
                r["writers"] * r["runs_per_writer"],
                f"{r['wall_s']:.1f}",
                r["writes"],
                f"{r['writes_per_s']:.0f}",
                ms(r["p50_ms"]),
                ms(r["p99_ms"]),
                r["retries"],
                r["errors"],
                r["lineage_errors"],
            )
            for r in rows
        ],
    )


def knee_lines(knees: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    for store, k in knees.items():
        up = f"keeps up to W={k['keeps_up_to']}" if k["keeps_up_to"] else "does not keep up"
        stop = f"; stops at W={k['stops_at']}: {k['why']}" if k["stops_at"] else f" ({k['why']})"
        best = f"; best {k['best_writes_per_s']:.0f} writes/s at W={k['best_at']}"
        lines.append(f"{store}: {up}{stop}{best}")
    return lines


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`): W = 8 and 32, and each knee."""
    out = [
        (
            f"store writes, {r['store']}, {r['writers']} concurrent trials",
            f"{r['writes_per_s']:.0f} writes/s, p99 {r['p99_ms']:.0f} ms, {r['errors']} errors",
        )
        for r in payload["rows"]
        if r["writers"] in (8, 32)
    ]
    for line in knee_lines(payload["knees"]):
        store, text = line.split(": ", 1)
        out.append((f"store writes, {store}: knee", text))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", nargs="+", choices=STORES, default=list(STORES))
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--runs", type=int, default=3, help="trial runs per writer")
    parser.add_argument("--spec", type=Path, default=ROOT / "search_spaces/smoke.yaml")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="K=V")
    parser.add_argument(
        "--system-points",
        type=int,
        default=2,
        help="system metric points per run (one a minute: a smoke trial lasts ~80 s on 2 cores)",
    )
    parser.add_argument("--postgres-fsync", choices=["on", "off"], default="on")
    parser.add_argument("--keep", type=Path, help="keep the stores in this folder")
    parser.add_argument("--dry-run", action="store_true", help="print the trial's writes, stop")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if min(args.writers) < 1 or args.runs < 1 or args.system_points < 0:
        parser.error("--writers and --runs must be at least 1, --system-points at least 0")
    started = Load.now()
    shape = trial_shape(args.spec, args.sets, args.system_points)
    runs = sum(args.writers) * args.runs * len(args.stores)
    print(
        f"one trial of {args.spec.name} writes {shape.counts()} (+ system metrics: ~8 keys a "
        f"point); {runs} trial runs in all over {len(args.stores)} stores ({started})",
        flush=True,
    )
    if args.dry_run:
        return
    rows = []
    with contextlib.ExitStack() as stack:
        folder = stack.enter_context(work_folder(args.keep))
        for store in stack.enter_context(stores(args.stores, folder, args.postgres_fsync == "on")):
            for writers in sorted(args.writers):
                start = time.monotonic()
                rows.append(cell(store, writers, args.runs, shape, folder))
                r = rows[-1]
                print(
                    f"{store.name} W={writers}: {r['writes_per_s']:.0f} writes/s, p99 "
                    f"{r['p99_ms']:.0f} ms, {r['retries']} retries, {r['errors']} errors "
                    f"({time.monotonic() - start:.0f} s with start-up; {Load.now()})",
                    flush=True,
                )
    knees = {s: knee([r for r in rows if r["store"] == s]) for s in args.stores}
    print(table(rows))
    print("\n".join(knee_lines(knees)))
    for r in rows:
        if any(r["lost"].values()):
            print(f"LOST WRITES: {r['store']} W={r['writers']}: sent - stored = {r['lost']}")
    payload = {
        "spec": str(args.spec),
        "sets": args.sets,
        "shape": shape.counts(),
        "postgres_fsync": args.postgres_fsync,
        "rows": rows,
        "knees": knees,
    }
    write_json(args.json, record("store_writes", started, payload))


if __name__ == "__main__":
    main()
