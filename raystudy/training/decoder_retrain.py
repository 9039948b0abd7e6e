"""Montero et al. (NeurIPS 2022)'s decoder test: one part of a trained model trained again with
the other frozen, to tell an encoder's failure on unseen combinations from a decoder's.

"Lost in Latent Space" (its code, mmrl/lost-in-latent-space: `scripts/experiments/finetune.py`,
run by `scripts/bin/run-retrain.sh`) loads a trained model and, with `retrain_decoder=True`,
freezes its encoder and re-initialises and trains its decoder; with `retrain_decoder=False`,
freezes its decoder and re-initialises and trains its encoder. Both arms train on the training
combinations alone, with the VAE loss (beta 1), Adam at 1e-4, 100 epochs, the training set
rebalanced so that every shape is as frequent (`training.rebalance_dataset=True`,
`raystudy.training.balanced`), and the models it retrains are composition-trained
(`base_model=../data/sims/composition/...`, loaded with `load_lgm_from_compnet`: the
CompositionNet's VAE, its composition layer dropped). Reading it: the decoder arm's new decoder
sees only the frozen codes of training combinations; if it renders the held-out ones much
better than the end-to-end decoder did, the codes held what was needed and the decoder had
failed; if not, the codes (the encoder) failed, or any decoder trained on these combinations
alone would. The encoder arm asks the converse: can an encoder trained on the training
combinations alone map the held-out ones where the frozen decoder renders them? The
ground-truth decoder (gt_decoder, fed the true factors) goes through the decoder arm as the
reference from perfect codes; it has no encoder for the other arm.

`retrain_arm("decoder", ...)` (the decoder arm): a copy of the model whose decoder starts from
`start` (a freshly built one re-initialises it, as the paper does; None fine-tunes the trained
one) and learns, for `steps` steps of Adam at `lr` (default `config.lr`) on batches of
`config.batch_size` clean images of the split's encoder set, loss = mean_i -log p(x_i | z_i)
(Bernoulli, summed over pixels) with z_i ~ q(z | x_i) a sample of the frozen posterior.
Samples, not the means: with the encoder frozen the paper's loss is this term alone (the KL
and any penalty on the encoder are constants; its model samples z in training), and
eval/recon, which the test's NLLs stand beside, decodes one posterior sample too. For
gt_decoder the code is the normalised true factors, as in its training.

`retrain_arm("encoder", ...)` (the encoder arm): a copy whose encoder starts from `start`
(fresh, or None to fine-tune) and learns with the decoder frozen, loss = mean_i [-log p(x_i | z_i) +
beta KL(q(z | x_i) || N(0, I))], z_i a sample (the code's `GaussianVAELoss` at its default
beta 1, whatever the model was trained with).

Both: `rebalance` draws the images with `ShapeBalancedSampler` instead of uniformly; a model
trained with a composition layer (the `composition` objective) is tested as the code's
`load_lgm_from_compnet` loads it, as the VAE the layer sat on (`single_image_model`), so its
decoder reads one image's code. What the code's re-initialisation differs in: it resets each
layer to PyTorch's default initialisation; here the part restarts from the weights the model
started training from (the trial's seed), so only the frozen trained part differs from the
model's own start. An objective's penalties on decoder parameters (LieGroupVAE's basis terms)
are not applied: the test asks what reconstruction alone can learn. A CascadeVAE trained past
its `discrete_from` decodes each image with its best category, argmin_k -log p(x | z, e_k)
(`reconstruction_logits`), from the first step, as its evaluation does; the paper's
retraining runs the model's balanced matching instead, whose balance weight (0.001 nats a
pair) rarely changes the choice.

Knows neither Ray, MLflow nor the scoring: the trial scores the returned model with the same
images and code as eval/recon and eval/recon_heldout (`raystudy.trials.decoder_arms`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from raystudy.data import GroundTruthDataset, Split
from raystudy.models import VAE, Batch
from raystudy.models.vae import bernoulli_nll, gaussian_kl, reconstruction_logits
from raystudy.spec import TrainConfig
from raystudy.spec.trial_config import DecoderTestArm
from raystudy.training.balanced import ShapeBalancedSampler
from raystudy.training.loop import BatchSampler, TrainingDiverged

#: One step's loss terms of the part being trained: {"recon": ..., "loss": ...}.
StepTerms = Callable[[VAE, Batch], dict[str, torch.Tensor]]


def decoder_input(model: VAE, batch: Batch) -> torch.Tensor:
    """The code the decoder reads in the test: a sample of the frozen posterior of the batch's
    images, or for a model whose code is the ground truth (gt_decoder) the batch's normalised
    factors. No gradient reaches the encoder."""
    if model.code_is_ground_truth:
        assert batch.factors is not None  # BatchSampler always sets them
        return batch.factors
    with torch.no_grad():
        mu, logvar = model.encode(batch.inputs)
        return model.reparameterize(mu, logvar)


def single_image_model(model: VAE) -> VAE:
    """A copy of `model` that decodes one image's code: without its composition layer, the
    VAE a composition model's layer sat on (the code's `load_lgm_from_compnet`)."""
    single = copy.deepcopy(model)
    single.transform = None
    return single


def retrain_arm(
    arm: DecoderTestArm,
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrainConfig,
    steps: int,
    start: nn.Module | None = None,
    *,
    seed: int,
    device: torch.device,
    rebalance: bool = False,
    lr: float | None = None,
    beta: float = 1.0,
) -> tuple[VAE, list[dict[str, float]]]:
    """One arm of the decoder test: a copy of `model` whose `arm` part was trained `steps`
    steps with the other part frozen (see the module doc), and the history of that training:
    per `config.report_every` steps, the means since the last report of `{"step", "recon",
    "loss"}` (and "kl" in the encoder arm). `model` itself is not changed.

    The decoder arm trains the decoder on the frozen encoder's codes of the split's encoder
    set; the encoder arm trains the encoder against the frozen decoder with the VAE loss
    (reconstruction + `beta` KL). `start`: the part to start from, of the model's part's
    shape (copied); a freshly built one re-initialises it, as Montero et al. (2022) do; None
    fine-tunes the trained one. ValueError for the encoder arm of a model whose code is the
    ground truth (gt_decoder): it has no encoder. Raises `TrainingDiverged` when the loss is
    not finite at a report.
    """
    if arm == "encoder" and model.code_is_ground_truth:
        raise ValueError(
            "the decoder test's encoder arm retrains an image encoder; this model's code is "
            "the ground-truth factors (gt_decoder), it has none"
        )
    tested = single_image_model(model).to(device)
    trained, frozen = (
        (tested.decoder, tested.encoder) if arm == "decoder" else (tested.encoder, tested.decoder)
    )
    if start is not None:
        trained.load_state_dict(start.state_dict())  # also checks it is the same shape
    if start is not None and arm == "decoder":
        # Buffers are no weights: the re-initialised decoder keeps the phase the model trained
        # in (CascadeVAE's `discrete` flag, the only decoder buffer here).
        kept = dict(model.decoder.named_buffers())
        with torch.no_grad():
            for name, buffer in tested.decoder.named_buffers():
                buffer.copy_(kept[name])

    def decoder_terms(net: VAE, batch: Batch) -> dict[str, torch.Tensor]:
        logits = reconstruction_logits(net, decoder_input(net, batch), batch.targets)
        recon = bernoulli_nll(logits, batch.targets).mean()
        return {"loss": recon, "recon": recon}

    def encoder_terms(net: VAE, batch: Batch) -> dict[str, torch.Tensor]:
        mu, logvar = net.encode(batch.inputs)
        z = net.reparameterize(mu, logvar)
        recon = bernoulli_nll(reconstruction_logits(net, z, batch.targets), batch.targets).mean()
        kl = gaussian_kl(mu, logvar).sum(dim=1).mean()
        return {"loss": recon + beta * kl, "recon": recon, "kl": kl}

    terms = decoder_terms if arm == "decoder" else encoder_terms
    return _retrain(
        tested,
        trained,
        frozen,
        terms,
        dataset,
        split,
        config,
        steps,
        seed=seed,
        device=device,
        rebalance=rebalance,
        lr=lr,
    )


def _retrain(
    tested: VAE,
    trained: nn.Module,
    frozen: nn.Module,
    terms: StepTerms,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrainConfig,
    steps: int,
    *,
    seed: int,
    device: torch.device,
    rebalance: bool,
    lr: float | None,
) -> tuple[VAE, list[dict[str, float]]]:
    """`steps` steps of Adam on `trained`'s parameters with `frozen` fixed (eval mode, no
    gradient), minimising `terms`' loss on batches of the split's encoder set."""
    if steps < 1:
        raise ValueError(f"decoder test: steps must be >= 1, got {steps}")
    frozen.requires_grad_(False).eval()
    trained.requires_grad_(True).train()
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    # Clean inputs: the encoder is scored on clean renders, and only its codes matter here.
    sampler: BatchSampler = (
        ShapeBalancedSampler(dataset, split, config.batch_size, device, rng)
        if rebalance
        else BatchSampler(dataset, split, config.batch_size, None, False, device, rng)
    )
    params = [p for p in trained.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=config.lr if lr is None else lr)
    history: list[dict[str, float]] = []
    totals: dict[str, torch.Tensor] = {}
    count = 0
    for step in range(1, steps + 1):
        step_terms = terms(tested, sampler())
        optimizer.zero_grad(set_to_none=True)
        step_terms["loss"].backward()
        if config.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
        optimizer.step()
        for name, value in step_terms.items():
            totals[name] = totals.get(name, torch.zeros((), device=device)) + value.detach()
        count += 1
        if step % config.report_every == 0 or step == steps:
            row = {name: float(total) / count for name, total in totals.items()}
            if not math.isfinite(row["loss"]):
                raise TrainingDiverged(step, row["loss"])
            history.append({"step": float(step), **row})
            totals = {}
            count = 0
    tested.requires_grad_(False).eval()
    return tested, history
