"""Timing the parts of a trial at small sizes, on the device its trials will use.

A trial is training (steps x seconds per step) and an evaluation (`raystudy.scoring.
score_model`). A full evaluation of a 128 px residual network encodes ~100,000 images (the
fixed-sample metrics, the intervention metrics' pool of 10,000, every probe scenario) and took
more than 10 minutes on a 2-core CPU, so `plan` never runs one. It times, per part:

- training (`time_training`): `train` itself, one warm-up step and then up to `steps` timed
  steps at each of two batch sizes (a GPU: a quarter of the batch and the batch; a CPU: a
  sixteenth of it and the largest that fits the time left), a line through the two;
- encoding (`time_encoding`): rendering and encoding two numbers of images with the model,
  as `score_model` encodes them, a line through the two;
- reconstruction (`time_reconstruction`): `score_model` with only eval/* (the ELBO of
  held-out images) at two numbers of images;
- fitting (`time_fitting`): `score_representation`, the fixed-sample metrics and one probe
  scenario's probes at two fractions of the sample sizes (the other scenarios cost as much),
  the intervention metrics once (their cost does not follow the sample sizes), on stand-in
  codes computed from the factors (no images, no encoder): a line in the fraction for the
  seconds and another for the number of images the real evaluation renders and encodes,
  which the encoding line then costs.

On a busy CPU everything is timed with one thread (`calibration_threads`).

`raystudy.plan.extrapolate` turns the lines into a trial's seconds.
"""

from __future__ import annotations

import itertools
import os
import statistics
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import torch

from raystudy.data import GroundTruthDataset, Scenario, Split
from raystudy.metrics import INTERVENTION_METRICS
from raystudy.models import VAE, Objective
from raystudy.plan.extrapolate import Line, scaled_evaluation
from raystudy.plan.groups import TrainingGroup
from raystudy.scoring import encode_codes, model_representation, score_model, score_representation
from raystudy.spec import EvaluationConfig, TrainConfig, TrialConfig
from raystudy.training.loop import train

#: Where calibration reports what it has measured, one line at a time.
Progress = Callable[[str], None]


def calibration_device(gpus_asked: bool) -> torch.device:
    """The device the trials will train on: a GPU when the study asks for one and this
    process sees one, else the CPU (which `format_plan` then says)."""
    return torch.device("cuda" if gpus_asked and torch.cuda.is_available() else "cpu")


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return f"GPU ({torch.cuda.get_device_name(device)})"
    return "CPU"


def calibration_budget(command_s: float, reserve_s: float = 3.0) -> float:
    """Seconds left for calibration when this process may take `command_s` in all: what its
    start (imports of torch and sklearn: 5 s on an idle 2-core box, 35 s at load 6) has not
    used, less `reserve_s` for costing and printing; at least 1 (the first group of each
    kind is timed whatever is left)."""
    import psutil

    spent = time.time() - psutil.Process().create_time()
    return max(1.0, command_s - spent - reserve_s)


def calibration_threads(trial_threads: int, device: torch.device) -> int:
    """Threads the calibration times with: the trial's, unless this machine's CPUs are busy
    (1-minute load average + the trial's threads > CPUs + 0.5: the slack for this process's
    own start and the odd daemon), then one. Under contention the
    threads of torch, xgboost and BLAS spin-wait for each other: on the 2-core box at load 6,
    a GBT probe's fit on 133 points took 103 s with 2 threads and 0.6 s with 1, a 128 px
    resnet step at batch 8 13.4 s and 2.3 s. Such timings say nothing of a trial that has
    its CPUs to itself; one thread's are an upper bound of it (up to `trial_threads` x)."""
    if device.type == "cuda" or trial_threads <= 1:
        return trial_threads
    if os.getloadavg()[0] + trial_threads > (os.cpu_count() or 1) + 0.5:
        return 1
    return trial_threads


@contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Torch's thread count set to a trial's CPUs for the block, restored after it."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _synchronised(device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


@dataclass(frozen=True)
class StepTiming:
    batch_size: int
    warmup_seconds: float
    steps: int
    seconds_per_step: float  # median over the timed steps


def time_steps(
    model: VAE,
    objective: Objective,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrainConfig,
    batch_size: int,
    steps: int,
    budget_s: float,
    device: torch.device,
    warmup: bool = True,
) -> StepTiming:
    """Seconds per step of `train` at `batch_size`: with `warmup`, one untimed step first (a
    process's first step pays for allocations and kernel selection, and on a GPU each new
    shape does), then as many of `steps` as `budget_s` allows (at least one), each timed
    from the previous step's end; the median."""
    base = {"batch_size": batch_size, "report_every": 1, "compile": False}
    started = _synchronised(device)
    if warmup:
        one = config.model_copy(update={**base, "steps": 1})
        train(model, objective, dataset, split, one, seed=0, device=device)
    warmup_s = _synchronised(device) - started
    if warmup:
        steps = max(1, min(steps, int(budget_s / max(warmup_s, 1e-6))))
    stamps = [_synchronised(device)]
    # A checkpoint only at the last step, as in a trial between its checkpoints.
    train(
        model,
        objective,
        dataset,
        split,
        config.model_copy(update={**base, "steps": steps, "checkpoint_every": steps}),
        seed=0,
        device=device,
        on_progress=lambda *_: stamps.append(_synchronised(device)),
    )
    return StepTiming(batch_size, warmup_s, steps, statistics.median(np.diff(stamps)))


