"""S models that differ only in their seed (and loss weights), trained as one batched model.

A small 64x64 VAE leaves a GPU (or a CPU core's vector units) mostly idle; S of them trained
together fill it. Model s of a stack is the model a lone `raystudy.training.loop.train` with seed
``seeds[s]`` trains, within float tolerance:

- its initial weights are built after ``torch.manual_seed(seeds[s])``, as a lone trial builds
  them (the caller does this, see `raystudy.trials.stacked`);
- its batch indices come from its own ``numpy.random.default_rng(seeds[s])``, its input noise
  and posterior noise from its own ``torch.Generator`` seeded with ``seeds[s]``, drawn in the
  order a lone run draws them from torch's global generator (input noise, then each
  ``reparameterize`` of the forward pass, replayed through `raystudy.models.vae.noise_tape`);
- the S losses are computed in one pass with ``torch.func.vmap`` over the parameters stacked
  by ``torch.func.stack_module_state``, and their sum is minimised with one Adam: the sum's
  gradient with respect to model s's slice is model s's own gradient, and Adam (like the
  per-model gradient clipping here) is elementwise, so one stacked step is S separate steps.

The models may also differ in the objective's `loss_weights` (beta, say: `execution.stack_over`):
each model's loss then uses its own value, a float per model in "loop" batching and one tensor
of per-model values under vmap. All S batches are rendered in one call. Objectives with their
own networks (FactorVAE's discriminator) are not stackable (`Objective.stackable`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np
import torch
from torch import Tensor, nn
from torch.func import functional_call, stack_module_state, vmap

from raystudy.data import GroundTruthDataset, Split
from raystudy.models import VAE, Batch, Objective, add_input_noise
from raystudy.models.vae import noise_tape
from raystudy.phases import phase
from raystudy.spec import TrainConfig
from raystudy.training.loop import BatchSampler, kl_warmup, set_learning_rate
from raystudy.training.report import ReportWindow, checkpoint_due, report_due

#: (step, per-model train/* rows or None, checkpoint state or None, diverged models so far:
#: index -> (step, loss)). A model's row is None once it has diverged.
StackedProgressFn = Callable[
    [
        int,
        list[dict[str, float] | None] | None,
        dict[str, Any] | None,
        dict[int, tuple[int, float]],
    ],
    None,
]

#: How the S forward passes of a step run (see `train_stacked`).
Batching = Literal["auto", "vmap", "loop"]


def check_stackable(objective: Objective) -> None:
    if not objective.stackable:
        raise ValueError(
            f"{type(objective).__name__} cannot train as a stack of seeds "
            f"({objective.unstackable_because}); use seeds_per_trial: 1"
        )


class _ObjectiveLoss(nn.Module):
    """The objective's loss as a module, so `functional_call` can swap in one model's slice."""

    def __init__(self, model: VAE, objective: Objective) -> None:
        super().__init__()
        self.model = model
        self.objective = objective

    def forward(
        self,
        tensors: dict[str, torch.Tensor],
        step: int,
        kl_weight: float,
        weights: dict[str, Any],
    ) -> tuple[torch.Tensor, torch.Tensor]:
        objective = self.objective.with_weights(**weights) if weights else self.objective
        terms = objective(self.model, Batch(**tensors), step=step, kl_weight=kl_weight)
        return terms.loss, torch.stack(list(terms.scalars().values()))


def stack_weights(objectives: list[Objective]) -> dict[str, list[float]]:
    """The loss weights in which the objectives of a stack differ, one value per model.

    Everything else must be equal: models of one stack share one batched pass, so they may
    differ only in what enters the loss as a plain factor (`Objective.loss_weights`).
    """
    first = objectives[0]
    varying: dict[str, list[float]] = {}
    for name in first.hyperparameters:
        values = [getattr(o, name) for o in objectives]
        if all(v == values[0] for v in values):
            continue
        if name not in first.loss_weights:
            allowed = ", ".join(first.loss_weights) or "nothing but the seed"
            raise ValueError(
                f"the models of a stack differ in {name} ({sorted(set(map(str, values)))}); "
                f"within a stack {type(first).__name__} can vary {allowed}"
            )
        varying[name] = [float(v) for v in values]
    return varying


class _StepInputs(NamedTuple):
    """What one step hands the S models' loss: each field holds every model's value along its
    first dimension (the loss weights may be lists of floats), which vmap slices for each model
    (a NamedTuple is one of its pytrees) and `model` slices by hand."""

    params: dict[str, Tensor]
    buffers: dict[str, Tensor]
    tensors: dict[str, Tensor]
    draws: list[Tensor]
    weights: dict[str, Any]

    def model(self, s: int) -> _StepInputs:
        """Model `s`'s slice of every field."""
        return _StepInputs(
            {k: v[s] for k, v in self.params.items()},
            {k: v[s] for k, v in self.buffers.items()},
            {k: v[s] for k, v in self.tensors.items()},
            [d[s] for d in self.draws],
            {k: v[s] for k, v in self.weights.items()},
        )


