"""One plan's costing: its trials grouped by what drives their cost (`raystudy.plan.groups`),
the groups most trials belong to timed first (`raystudy.plan.calibrate`) or read from the
cache, within the time budget, and every kind of trial costed from its groups' timings
(`raystudy.plan.extrapolate`); a group not timed is costed as the timed group most like it."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from typing import TypeVar

import torch

from raystudy.data import get_dataset
from raystudy.models import OBJECTIVES
from raystudy.models.factory import build
from raystudy.plan.cache import CalibrationCache, cache_key, fitting_from, training_from
from raystudy.plan.calibrate import (
    FitTiming,
    Progress,
    TrainingTiming,
    calibration_device,
    calibration_threads,
    device_name,
    fitting_scales,
    time_encoding,
    time_fitting,
    time_reconstruction,
    time_steps,
    timing_batches,
    torch_threads,
)
from raystudy.plan.extrapolate import Line, TrialCost, trial_cost
from raystudy.plan.groups import EvaluationGroup, TrainingGroup, kind_label
from raystudy.plan.result import Plan
from raystudy.scoring import build_split
from raystudy.spec import TrialConfig

Group = TypeVar("Group", TrainingGroup, EvaluationGroup)


def _nearest(group: Group, calibrated: list[Group]) -> Group:
    return max(calibrated, key=group.likeness)


class Calibration:
    """One plan's calibration: groups the trials, times the groups most trials belong to
    first, and costs every kind of trial from its groups' timings."""

    def __init__(
        self,
        plan: Plan,
        trials: list[TrialConfig],
        steps: int | None,
        max_groups: int,
        budget_s: float,
        fit_points: int,
        progress: Progress | None,
    ) -> None:
        self.plan, self.steps, self.max_groups = plan, steps, max_groups
        self.budget_s, self.fit_points = budget_s, fit_points
        self.say: Progress = progress or (lambda _line: None)
        self.examples: dict[str, tuple[TrialConfig, TrainingGroup, EvaluationGroup]] = {}
        #: Each trial's kind, in the order of `trials`.
        self.trial_kinds: list[str] = []
        num_factors: dict[str, int] = {}
        for trial in trials:
            name = trial.dataset.name
            if name not in num_factors:
                num_factors[name] = get_dataset(name, **trial.dataset.options).factors.num_factors
            tg = TrainingGroup.of(trial)
            eg = EvaluationGroup.of(trial, num_factors[name])
            kind = kind_label(tg, eg, trial.train.steps)
            self.trial_kinds.append(kind)
            plan.kinds[kind] += 1
            self.examples.setdefault(kind, (trial, tg, eg))
        self.device = calibration_device(plan.gpus_asked)
        self.models: dict[tuple[str, str, bool], tuple[Line, Line]] = {}  # encode, recon lines
        self.cache: CalibrationCache | None = None
        self.recalibrate = False

    def run(self) -> None:
        if self.steps is None:
            return
        plan = self.plan
        plan.device = device_name(self.device)
        plan.timed_threads = calibration_threads(plan.threads, self.device)
        plan.budget_s = self.budget_s
        # The groups of the most trials first: where the budget ends, most trials are timed.
        train_n: Counter[TrainingGroup] = Counter()
        eval_n: Counter[EvaluationGroup] = Counter()
        for kind, (_, tg, eg) in self.examples.items():
            train_n[tg] += plan.kinds[kind]
            eval_n[eg] += plan.kinds[kind]
        trains = [g for g, _ in train_n.most_common(self.max_groups)]
        evals = [g for g, _ in eval_n.most_common(self.max_groups)]
        for group in [*train_n, *eval_n]:
            if group not in trains and group not in evals:
                plan.not_timed[str(group)] = f"beyond the cap of {self.max_groups} groups"
        todo = [g for pair in itertools.zip_longest(trains, evals) for g in pair if g is not None]
        started = time.perf_counter()
        deadline = started + self.budget_s
        with torch_threads(plan.timed_threads):
            for i, group in enumerate(todo, 1):
                left = deadline - time.perf_counter()
                prefix = f"calibrating {i}/{len(todo)} {group}"
                timed: dict = plan.training if isinstance(group, TrainingGroup) else plan.evaluation
                if self._from_cache(group, prefix):
                    continue
                if timed:
                    # The budget is a hard one: a group whose timing would overrun it (as long
                    # as the most similar group's took) is costed as that group instead.
                    near = _nearest(group, list(timed))
                    needs = timed[near].calibration_seconds
                    if needs > left:
                        why = (
                            f"time budget: ~{needs:.0f} s to time, {max(0.0, left):.0f} s of "
                            f"{self.budget_s:.0f} s left"
                        )
                        plan.not_timed[str(group)] = why
                        self.say(f"{prefix}: not timed ({why}), costed as {near}")
                        continue
                share = max(0.0, left) / (len(todo) - i + 1)
                timing: TrainingTiming | FitTiming
                if isinstance(group, TrainingGroup):
                    timing = plan.training[group] = self._time_training(group, share, prefix)
                else:
                    timing = plan.evaluation[group] = self._time_evaluation(group, prefix)
                if self.cache is not None:
                    self.cache.put(self._key(group), timing)
        plan.calibration_seconds = time.perf_counter() - started
        for kind, (trial, tg, eg) in self.examples.items():
            plan.costs[kind] = self._cost(trial, tg, eg)

    def _key(self, group: TrainingGroup | EvaluationGroup) -> str:
        settings = f"{self.steps} steps, {self.fit_points} fit points"
        return cache_key(group, str(self.plan.device), self.plan.timed_threads, settings)

    def _from_cache(self, group: TrainingGroup | EvaluationGroup, prefix: str) -> bool:
        """Whether `group`'s timing was read from the cache (and then put in the plan)."""
        if self.cache is None or self.recalibrate:
            return False
        hit = self.cache.get(self._key(group))
        if hit is None:
            return False
        data, taken = hit
        try:
            if isinstance(group, TrainingGroup):
                self.plan.training[group] = training_from(data, group)
            else:
                self.plan.evaluation[group] = fitting_from(data)
        except (KeyError, TypeError, ValueError):
            return False  # an entry of another shape: timed again, and overwritten
        self.plan.cached[str(group)] = taken
        self.say(f"{prefix}: cached from {taken} (--recalibrate to time it again)")
        return True

    def _example(self, group: TrainingGroup | EvaluationGroup) -> TrialConfig:
        index = 1 if isinstance(group, TrainingGroup) else 2
        return next(ex[0] for ex in self.examples.values() if ex[index] == group)

    def _time_training(self, group: TrainingGroup, budget_s: float, prefix: str) -> TrainingTiming:
        began = time.perf_counter()
        config = self._example(group)
        dataset = get_dataset(config.dataset.name, **config.dataset.options)
        split = build_split(config, dataset)
        torch.manual_seed(0)
        model, objective = build(
            config.model, dataset.channels, dataset.resolution, dataset.factors.num_factors
        )
        model = model.to(self.device)
        assert self.steps is not None
        where = f"on {device_name(self.device)}, {self.plan.timed_threads} thread(s)"
        small, _ = timing_batches(group.batch_size, None, budget_s, self.steps, self.device)
        args = (model, objective, dataset, split, config.train)
        first = time_steps(*args, small, self.steps, budget_s / 3, self.device)
        self.say(
            f"{prefix}: batch {small} {where}: warm-up {first.warmup_seconds:.1f} s, "
            f"{first.steps} steps {first.seconds_per_step:.2f} s/step"
        )
        # The first warm-up step of a process pays for more than its shape: not a guide.
        _, large = timing_batches(
            group.batch_size, first.seconds_per_step, budget_s / 2, self.steps, self.device
        )
        # On a CPU only a process's first step pays extra (not each shape's): no warm-up.
        gpu = self.device.type == "cuda"
        # Steps that fit a third of the budget if a step grew with its batch (an upper bound).
        predicted = first.seconds_per_step * large / small
        steps = max(1, min(self.steps, int(budget_s / 3 / max(predicted, 1e-6))))
        second = time_steps(*args, large, steps, budget_s / 3, self.device, warmup=gpu)
        step = Line.through(small, first.seconds_per_step, large, second.seconds_per_step)
        how = "measured" if large == group.batch_size else "extrapolated"
        self.say(
            f"{prefix}: batch {large}: {second.steps} "
            f"steps {second.seconds_per_step:.2f} s/step -> {step.at(group.batch_size):.2f} "
            f"s/step at batch {group.batch_size} ({how})"
        )
        # gt_decoder's code is the factors: no encoder, nothing to encode (its evaluation
        # group counts no images), and a model unlike any encoder's of its architecture.
        truth = OBJECTIVES.get(group.objective).code_is_ground_truth
        key = (group.architecture, group.dataset, truth)
        if key not in self.models:
            sizes = (64, 256) if self.device.type == "cuda" else (8, 32)
            encode = (
                Line.zero() if truth else time_encoding(model, dataset, split, self.device, sizes)
            )
            n_eval = config.evaluation.num_eval_images
            recon = (
                time_reconstruction(model, dataset, split, config, self.device, sizes)
                if n_eval
                else Line.zero()
            )
            self.models[key] = (encode, recon)
            self.say(
                f"{prefix}: encoding {sizes[0]} and {sizes[1]} images: "
                f"{encode.slope * 1000:.1f} ms/image; eval/* of as many: "
                f"{recon.slope * 1000:.1f} ms/image"
            )
        return TrainingTiming(
            group, (first, second), step, *self.models[key], time.perf_counter() - began
        )

    def _time_evaluation(self, group: EvaluationGroup, prefix: str) -> FitTiming:
        config = self._example(group)
        dataset = get_dataset(config.dataset.name, **config.dataset.options)
        split = build_split(config, dataset)
        scales = fitting_scales(config, self.fit_points)
        timing = time_fitting(
            config,
            dataset,
            split,
            group.width,
            group.factor_sized,
            group.code_is_ground_truth,
            scales,
        )
        once = (
            f", intervention metrics once {timing.intervention_seconds:.1f} s"
            if timing.intervention_seconds
            else ""
        )
        self.say(
            f"{prefix}: metrics and 1 of {timing.scenarios} probe scenario(s) at "
            f"{scales[0]:.3g} and {scales[1]:.3g} of the sample sizes: "
            f"{timing.seconds[0]:.1f} s and {timing.seconds[1]:.1f} s{once} -> "
            f"{timing.fit.at(1.0):.0f} s of fits and {timing.images.at(1.0):,.0f} images to "
            "encode at full size"
        )
        return timing

    def _cost(self, trial: TrialConfig, tg: TrainingGroup, eg: EvaluationGroup) -> TrialCost:
        plan = self.plan
        if tg not in plan.training:
            source = _nearest(tg, list(plan.training))
            plan.costed_from[str(tg)] = str(source)
        training = plan.training[tg if tg in plan.training else source]
        if eg not in plan.evaluation:
            near = _nearest(eg, list(plan.evaluation))
            plan.costed_from[str(eg)] = str(near)
        fit = plan.evaluation[eg if eg in plan.evaluation else near]
        return trial_cost(
            # The decoder test's steps as training steps, once per arm: an upper bound (the
            # decoder arm has no encoder backward, the encoder arm no decoder update).
            trial.train.steps
            + trial.evaluation.decoder_test_steps * len(trial.evaluation.decoder_test_arms),
            tg.batch_size,
            training.step,
            training.encode,
            training.recon,
            trial.evaluation.num_eval_images,
            fit.fit,
            fit.images,
            fit.probes,
        )
