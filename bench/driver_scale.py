"""The study driver at the papers' size: 1,000 to 12,600 trials through `raystudy run`.

    python -m bench.driver_scale [--trials 1000 5000 12600] [--seeds-per-trial 1 10]
        [--store sqlite | server | server-postgres | postgres] [--tracking-uri URI]
        [--interrupt 0.5] [--json PATH]

Each trial is dry (train.steps 0, no metrics or probes, 4 latents, no logged model and no
figures: `execution.log_models` and `log_artifacts` false, as a sweep this size would set
them), so what is measured is the driver, Ray Tune and the MLflow store,
through the same code path as a real study: the `raystudy` command in a child process, as a
user runs it. Per size N (models) and stacking S (`execution.seeds_per_trial`: N / S Tune
trials):

1. `raystudy run`, interrupted with SIGINT (Ctrl-C) once `--interrupt` of the models have
   finished runs in the store (0: not interrupted);
2. `raystudy status` on the interrupted study;
3. `raystudy resume`, to the end;
4. `raystudy analyze`.

Each step's wall seconds and the peak RSS of its process (polled every 0.5 s with psutil; the
driver only, not Ray's workers) are recorded, with the finished models after each step, the
size of Tune's experiment folder (`<study>/tune/`) and its largest file, and the store's size.
"wall per model" is (run + resume wall) / N. Stores (`STORES`): the study's own sqlite file
(default); `--store server`, an `mlflow server` over a sqlite file (one writer process between
the trials and the file); `server-postgres`, an `mlflow server` over a PostgreSQL cluster
started here with fsync on (cluster.yaml's head); `postgres`, the studies naming that
database themselves; or any `--tracking-uri` (not interrupted where it is a server whose
database this bench cannot count in). Servers run MLflow's default 4 workers.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import sqlalchemy

from bench import _servers, study_overhead
from bench._table import Load, markdown, record, work_folder, write_json

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "search_spaces/smoke.yaml"
DRY = [
    *study_overhead.DRY,  # train.steps 0, no metrics, probes or eval images, 4 latents
    "grid.model=[{objective: beta_vae}]",
    "grid.train={input_noise: [false]}",
    "resources.cpu=1",
    # What a sweep of this size would set: 12,600 encoders (1.9 MB each) and ~75,000 figures
    # are not worth their disk, and drawing the figures costs a trial ~1-2 CPU s.
    "execution.log_models=false",
    "execution.log_artifacts=false",
]
POLL_S = 0.5


def raystudy(*args: str) -> list[str]:
    return [sys.executable, "-c", "from raystudy.cli import app; app()", *args]


class Watched:
    """A child process with its wall time and peak RSS (polled)."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.log = log.open("ab")
        self.start = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        self.peak_rss = 0
        self.wall = 0.0

    def poll(self) -> bool:
        """True while it runs; updates the peak RSS."""
        with contextlib.suppress(psutil.Error):
            self.peak_rss = max(self.peak_rss, psutil.Process(self.proc.pid).memory_info().rss)
        if self.proc.poll() is None:
            return True
        self.wall = time.monotonic() - self.start
        self.log.close()
        return False

    def wait(self) -> int:
        while self.poll():
            time.sleep(POLL_S)
        return self.proc.returncode


def finished_models(db: str | None, study: str) -> int:
    """Trial runs of `study` FINISHED in the database behind the store (a SQLAlchemy URL:
    sqlite or PostgreSQL; read directly, not through MLflow: cheap at any size and no load on
    a server being timed); -1 where it cannot be read."""
    if db is None:
        return -1
    if db.startswith("sqlite:///") and not Path(db.removeprefix("sqlite:///")).exists():
        return -1
    query = sqlalchemy.text(
        "SELECT count(*) FROM runs r JOIN tags t ON t.run_uuid = r.run_uuid "
        "JOIN experiments e ON e.experiment_id = r.experiment_id "
        "WHERE r.status = 'FINISHED' AND t.key = 'raystudy.role' "
        "AND t.value = 'trial' AND e.name = :study"
    )
    engine = _engine(db)
    try:
        with engine.connect() as con:
            return int(con.execute(query, {"study": study}).scalar_one())
    except sqlalchemy.exc.SQLAlchemyError:
        return -1