@dataclass
class StackedResult:
    """Per model: its reported history, and the (step, loss) at which it diverged, if it did."""

    histories: list[list[dict[str, float]]]
    diverged: dict[int, tuple[int, float]] = field(default_factory=dict)


class _StackedSampler:
    """S samplers' batches, rendered in one call, noised each from its own generator."""

    def __init__(
        self, samplers: list[BatchSampler], generators: list[torch.Generator], input_noise: bool
    ) -> None:
        self.samplers, self.generators, self.input_noise = samplers, generators, input_noise

    def __call__(self) -> dict[str, torch.Tensor]:
        with phase("render"):
            return self._draw()

    def _draw(self) -> dict[str, torch.Tensor]:
        first = self.samplers[0]
        drawn = [s.draw() for s in self.samplers]
        n = drawn[0][0].shape[0]
        idx = torch.from_numpy(np.concatenate([d[0] for d in drawn])).to(first.device)
        clean = first.dataset.render(idx).unflatten(0, (len(drawn), n))
        factors = (idx.float() * first.scale).unflatten(0, (len(drawn), n))
        if self.input_noise:
            noisy = torch.stack(
                [
                    add_input_noise(clean[s], *first.noise_sd, generator=g)
                    for s, g in enumerate(self.generators)
                ]
            )
        else:
            noisy = clean
        actions = [d[1] for d in drawn]
        action = None
        if actions[0] is not None:
            action = torch.from_numpy(np.stack(actions)).to(first.device)
        return first.fields(noisy, clean, factors, action, dim=1)


def _clip_per_model(grads: list[torch.Tensor], max_norm: float) -> None:
    """`clip_grad_norm_` applied to each model's slice separately (its own global norm)."""
    norms = torch.stack([g.flatten(1).pow(2).sum(dim=1) for g in grads]).sum(dim=0).sqrt()
    coef = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(coef.view(-1, *([1] * (g.dim() - 1))))


