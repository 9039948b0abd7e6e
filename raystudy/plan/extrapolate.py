"""From small timings to a trial's size: straight lines through two measurements.

Pure arithmetic, no torch: what `raystudy.plan.calibrate` measures (seconds per training step
at two batch sizes, seconds of evaluation at two fractions of the study's sample sizes,
seconds to encode two numbers of images) becomes a trial's cost here, so the extrapolation
can be checked against numbers worked out by hand (tests/test_plan_and_ui.py).

A line `intercept + slope * x` through two points is the simplest model that separates a
fixed cost (Adam's update of every parameter, the intervention metrics' pool of 10,000
codes, starting a fit) from a cost that grows with the size (images in a batch, points a
metric or probe trains on). It extrapolates far: from 1/20 of the sample sizes to all of
them, from a quarter of a batch to the batch. Costs that grow faster than linearly (tree
fits, ~n log n) are underestimated by it: by ~log(n)/log(n/20), ~1.3x at 10,000 points.
"""

from __future__ import annotations

from dataclasses import dataclass

from raystudy.spec import EvaluationConfig

#: The sample sizes of an evaluation that `scaled_evaluation` shrinks, with the least each
#: field allows (`EvaluationConfig`'s bounds; num_eval_images may be 0).
SCALED_SIZES: dict[str, int] = {
    "num_train": 10,
    "num_test": 10,
    "probe_train": 20,
    "probe_test": 10,
    "num_eval_images": 0,
}


@dataclass(frozen=True)
class Line:
    """seconds (or a count) = intercept + slope * x."""

    intercept: float
    slope: float

    def at(self, x: float) -> float:
        return self.intercept + self.slope * x

    @classmethod
    def through(cls, x1: float, y1: float, x2: float, y2: float) -> Line:
        """The line through (x1, y1) and (x2, y2), x1 < x2, for timings of a cost that cannot
        fall as x grows: where noise made the larger run the faster one, the cost is taken as
        flat at the larger of the two (slope 0), not falling."""
        if not x1 < x2:
            raise ValueError(f"need two sizes x1 < x2, got {x1:g} and {x2:g}")
        slope = (y2 - y1) / (x2 - x1)
        if slope <= 0:
            return cls(max(y1, y2), 0.0)
        return cls(y1 - slope * x1, slope)

    @classmethod
    def zero(cls) -> Line:
        return cls(0.0, 0.0)


def scaled_evaluation(evaluation: EvaluationConfig, scale: float) -> EvaluationConfig:
    """`evaluation` with every sample size times `scale` (rounded, at least its field's
    minimum; num_eval_images stays 0 when it is 0): the same metrics and probes on fewer
    points."""
    update = {
        name: max(low, round(getattr(evaluation, name) * scale)) if getattr(evaluation, name) else 0
        for name, low in SCALED_SIZES.items()
    }
    return evaluation.model_copy(update=update)


@dataclass(frozen=True)
class TrialCost:
    """One trial's estimated seconds, by part."""

    training: float  # steps * seconds per step at the trial's batch size
    encoding: float  # rendering + encoding every image the metrics and probes score
    reconstruction: float  # eval/*: the ELBO of num_eval_images held-out images
    fitting: float  # the metrics' and probes' own fits on the codes
    probe_fitting: float = 0.0  # the probes' part of `fitting`

    @property
    def seconds(self) -> float:
        return self.training + self.encoding + self.reconstruction + self.fitting


def trial_cost(
    steps: int,
    batch_size: int,
    step_line: Line,
    encode_line: Line,
    recon_line: Line,
    num_eval_images: int,
    fit_line: Line,
    images_line: Line,
    probe_line: Line | None = None,
) -> TrialCost:
    """A trial's cost from its calibration's lines: `step_line` (seconds per step by batch
    size), `encode_line` (seconds by images encoded), `recon_line` (seconds by eval images),
    `fit_line` and `images_line` (fitting seconds and images encoded, by the fraction of the
    evaluation's sample sizes: 1 is the trial's own); `probe_line` the probes' part of the
    fitting seconds."""
    images = max(0.0, images_line.at(1.0))
    return TrialCost(
        training=steps * max(0.0, step_line.at(batch_size)),
        encoding=max(0.0, encode_line.at(images)) if images else 0.0,
        reconstruction=max(0.0, recon_line.at(num_eval_images)) if num_eval_images else 0.0,
        fitting=max(0.0, fit_line.at(1.0)),
        probe_fitting=max(0.0, probe_line.at(1.0)) if probe_line is not None else 0.0,
    )
