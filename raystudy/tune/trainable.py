"""What runs inside a Tune trial: the trainable (`_trainable`) turns a Tune trial's config into
the model(s) it trains and runs them with a `TuneReporter` (results and checkpoints to Tune);
`make_trainable` gives it the study's context and the resources each trial asks for."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import torch

from raystudy.spec import StudySpec, TrialConfig, deep_merge
from raystudy.trials.common import StudyContext
from raystudy.trials.single import run_trial
from raystudy.tune.checkpoints import CHECKPOINT_FILE, load_state, restore_state
from raystudy.tune.points import STACK, trial_config, trial_labels


class TuneReporter:
    """Forwards a trial's results to Tune; a state becomes a Tune checkpoint. `fallback`
    says, after `restore`, when the newest checkpoint was unreadable and an older one was
    read instead (the trial tags its run with it)."""

    def __init__(self) -> None:
        self.fallback: str | None = None

    def report(self, metrics: dict[str, float], state: dict[str, Any] | None = None) -> None:
        from ray import tune

        if state is None:
            tune.report(metrics)
            return
        with tempfile.TemporaryDirectory() as tmp:
            torch.save(state, Path(tmp) / CHECKPOINT_FILE)
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(tmp))

    def restore(self) -> dict[str, Any] | None:
        from ray import tune

        checkpoint = tune.get_checkpoint()
        if checkpoint is None:
            return None
        folder = Path(checkpoint.path)
        # On local (or shared) storage the older kept checkpoint lies beside the newest.
        if type(checkpoint.filesystem).__name__ == "LocalFileSystem" and folder.is_dir():
            state, self.fallback = restore_state(folder)
            return state
        with checkpoint.as_directory() as tmp:
            return load_state(Path(tmp))


def _trainable(
    config: dict[str, Any],
    *,
    base: dict[str, Any],
    points: list[dict[str, Any]],
    context: StudyContext,
    stacks: list[list[int]] | None = None,
    labels: list[str] | None = None,
) -> None:
    """One Tune trial: resolve its config (a fixed point, an Optuna draw, or a stack of
    points that differ only in seed, `config["stack"]` indexing `stacks`) and run it."""
    import ray
    from ray import tune

    members = stacks[config[STACK]] if STACK in config and stacks is not None else None
    config_ = trial_config(base, points, config) if members is None else None
    if context.gpu and torch.cuda.is_available():
        # Ray shares a GPU between fractional trials but does not isolate their memory: cap
        # each at its share so co-located trials cannot starve one another.
        torch.cuda.set_per_process_memory_fraction(min(1.0, context.gpu))
    tune_context = tune.get_context()
    ctx = context.trial(
        trial_id=tune_context.get_trial_id(),
        trial_name=tune_context.get_trial_name(),
        node=ray.get_runtime_context().get_node_id(),
        gpu_ids=",".join(str(g) for g in ray.get_gpu_ids()),
    )
    if config_ is not None:
        run_trial(config_, ctx, TuneReporter())
        return
    from raystudy.trials.stacked import run_seed_stack

    assert members is not None and labels is not None
    configs = [TrialConfig.model_validate(deep_merge(base, points[j])) for j in members]
    run_seed_stack(configs, ctx, TuneReporter(), [labels[j] for j in members])


def make_trainable(spec: StudySpec, context: StudyContext) -> Any:
    """The spec's trainable, with the study's context and the resources each trial asks for."""
    from ray import tune

    return tune.with_resources(
        tune.with_parameters(
            _trainable,
            base=spec.base(),
            points=spec.points(),
            context=context,
            **_stacking(spec),
        ),
        context.resources,
    )


def _stacking(spec: StudySpec) -> dict[str, Any]:
    """What a trainable needs to run stacks of seeds (nothing when seeds_per_trial is 1)."""
    if spec.execution.seeds_per_trial == 1:
        return {}
    return {"stacks": spec.stacks(), "labels": trial_labels(spec.points())}
