"""What every objective is: a per-batch loss over a VAE, with the terms it reports.

The training loop (`raystudy.training.loop`) knows only this interface:

1. ``objective.setup(model, device)`` once, after seeding: builds the objective's own networks
   and optimisers afresh (FactorVAE's discriminator); most objectives have none.
2. Per step: ``terms = objective(model, batch, step=step, kl_weight=w)``; the loop minimises
   ``terms.loss`` over the model's parameters with its own optimiser, then calls
   ``objective.auxiliary_step(terms)``, which updates the objective's own networks from
   ``terms.aux_loss``.
3. Checkpoints hold ``objective.state_dict()``; ``load_state_dict`` restores it after `setup`.

An objective may also add layers to the model itself (``decoder_head``, ``encoder_head``,
or ``latent_transform`` for a layer that combines codes): their parameters are the model's, so
they train, stack and checkpoint with it.

Class attributes tell the loop and the trial what an objective needs: ``pairs`` (pairs of
images differing in ``k`` factors, see ``pair_k``), ``code_is_factor_sized`` (the code has one
dimension per ground-truth factor, whatever ``latent_dim`` says), ``code_is_ground_truth``
(the representation *is* the normalised factors) and ``triples`` (composition triples, see
`raystudy.data.splits.composition`).

An objective's options (its hyperparameters) are declared once, with defaults, ranges and a
description each, in its nested ``Params`` model (an `ObjectiveParams`); the constructor takes
them as keyword arguments and validates them there, and ``hyperparameters`` lists them. A
study's `model` section passes each objective only its own (`objective_from_config`).
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import torch
from torch import nn

from raystudy.models.vae import VAE
from raystudy.spec import StrictConfig

#: How a pair's second image differs: in a fixed number of factors, in "random" many (uniform
#: in 1..K-1), or by SlowVAE's "laplace" transitions (`Objective.laplace_rate`).
PairK = int | Literal["random", "laplace"]


@dataclass
class Batch:
    """Encoder inputs (possibly noisy) and decoder targets (clean), [B, C, H, W] each.

    Weakly supervised objectives also get the second image of each pair. ``factors`` (and
    ``factors2`` for pairs) are the ground-truth factor indices normalised to [0, 1] per factor
    (index / (size - 1)), float [B, K], for the reference objectives that use them.

    Composition triples (`raystudy.data.splits.composition`): ``inputs`` are the reference images,
    ``inputs2`` the transform images, ``targets`` the images to produce, ``action`` the
    one-hot factor to change, float [B, K]; ``targets2`` stays None.
    """

    inputs: torch.Tensor
    targets: torch.Tensor
    inputs2: torch.Tensor | None = None
    targets2: torch.Tensor | None = None
    factors: torch.Tensor | None = None
    factors2: torch.Tensor | None = None
    action: torch.Tensor | None = None


@dataclass
class LossTerms:
    """`loss` is what the model's optimiser minimises; `recon` and `kl` are per-image means.

    ``extras`` holds further scalars to report (as ``train/<name>``), the same names at every
    step. ``aux_loss`` is the loss of the objective's own networks, minimised by the objective
    in :meth:`Objective.auxiliary_step`; it must not reach the model's parameters.
    """

    loss: torch.Tensor
    recon: torch.Tensor
    kl: torch.Tensor
    extras: dict[str, torch.Tensor] = field(default_factory=dict)
    aux_loss: torch.Tensor | None = None

    def scalars(self) -> dict[str, torch.Tensor]:
        """Every reported scalar, detached, in a stable order: loss, recon, kl, extras."""
        out = {"loss": self.loss, "recon": self.recon, "kl": self.kl, **self.extras}
        return {k: v.detach() for k, v in out.items()}


class ObjectiveParams(StrictConfig):
    """An objective's options: each a field with its default, range and description. An
    objective without options keeps this empty model."""


class Objective(ABC):
    #: True when the objective trains on pairs of images that differ in k factors.
    pairs: ClassVar[bool] = False
    #: The code has one dimension per ground-truth factor (gt_decoder, supervised).
    code_is_factor_sized: ClassVar[bool] = False
    #: The representation is the normalised ground-truth factors themselves (gt_decoder).
    code_is_ground_truth: ClassVar[bool] = False
    #: Several models of this objective can train as one batched model
    #: (`raystudy.training.stacked`): the loss depends only on the model and the batch, and
    #: draws randomness only through `VAE.reparameterize`. False for objectives with their own
    #: networks (FactorVAE).
    stackable: ClassVar[bool] = True
    #: The first step whose loss leaves torch for the host (CascadeVAE's matching solver
    #: reads the batch's values), which `torch.func.vmap` cannot batch: a stack whose
    #: training reaches it runs its models in "loop" batching. inf: never.
    unbatchable_from: float = math.inf
    #: Why an objective that is not `stackable` is not, for the error that refuses a stack.
    unstackable_because: ClassVar[str] = "it has networks of its own"
    #: True when the objective trains on composition triples (reference, transform, action,
    #: target) instead of single images (`raystudy.data.splits.composition`).
    triples: ClassVar[bool] = False
    #: The objective's options, their defaults and ranges: the one place they are declared.
    Params: ClassVar[type[ObjectiveParams]] = ObjectiveParams
    #: The option names (`Params`' fields), which the constructor takes as keywords.
    hyperparameters: ClassVar[tuple[str, ...]] = ()
    #: The hyperparameters that only weight a term of the loss. Models of one stack may differ
    #: in these (`execution.stack_over`): a batched pass hands each model its own value as
    #: one tensor of per-model values (`with_weights`), which a plain product accepts.
    loss_weights: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.hyperparameters = tuple(cls.Params.model_fields)

    def __init__(self, **options: Any) -> None:
        """Validate `options` against `Params` (ValueError naming the option) and keep each
        as an attribute; an option not given takes its default there."""
        unknown = sorted(set(options) - set(self.hyperparameters))
        if unknown:
            reads = ", ".join(self.hyperparameters) or "none"
            raise ValueError(
                f"{type(self).__name__} has no option {', '.join(unknown)}; it reads: {reads}"
            )
        params = self.Params.model_validate(options)
        for name in self.hyperparameters:
            setattr(self, name, getattr(params, name))

    @property
    def pair_k(self) -> PairK | None:
        """Factors changed within a pair; None for objectives that train on single images."""
        return None

    @property
    def laplace_rate(self) -> float | None:
        """The rate of "laplace" pairs' transitions (`Split.sample_laplace_pairs`); None
        draws one per pair in [1, 10]. Read only when `pair_k` is "laplace"."""
        return None

    def decoder_head(self, latent_dim: int) -> nn.Module | None:
        """A module the model puts between the code and the decoder (LieGroupVAE's exponential
        map), trained with the model; the decoder reads its ``out_features``. None by default:
        the decoder reads the code."""
        return None

    def encoder_head(self, latent_dim: int) -> nn.Module | None:
        """A module that turns the architecture's encoder output, of its ``in_features``
        features, into (mu, logvar) [B, latent_dim] each (LieGroupVAE's group features ->
        posterior MLPs); the model wraps both in a `raystudy.models.vae.HeadedEncoder`. None
        by default: the architecture's encoder gives (mu, logvar)."""
        return None

    def latent_transform(self, latent_dim: int, num_factors: int) -> nn.Module | None:
        """A module the model keeps as ``model.transform`` (the composition layer), trained,
        checkpointed and logged with it; None by default."""
        return None

    def setup(self, model: VAE, device: torch.device) -> None:  # noqa: B027 (optional hook)
        """Build the objective's own networks and optimisers afresh (none by default)."""

    def auxiliary_step(self, terms: LossTerms) -> None:  # noqa: B027 (optional hook)
        """Update the objective's own networks from ``terms.aux_loss`` (nothing by default)."""

    def state_dict(self) -> dict[str, Any]:
        """The objective's trainable state for checkpoints (empty by default)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state:
            raise ValueError(f"{type(self).__name__} has no state, got keys {sorted(state)}")

    def second_images(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """The second image of every pair, ``(inputs2, targets2)``; ValueError naming the
        objective when the batch has none (a pairs objective fed single images)."""
        if batch.inputs2 is None or batch.targets2 is None:
            raise ValueError(
                f"{type(self).__name__} trains on pairs: the batch has no second image"
            )
        return batch.inputs2, batch.targets2

    @abstractmethod
    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        """The loss of one batch.

        `step` counts the optimiser steps already taken (0 at the first batch); `kl_weight` in
        [0, 1] is the linear warm-up factor, applied to the whole regulariser (every term but
        the reconstruction).
        """

    def with_weights(self, **weights: float | torch.Tensor) -> Objective:
        """A shallow copy with some `loss_weights` replaced (floats, or a batched tensor)."""
        unknown = sorted(set(weights) - set(self.loss_weights))
        if unknown:
            raise ValueError(
                f"{type(self).__name__} cannot vary {', '.join(unknown)} within a stack; "
                f"it can vary {', '.join(self.loss_weights) or 'nothing'}"
            )
        clone = copy.copy(self)
        for name, value in weights.items():
            setattr(clone, name, value)
        return clone

    def __repr__(self) -> str:
        hp = ", ".join(f"{h}={getattr(self, h)!r}" for h in self.hyperparameters)
        return f"{type(self).__name__}({hp})"