def train_stacked(
    models: list[VAE],
    objective: Objective | list[Objective],
    dataset: GroundTruthDataset,
    split: Split,
    config: TrainConfig,
    *,
    seeds: list[int],
    device: torch.device,
    on_progress: StackedProgressFn | None = None,
    resume_from: dict[str, Any] | None = None,
    batching: Batching = "auto",
) -> StackedResult:
    """Train `models` (one per seed, same architecture) in place as one batched model.

    `objective` is shared, or one per model (the same objective, differing at most in its
    `loss_weights`; see `stack_weights`).

    Reports, checkpoints and resumes as `raystudy.training.loop.train` does, per model. A model
    whose mean loss turns non-finite is recorded in `StackedResult.diverged` and gets no
    further rows; the others train on unaffected (their slices never mix). Raises
    `TrainingDiverged` only when every model has diverged.

    `batching` is how the S forward passes run: "vmap", one pass over the stacked parameters
    (convolutions become grouped convolutions: what fills a GPU), or "loop", model by model
    over slices of the stacked parameters (on a CPU, grouped convolutions of these sizes are
    up to 2x slower than S plain ones, so the saving there is the shared rendering, optimiser
    step and bookkeeping); "auto" picks vmap on CUDA and loop elsewhere, or loop wherever the
    training reaches the objective's `unbatchable_from` (CascadeVAE's discrete code), which
    vmap refuses. Both give each model its lone-run result within float tolerance.
    """
    from raystudy.training.loop import TrainingDiverged

    objectives = objective if isinstance(objective, list) else [objective] * len(models)
    objective = objectives[0]
    check_stackable(objective)
    if len(models) != len(seeds) or len(objectives) != len(models) or not models:
        raise ValueError(
            f"{len(models)} models, {len(objectives)} objectives and {len(seeds)} seeds"
        )
    if any(type(o) is not type(objective) for o in objectives):
        raise ValueError(
            "the models of a stack train one objective, got "
            + ", ".join(sorted({type(o).__name__ for o in objectives}))
        )
    weights = stack_weights(objectives)
    size = len(models)
    for m in models:
        m.to(device).train()
    objective.setup(models[0], device)
    params, buffers = stack_module_state(models)  # type: ignore[arg-type]
    params = {f"model.{k}": v for k, v in params.items()}
    buffers = {f"model.{k}": v for k, v in buffers.items()}
    template = _ObjectiveLoss(copy.deepcopy(models[0]).to("meta"), objective)
    optimizer = torch.optim.Adam(list(params.values()), lr=config.lr)
    rngs = [np.random.default_rng(s) for s in seeds]
    gens = [torch.Generator(device=device).manual_seed(s) for s in seeds]
    histories: list[list[dict[str, float]]] = [[] for _ in range(size)]
    diverged: dict[int, tuple[int, float]] = {}
    step = 0
    if resume_from is not None:
        with torch.no_grad():
            for k, v in resume_from["params"].items():
                params[k].copy_(v)
            for k, v in resume_from["buffers"].items():
                buffers[k].copy_(v)
        optimizer.load_state_dict(resume_from["optimizer"])
        for rng, state in zip(rngs, resume_from["np_rng"], strict=True):
            rng.bit_generator.state = state
        for gen, state in zip(gens, resume_from["torch_rng"], strict=True):
            gen.set_state(state)
        histories = [list(h) for h in resume_from["histories"]]
        diverged = {int(s): (int(st), float(loss)) for s, st, loss in resume_from["diverged"]}
        step = int(resume_from["step"])

    samplers = [
        BatchSampler.for_training(dataset, split, config, objective, device, rng) for rng in rngs
    ]
    sample = _StackedSampler(samplers, gens, config.input_noise)
    # Which posterior draws one forward pass makes (count and shapes): a dry run of model 0 on
    # a batch of the right shape, from a throwaway stream, so that no model's stream moves.
    probe = copy.copy(samplers[0])
    probe.rng, probe.input_noise = np.random.default_rng(0), False
    probe_batch = probe()
    with torch.no_grad(), noise_tape(None) as recorded:
        terms = objective(models[0], probe_batch, step=0, kl_weight=1.0)
    draw_shapes, names = recorded.shapes, list(terms.scalars())

    def one_model(inputs: _StepInputs, step: int, kl_weight: float) -> tuple[Tensor, Tensor]:
        with noise_tape(inputs.draws):
            return functional_call(
                template,
                (inputs.params, inputs.buffers),
                (inputs.tensors, step, kl_weight, inputs.weights),
            )

    unbatchable = objective.unbatchable_from < config.steps
    if batching == "auto":
        batching = "vmap" if device.type == "cuda" and not unbatchable else "loop"
    elif batching == "vmap" and unbatchable:
        raise ValueError(
            f"{type(objective).__name__} leaves torch for a host-side solver from step "
            f"{int(objective.unbatchable_from)} on, which vmap cannot batch; train this stack "
            f'with batching="loop" (or "auto"), or end training before that step'
        )
    per_model_weights: dict[str, Any]
    if batching == "vmap":
        batched = vmap(one_model, in_dims=(0, None, None), randomness="error")
        per_model_weights = {
            k: torch.tensor(v, dtype=torch.get_default_dtype(), device=device)
            for k, v in weights.items()
        }
    elif batching == "loop":
        # Python floats, as a lone model's objective holds them.
        per_model_weights = weights

        def batched(inputs: _StepInputs, step: int, kl_weight: float) -> tuple[Tensor, Tensor]:
            outs = [one_model(inputs.model(s), step, kl_weight) for s in range(size)]
            return torch.stack([o[0] for o in outs]), torch.stack([o[1] for o in outs])

    else:
        raise ValueError(f"batching must be auto, vmap or loop, got {batching!r}")
    window = ReportWindow(size, device, histories, diverged)
    histories, diverged = window.histories, window.diverged
    while step < config.steps:
        tensors = sample()
        # Each model's posterior noise follows its input noise in its own stream, as in a
        # lone run (`sample` drew the input noise): per model, in the order of the forward.
        per_model = [
            [torch.randn(shape, generator=g, device=device) for shape in draw_shapes] for g in gens
        ]
        draws = [torch.stack([d[i] for d in per_model]) for i in range(len(draw_shapes))]
        losses, scalars = batched(
            _StepInputs(params, buffers, tensors, draws, per_model_weights),
            step,
            kl_warmup(step, config.kl_warmup_steps),
        )
        optimizer.zero_grad(set_to_none=True)
        losses.sum().backward()
        if config.grad_clip is not None:
            _clip_per_model(
                [p.grad for p in params.values() if p.grad is not None], config.grad_clip
            )
        set_learning_rate(optimizer, step, config)
        optimizer.step()
        step += 1
        window.add(dict(zip(names, scalars.T, strict=True)))
        rows: list[dict[str, float] | None] | None = None
        state: dict[str, Any] | None = None
        if report_due(step, config):
            rows = window.close(step)
        if checkpoint_due(step, config):
            state = {
                "step": step,
                "params": {k: v.detach() for k, v in params.items()},
                "buffers": dict(buffers),
                "optimizer": optimizer.state_dict(),
                "np_rng": [r.bit_generator.state for r in rngs],
                "torch_rng": [g.get_state() for g in gens],
                "histories": histories,
                "diverged": [[s, st, loss] for s, (st, loss) in diverged.items()],
            }
        if on_progress is not None and (rows is not None or state is not None):
            on_progress(step, rows, state, diverged)
        if len(diverged) == size:
            raise TrainingDiverged(*min(diverged.values()))
    unstack(params, buffers, models)
    return StackedResult(histories, diverged)


@torch.no_grad()
def unstack(
    params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], models: list[VAE]
) -> None:
    """Copy slice s of the stacked parameters and buffers into `models[s]`, in eval mode."""
    for s, model in enumerate(models):
        state = {k.removeprefix("model."): v[s] for k, v in {**params, **buffers}.items()}
        model.load_state_dict(state)
        model.eval()
