"""MLflow system metrics for a trial's runs: CPU, memory, disk, network and, where there is one,
GPU utilisation and memory, sampled in a thread for the trial's lifetime and logged as
``system/*`` (the run page's "System metrics" tab), so GPU packing can be checked afterwards.

The sampling is MLflow's own (`SystemMetricsMonitor`'s monitors: psutil, and nvidia-ml-py for
NVIDIA GPUs); the loop and the writes are raystudy's, because trials log with `MlflowClient`
(MLflow's monitor belongs to the fluent `start_run`) and because writes must go through
`TrialRun`: retried while sqlite is busy, skipped once the store is unreachable. Two changes to
MLflow's loop: the last, partial interval is logged when the trial ends (a trial shorter than
one interval still gets a point), and a resumed run continues its steps.

One point every `SAMPLES_PER_POINT` samples of `SAMPLING_INTERVAL_S` seconds (the mean of
those samples): one a minute, ~15 keys, so a ten-hour trial adds ~9,000 rows to the store and
a study of a thousand such trials ~10M. MLflow's own environment variables
`MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL` and `MLFLOW_SYSTEM_METRICS_SAMPLES_BEFORE_LOGGING`
override both (in the trial's process: a cluster's workers need them set there).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from raystudy.keys import SYSTEM, system_key
from raystudy.spec.url_secrets import expand
from raystudy.tracking.trial_run import TrialRun

SAMPLING_INTERVAL_S = 10.0
SAMPLES_PER_POINT = 6
#: The key a resumed run's next step is read from (CPUMonitor always logs it).
STEP_KEY = system_key("cpu_utilization_percentage")


class SystemMetrics:
    """A thread sampling this machine, logging each point to every run `runs()` returns."""

    def __init__(self, runs: Callable[[], Sequence[TrialRun]]) -> None:
        import psutil
        from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

        self._runs = runs
        # An offline run is skipped: MLflow's monitor makes clients of the store it cannot
        # reach (for a database store, ~100 s of engine retries each).
        first = next((r for r in runs() if r.offline is None), None)
        if first is None:
            # Nothing to log to; and without a URI MLflow would open its default store,
            # ./mlflow.db in whatever folder the trial runs in.
            raise ValueError("no open run to log system metrics to")
        # Built for its monitors and its reading of MLflow's environment variables; its own
        # thread is never started.
        self._mlflow = SystemMetricsMonitor(
            first.run_id,
            sampling_interval=SAMPLING_INTERVAL_S,
            samples_before_logging=SAMPLES_PER_POINT,
            tracking_uri=expand(first.uri),
        )
        self.interval = float(self._mlflow.sampling_interval)
        self.samples_per_point = max(1, int(self._mlflow.samples_before_logging))
        self._stop = threading.Event()
        _keep_visible_gpus(self._mlflow.monitors)
        # A daemon, so that no exit path can be held up by it; `stop` joins it.
        self._thread = threading.Thread(
            target=self._loop, name="raystudy-system-metrics", daemon=True
        )
        self._step = 1 + max((r.last_step(STEP_KEY) for r in runs()), default=-1)
        self._psutil = psutil

    def start(self) -> SystemMetrics:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Log the last partial interval and end the thread."""
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        try:
            # psutil measures CPU use since the previous call *from the same thread* (0.0 on
            # the first): start this thread's clock, so the first sample covers the first
            # interval.
            self._psutil.cpu_percent()
            samples = 0
            while True:
                stopping = self._stop.wait(self.interval)
                self._mlflow.collect_metrics()
                samples += 1
                if samples >= self.samples_per_point or stopping:
                    self._publish()
                    samples = 0
                if stopping:
                    return
        except Exception as exc:  # never the trial's failure: it only loses these points
            print(
                f"raystudy: system metrics stopped ({type(exc).__name__}: {exc}); the trial "
                "goes on without them",
                file=sys.stderr,
                flush=True,
            )

    def _publish(self) -> None:
        point = {f"{SYSTEM}{k}": float(v) for k, v in self._mlflow.aggregate_metrics().items()}
        for monitor in self._mlflow.monitors:
            monitor.clear_metrics()
        for run in self._runs():
            run.log_metrics(point, self._step)
        self._step += 1


def _keep_visible_gpus(monitors: Sequence[object]) -> None:
    """Only the GPUs this process was given (Ray sets CUDA_VISIBLE_DEVICES to their indices).

    NVML sees every GPU of the node whatever CUDA_VISIBLE_DEVICES says: on an 8-GPU node each
    trial would log all eight, 40 keys a point. The ones it shares with its co-located trials
    are what packing is judged by; their `gpu_<i>` keys are numbered among those kept (the
    run's `ray.gpu_ids` tag says which physical GPUs they are).
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return
    try:
        wanted = [int(part) for part in visible.split(",") if part.strip()]
    except ValueError:  # GPU UUIDs: NVML would need looking them up; keep every GPU
        return
    for monitor in monitors:
        handles = getattr(monitor, "gpu_handles", None)
        if handles is not None:
            monitor.gpu_handles = [handles[i] for i in wanted if 0 <= i < len(handles)]  # type: ignore[attr-defined]


@contextmanager
def system_metrics(runs: Callable[[], Sequence[TrialRun]], enabled: bool = True) -> Iterator[None]:
    """Sample system metrics into `runs()` while the block runs (nothing if not `enabled`).

    A monitor that cannot start (psutil missing) is reported on stderr and the block runs
    without it: the metrics describe the trial, they are not part of its results.
    """
    if not enabled:
        yield
        return
    try:
        monitor = SystemMetrics(runs).start()
    except Exception as exc:
        print(
            f"raystudy: no system metrics for this trial ({type(exc).__name__}: {exc})",
            file=sys.stderr,
            flush=True,
        )
        yield
        return
    try:
        yield
    finally:
        monitor.stop()