@dataclass(frozen=True)
class TrainingTiming:
    group: TrainingGroup
    timings: tuple[StepTiming, StepTiming]
    step: Line  # seconds per step, by batch size
    encode: Line  # seconds to render and encode, by images
    recon: Line  # seconds of eval/*, by images
    calibration_seconds: float = 0.0  # what timing it took, wall

    @property
    def seconds_per_step(self) -> float:
        return self.step.at(self.group.batch_size)


def timing_batches(batch_size: int, step_s: float | None, budget_s: float,
                   steps: int, device: torch.device) -> tuple[int, int]:  # fmt: skip
    """The two batch sizes training is timed at. On a GPU a quarter of the batch and the
    batch. On a CPU a sixteenth of it first; the second (known once the first step at the
    eighth is timed, `step_s` a step there) is the largest up to the batch whose warm-up and
    `steps` steps fit `budget_s` if a step's time grew in proportion to its batch (an upper
    bound: part of a step is fixed), and at least twice the first."""
    if device.type == "cuda" or batch_size < 4:
        return max(1, batch_size // 4), batch_size
    small = max(1, batch_size // 16)
    if step_s is None:
        return small, 2 * small
    affordable = int(budget_s / ((steps + 1) * max(step_s, 1e-6)) * small)
    return small, min(batch_size, max(2 * small, affordable))


def time_encoding(
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    device: torch.device,
    sizes: tuple[int, int],
) -> Line:
    """Seconds to render and encode n images as `score_model` does (`encode_codes`), as a
    line in n through two sizes, after one untimed warm-up batch."""
    represent = model_representation(model)
    idx = split.sample("encoder", sizes[1], np.random.default_rng(0))
    encode_codes(represent, dataset, idx[: sizes[0]], device)
    seconds = []
    for n in sizes:
        started = _synchronised(device)
        encode_codes(represent, dataset, idx[:n], device)
        seconds.append(_synchronised(device) - started)
    return Line.through(sizes[0], seconds[0], sizes[1], seconds[1])


def time_reconstruction(
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrialConfig,
    device: torch.device,
    sizes: tuple[int, int],
) -> Line:
    """Seconds of `score_model`'s eval/* part (reconstruction of held-out images, and of the
    split's held-out combinations where it has them) by number of images, a line through two
    sizes after an untimed warm-up at the smaller."""
    seconds = []
    for n in (sizes[0], *sizes):
        evaluation = config.evaluation.model_copy(
            update={"metrics": [], "probes": [], "num_eval_images": n}
        )
        only_eval = config.model_copy(update={"evaluation": evaluation})
        started = _synchronised(device)
        score_model(model, dataset, split, only_eval, device)
        seconds.append(_synchronised(device) - started)
    return Line.through(sizes[0], seconds[1], sizes[1], seconds[2])


@dataclass(frozen=True)
class FitTiming:
    scales: tuple[float, float]
    seconds: tuple[float, float]  # the timed metrics and one scenario's probes, at each scale
    fit: Line  # seconds of the metrics' and probes' fits, by fraction of the sample sizes
    images: Line  # images the evaluation renders and encodes, by the same fraction
    scenarios: int = 1  # probe scenarios, one of them timed and the rest costed as it
    intervention_seconds: float = 0.0  # the intervention metrics, timed once (size-free)
    calibration_seconds: float = 0.0  # what timing it took, wall
    #: The probes' part of `fit` (every scenario's), by the same fraction: what a GPU trial
    #: fits on its GPU (`evaluation.device`), the rest staying on its CPUs.
    probes: Line = field(default_factory=Line.zero)


def fitting_scales(config: TrialConfig, points: int) -> tuple[float, float]:
    """Fractions of the sample sizes the fits are timed at: the larger gives the largest
    sample about `points` points (all of them when it has fewer), the smaller a quarter of
    that."""
    ev = config.evaluation
    largest = max(ev.num_train + ev.num_test, ev.probe_train + ev.probe_test)
    high = min(1.0, points / largest)
    return high / 4, high


def stand_in_codes(
    dataset: GroundTruthDataset, width: int, counted: list[int]
) -> Callable[[np.ndarray], np.ndarray]:
    """Codes of `width` columns for factor indices, a fixed random mixture of the normalised
    factors plus noise, without rendering: what the metrics and probes fit costs the same on
    them as on a trained encoder's codes of that width (their fits depend on the points,
    columns and classes, not on what the columns mean). Counts the rows into `counted`."""
    rng = np.random.default_rng(0)
    mixing = rng.normal(size=(dataset.factors.num_factors, width))

    def codes(idx: np.ndarray) -> np.ndarray:
        counted[0] += len(idx)
        z = dataset.factors.normalise(np.asarray(idx)) @ mixing
        return z + 0.1 * np.random.default_rng(len(idx)).normal(size=z.shape)

    return codes


class _OneScenario:
    """A split seen through its first probe scenario alone: the scenarios fit the same probes
    on samples of the same sizes, so one is timed and the others are costed as it."""

    def __init__(self, split: Split) -> None:
        self._split = split

    def __getattr__(self, name: str) -> object:
        return getattr(self._split, name)

    @property
    def scenarios(self) -> dict[str, Scenario]:
        return dict(itertools.islice(self._split.scenarios.items(), 1))


@dataclass(frozen=True)
class _Pass:
    metrics_s: float  # the fixed-sample metrics (or the intervention ones)
    probes_s: float  # the probes of the one scenario timed
    metric_images: int
    probe_images: int


def _score_pass(
    config: TrialConfig,
    dataset: GroundTruthDataset,
    split: Split,
    evaluation: EvaluationConfig,
    codes_of: Callable[[np.ndarray], np.ndarray],
    counted: list[int],
    factor_sized: bool,
) -> _Pass:
    """One `score_representation` on one scenario, split at its first probe fit (it says
    "probes ..." as they start) into the metrics' part and the probes' part."""
    marks: list[tuple[float, int]] = []

    def heard(message: str) -> None:
        if message.startswith("probes") and not marks:
            marks.append((time.perf_counter(), counted[0]))

    started, before = time.perf_counter(), counted[0]
    with warnings.catch_warnings():
        # Small samples miss some factor values; the metrics warn of it, rightly, but what is
        # timed here is the fit, not its score.
        warnings.simplefilter("ignore")
        score_representation(
            _never_called,
            dataset,
            cast(Split, _OneScenario(split)),
            evaluation,
            torch.device("cpu"),
            n_jobs=1,
            factor_sized=factor_sized,
            codes_of=codes_of,
            progress=heard,
        )
    ended, after = time.perf_counter(), counted[0]
    split_at, images_at = marks[0] if marks else (ended, after)
    return _Pass(split_at - started, ended - split_at, images_at - before, after - images_at)


def time_fitting(
    config: TrialConfig,
    dataset: GroundTruthDataset,
    split: Split,
    width: int,
    factor_sized: bool,
    code_is_ground_truth: bool,
    scales: tuple[float, float],
) -> FitTiming:
    """`score_representation` of the study's metrics and probes on the CPU, one thread (see
    `calibration_threads`), on stand-in codes (`stand_in_codes`; for gt_decoder, whose code is
    the factors, the factors themselves, with no images to encode):

    - the fixed-sample metrics and ONE probe scenario's probes at two fractions of the sample
      sizes, after an untimed pass at the sizes' minimum (the backends' first fits in a
      process pay for imports and set-up); the other scenarios cost what the timed one does;
    - the intervention metrics (beta_vae, factor_vae) once: their pool of 10,000 codes and
      their own sample sizes do not follow the evaluation's, so their cost is a constant.
    """
    began = time.perf_counter()
    counted = [0]
    if code_is_ground_truth:
        codes_of = lambda idx: dataset.factors.normalise(np.asarray(idx)).astype(float)  # noqa: E731
    else:
        codes_of = stand_in_codes(dataset, width, counted)
    ev = config.evaluation
    fixed = ev.model_copy(
        update={"metrics": [m for m in ev.metrics if m not in INTERVENTION_METRICS]}
    )
    args = (config, dataset, split)
    _score_pass(*args, scaled_evaluation(fixed, 0.0), codes_of, counted, factor_sized)
    low, high = (
        _score_pass(*args, scaled_evaluation(fixed, s), codes_of, counted, factor_sized)
        for s in scales
    )
    intervention = [m for m in ev.metrics if m in INTERVENTION_METRICS]
    once = _Pass(0.0, 0.0, 0, 0)
    if intervention:
        only = ev.model_copy(update={"metrics": intervention, "probes": []})
        once = _score_pass(*args, only, codes_of, counted, factor_sized)
    n = max(1, len(split.scenarios))
    seconds = [p.metrics_s + p.probes_s for p in (low, high)]
    fit = Line.through(
        scales[0],
        low.metrics_s + n * low.probes_s,
        scales[1],
        high.metrics_s + n * high.probes_s,
    )
    fit = Line(fit.intercept + once.metrics_s, fit.slope)
    # A count, not a timing: exact on its line, so taken as it is.
    images = [p.metric_images + n * p.probe_images for p in (low, high)]
    slope = (images[1] - images[0]) / (scales[1] - scales[0])
    return FitTiming(
        scales,
        (seconds[0], seconds[1]),
        fit,
        Line(images[0] - slope * scales[0] + once.metric_images, slope),
        scenarios=n,
        intervention_seconds=once.metrics_s,
        calibration_seconds=time.perf_counter() - began,
        probes=Line.through(scales[0], n * low.probes_s, scales[1], n * high.probes_s),
    )


def _never_called(images: torch.Tensor) -> torch.Tensor:
    raise AssertionError("the stand-in codes replace the encoder while fits are timed")
