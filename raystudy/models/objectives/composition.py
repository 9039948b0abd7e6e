"""CompositionNet (Montero et al., ICLR 2021, "The role of disentanglement in generalisation",
Sec. 2.3, Fig. 5b and App. A; and NeurIPS 2022, "Lost in Latent Space"): a VAE trained on the
image composition task.

Given a reference image x_r, a transform image x_t and a one-hot action a over the K factors
(`raystudy.data.splits.composition`), the one encoder codes both images, z_r ~ q(z|x_r) and
z_t ~ q(z|x_t), a composition operation combines the samples with the action into h, and the
decoder renders h as the target image y. The operation (`composition_op`, the names of the
2022 code, ``mmrl/lost-in-latent-space``, ``src/models/compnet.py``):

- ``linear`` (2021's method (iii), the one that paper reports; the default):
  h = W_r cat[z_r; a] + W_t cat[z_t; a] + b (two ``nn.Linear`` layers, the code's
  ``LinearComp``; the 2021 paper's formula omits the bias);
- ``interp``: w = sigmoid(W cat[z_r; z_t; a] + b), h = z_r * w + z_t * (1 - w) (``InterpComp``);
- ``fixint``: h = z_r * (1 - a') + z_t * a', a' the action padded with zeros to the code's
  D dimensions, so latent k < K is tied to factor k by construction; no weights; needs
  D >= K (``FixedInterpComp``).

The 2022 code also has ``MLPComp``, whose forward concatenates the 2B codes with the B
actions and so cannot run; it is left out.

The loss, per triple, averaged over the batch (Bernoulli likelihood summed over pixels, like
every objective here):

    loss = -log p(y | h) + beta * (KL(q(z|x_r) || N(0, I)) + KL(q(z|x_t) || N(0, I)))

and with ``reconstruct_inputs`` (the 2022 code's: its CompositionNet returns the
reconstructions of both inputs beside the composed image and its loss sums the three) also
+ -log p(x_r | z_r) - log p(x_t | z_t), the decoder rendering each input from its own sample.
Those targets are the encoder's inputs as given (the batch holds no clean copy of them), so
`raystudy.checks.composition` refuses the option with `train.input_noise`. The papers train it
with beta = 1 ("Using beta higher than 1 interfered with the model's ability to solve the
task"), Burgess et al.'s conv encoder and decoder and 10 latents; the 2022 code runs ``interp``
and ``fixint`` with reconstructed inputs (``scripts/bin/run-composition.sh``). Reported:
`recon` is the target's NLL (the task, with or without the inputs' terms), `kl` the sum of both
images' KLs, and with ``reconstruct_inputs`` `inputs_recon`, the two inputs' NLLs summed.

The operation is the model's layer (`VAE.transform`), so it trains, checkpoints, stacks
(`execution.seeds_per_trial`) and is logged with it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from pydantic import Field
from torch import nn

from raystudy.models.objectives.base import Batch, LossTerms, Objective, ObjectiveParams
from raystudy.models.objectives.registry import OBJECTIVES
from raystudy.models.vae import VAE, bernoulli_nll, gaussian_kl

CompositionOpName = Literal["linear", "interp", "fixint"]


class CompositionOp(nn.Module):
    """(z_r [B, D], z_t [B, D], action [B, K]) -> h [B, D]: the composition operations' type."""

    def __init__(self, latent_dim: int, num_actions: int) -> None:
        super().__init__()
        self.latent_dim, self.num_actions = latent_dim, num_actions