@functools.cache
def _engine(db: str) -> sqlalchemy.Engine:
    if db.startswith("sqlite:///"):  # read-only: never a writer beside the store's own
        path = db.removeprefix("sqlite:///")
        return sqlalchemy.create_engine(
            "sqlite://",
            creator=lambda: sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5),
            poolclass=sqlalchemy.pool.NullPool,
        )
    return sqlalchemy.create_engine(db, poolclass=sqlalchemy.pool.NullPool)


def store_size_mb(db: str | None) -> float | None:
    """The store's database size: the sqlite file's, or PostgreSQL's pg_database_size."""
    if db is None:
        return None
    if db.startswith("sqlite:///"):
        path = Path(db.removeprefix("sqlite:///"))
        return path.stat().st_size / 2**20 if path.exists() else None
    with _engine(db).connect() as con:
        size = con.execute(sqlalchemy.text("SELECT pg_database_size(current_database())"))
        return int(size.scalar_one()) / 2**20


def folder_bytes(path: Path) -> tuple[int, int]:
    """Total bytes under `path` and the largest single file's."""
    sizes = [p.stat().st_size for p in path.rglob("*") if p.is_file()] if path.exists() else []
    return sum(sizes), max(sizes, default=0)


def one_size(
    models: int, stack: int, out: Path, uri: str | None, db: str | None, interrupt: float
) -> dict[str, Any]:
    name = f"scale_{models}_s{stack}"
    sets = [*DRY, f"name={name}", f"grid.seed={list(range(models))}"]
    sets.append(f"execution.seeds_per_trial={stack}")
    if uri is not None:
        sets.append(f"tracking.uri={uri}")
    study = out / name
    db = db if db is not None else f"sqlite:///{study / 'mlflow.db'}"
    log = out / f"{name}.log"
    row: dict[str, Any] = {"models": models, "seeds_per_trial": stack}
    row["tune_trials"] = -(-models // stack)
    run = Watched(
        raystudy("run", str(SPEC), "-o", str(out), *(a for s in sets for a in ("--set", s))), log
    )
    interrupted_at = None
    while run.poll():
        if interrupt and interrupted_at is None:
            done = finished_models(db, name)
            if done >= interrupt * models:
                run.proc.send_signal(signal.SIGINT)
                interrupted_at = done
        time.sleep(POLL_S)
    row["run"] = {
        "wall_s": run.wall,
        "peak_rss_mb": run.peak_rss / 2**20,
        "rc": run.proc.returncode,
    }
    row["run"]["finished_models"] = finished_models(db, name)
    print(f"{name}: run {run.wall:.0f} s, rc {run.proc.returncode} ({Load.now()})", flush=True)
    for step in ("status", "resume", "analyze"):
        if step == "resume" and not interrupt:
            continue
        w = Watched(raystudy(step, name, "-o", str(out)), log)
        w.wait()
        row[step] = {"wall_s": w.wall, "peak_rss_mb": w.peak_rss / 2**20, "rc": w.proc.returncode}
        row[step]["finished_models"] = finished_models(db, name)
        print(f"{name}: {step} {w.wall:.1f} s, rc {w.proc.returncode}", flush=True)
    tune_total, tune_largest = folder_bytes(study / "tune")
    row["tune_dir_mb"] = tune_total / 2**20
    row["tune_largest_file_mb"] = tune_largest / 2**20
    row["store_mb"] = store_size_mb(db)
    row["interrupted_at_models"] = interrupted_at
    wall = row["run"]["wall_s"] + row.get("resume", {}).get("wall_s", 0.0)
    row["wall_per_model_s"] = wall / models
    return row


#: --store: where the trials log, and what this bench starts for it.
STORES = {
    "sqlite": "each study's own sqlite file (the default store)",
    "server": "an `mlflow server` over a sqlite file",
    "server-postgres": "an `mlflow server` over PostgreSQL (cluster.yaml's head)",
    "postgres": "PostgreSQL, named by the study (tracking.uri: postgresql://...)",
}


@contextlib.contextmanager
def store(kind: str, uri: str | None, folder: Path) -> Iterator[tuple[str | None, str | None]]:
    """(the URI the studies log to, the database behind it to count runs in); None, None:
    each study's own sqlite file."""
    if uri is not None:
        # A server's database is not known from its URL: no Ctrl-C, no counts.
        yield uri, None if uri.startswith("http") else uri
    elif kind == "sqlite":
        yield None, None
    elif kind == "server":
        with _servers.mlflow_server(folder / "server") as server:
            yield server.url, f"sqlite:///{folder / 'server' / 'server.db'}"
    else:
        with _servers.postgres_cluster() as cluster:
            database = cluster.create_database("scale")
            if kind == "postgres":
                yield database, database
            else:
                with _servers.mlflow_server(folder / "server", database) as server:
                    yield server.url, database


def table(payload: dict[str, Any]) -> str:
    def step(r: dict[str, Any], key: str) -> str:
        s = r.get(key)
        return "" if s is None else f"{s['wall_s']:.1f} s / {s['peak_rss_mb']:.0f} MiB"

    return markdown(
        [
            "models",
            "Tune trials",
            "store",
            "wall per model",
            "run (to Ctrl-C)",
            "status",
            "resume",
            "analyze",
            "tune/ MiB (largest file)",
        ],
        [
            (
                r["models"],
                r["tune_trials"],
                payload["store"],
                f"{r['wall_per_model_s']:.3f} s",
                step(r, "run"),
                step(r, "status"),
                step(r, "resume"),
                step(r, "analyze"),
                f"{r['tune_dir_mb']:.0f} ({r['tune_largest_file_mb']:.1f})",
            )
            for r in payload["rows"]
        ],
    )


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    return [
        (
            f"driver scale, {r['models']} models / {r['tune_trials']} Tune trials, "
            f"{payload['store']}",
            f"{r['wall_per_model_s']:.3f} s per model; driver peak "
            f"{max(r['run']['peak_rss_mb'], r.get('resume', r['run'])['peak_rss_mb']):.0f} MiB",
        )
        for r in payload["rows"]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[1000, 5000, 12600])
    parser.add_argument("--seeds-per-trial", type=int, nargs="+", default=[1])
    parser.add_argument("--store", choices=list(STORES), default="sqlite")
    parser.add_argument("--tracking-uri", help="any other store, e.g. a server over Postgres")
    parser.add_argument("--interrupt", type=float, default=0.5, help="0: no Ctrl-C")
    parser.add_argument("--keep", type=Path, help="keep the studies in this folder")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    started = Load.now()
    total = sum(args.trials) * len(args.seeds_per_trial)
    print(
        f"{total} dry models in all: at ~0.4 s each on 2 cores, about {total * 0.4 / 60:.0f} "
        f"minutes ({started})",
        flush=True,
    )
    rows = []
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(work_folder(args.keep))
        uri, db = stack.enter_context(store(args.store, args.tracking_uri, out))
        for models in args.trials:
            for s in args.seeds_per_trial:
                rows.append(one_size(models, s, out, uri, db, args.interrupt))
    kind = args.tracking_uri.split(":")[0] if args.tracking_uri else args.store
    payload = {"store": kind, "interrupt": args.interrupt, "rows": rows}
    print(table(payload))
    write_json(args.json, record("driver_scale", started, payload))


if __name__ == "__main__":
    main()