class LatentComposition(CompositionOp):
    """``linear``: W_r cat[z_r; a] + W_t cat[z_t; a] (+ both biases)."""

    def __init__(self, latent_dim: int, num_actions: int) -> None:
        super().__init__(latent_dim, num_actions)
        self.reference = nn.Linear(latent_dim + num_actions, latent_dim)
        self.transform = nn.Linear(latent_dim + num_actions, latent_dim)

    def forward(self, z_r: torch.Tensor, z_t: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.reference(torch.cat([z_r, action], dim=1)) + self.transform(
            torch.cat([z_t, action], dim=1)
        )


class InterpComposition(CompositionOp):
    """``interp``: a learnt per-dimension gate w = sigmoid(W cat[z_r; z_t; a] + b) mixing the
    two codes, z_r * w + z_t * (1 - w)."""

    def __init__(self, latent_dim: int, num_actions: int) -> None:
        super().__init__(latent_dim, num_actions)
        self.gate = nn.Linear(2 * latent_dim + num_actions, latent_dim)

    def forward(self, z_r: torch.Tensor, z_t: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        w = self.gate(torch.cat([z_r, z_t, action], dim=1)).sigmoid()
        return z_r * w + z_t * (1.0 - w)


class FixedInterpComposition(CompositionOp):
    """``fixint``: dimension k < K takes the transform's value when the action is factor k,
    every other dimension the reference's; no weights."""

    def __init__(self, latent_dim: int, num_actions: int) -> None:
        if latent_dim < num_actions:
            raise ValueError(
                f"composition_op 'fixint' ties one code dimension to each of the {num_actions} "
                f"factors, so it needs latent_dim >= {num_actions}, got {latent_dim}"
            )
        super().__init__(latent_dim, num_actions)

    def forward(self, z_r: torch.Tensor, z_t: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        padded = nn.functional.pad(action, (0, self.latent_dim - self.num_actions))
        return z_r * (1.0 - padded) + z_t * padded


OPERATIONS: dict[str, type[CompositionOp]] = {
    "linear": LatentComposition,
    "interp": InterpComposition,
    "fixint": FixedInterpComposition,
}


def composition_layer(model: VAE) -> CompositionOp:
    """The model's composition layer; a clear error for a model built without one."""
    if isinstance(model.transform, CompositionOp):
        return model.transform
    raise ValueError(
        "composition needs a model with its composition layer (LatentComposition or another "
        "CompositionOp); build the model with raystudy.models.build (it adds the objective's "
        "latent_transform)"
    )


def compose(
    model: VAE, batch: Batch, noise: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(target logits, mu, logvar) of a triple batch; mu and logvar stack the references'
    rows over the transforms'. `noise` False decodes the posterior means."""
    logits, mu, logvar, _ = _compose(model, batch, noise)
    return logits, mu, logvar


def _compose(
    model: VAE, batch: Batch, noise: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """`compose`'s values and the codes decoded from ([2B, D]: references, transforms)."""
    if batch.inputs2 is None or batch.action is None:
        raise ValueError(
            "composition trains on triples: the batch has no transform image or action "
            "(raystudy.data.splits.composition draws them)"
        )
    n = batch.inputs.shape[0]
    # Both images through the encoder in one call: one pass, the same shared weights.
    mu, logvar = model.encode(torch.cat([batch.inputs, batch.inputs2]))
    z = model.reparameterize(mu, logvar) if noise else mu
    h = composition_layer(model)(z[:n], z[n:], batch.action.to(z.dtype))
    return model.decode(h), mu, logvar, z


class CompositionParams(ObjectiveParams):
    beta: float = Field(1.0, ge=0.0, description="weight of the KL of both images' codes")
    composition_op: CompositionOpName = Field(
        "linear",
        description="how the two codes and the action make the target's code: linear (2021), "
        "interp or fixint (the 2022 code's CompositionNet)",
    )
    reconstruct_inputs: bool = Field(
        False,
        description="also reconstruct the reference and transform images from their own codes, "
        "as the 2022 code's loss does",
    )


@OBJECTIVES.register("composition")
class Composition(Objective):
    Params = CompositionParams
    loss_weights: ClassVar[tuple[str, ...]] = ("beta",)
    triples: ClassVar[bool] = True
    beta: float
    composition_op: CompositionOpName
    reconstruct_inputs: bool

    def latent_transform(self, latent_dim: int, num_factors: int) -> nn.Module:
        return OPERATIONS[self.composition_op](latent_dim, num_factors)

    def __call__(
        self, model: VAE, batch: Batch, *, step: int = 0, kl_weight: float = 1.0
    ) -> LossTerms:
        logits, mu, logvar, z = _compose(model, batch, noise=True)
        recon = bernoulli_nll(logits, batch.targets).mean()
        n = batch.inputs.shape[0]
        per_image = gaussian_kl(mu, logvar).sum(dim=1)
        kl = (per_image[:n] + per_image[n:]).mean()
        if not self.reconstruct_inputs:
            return LossTerms(recon + kl_weight * self.beta * kl, recon, kl)
        assert batch.inputs2 is not None  # _compose checked it
        # Each input rendered from its own sample, in one decoder pass.
        own = bernoulli_nll(model.decode(z), torch.cat([batch.inputs, batch.inputs2]))
        inputs = (own[:n] + own[n:]).mean()
        loss = recon + inputs + kl_weight * self.beta * kl
        return LossTerms(loss, recon, kl, extras={"inputs_recon": inputs})
