"""Montero et al. (NeurIPS 2022)'s decoder test: a trained model's decoder trained again with
its encoder frozen, to tell an encoder's failure on unseen combinations from a decoder's.

"Lost in Latent Space" (its code, mmrl/lost-in-latent-space: `scripts/experiments/finetune.py`
with `retrain_decoder=True`, run by `scripts/bin/run-retrain.sh`) freezes a trained model's encoder,
re-initialises its decoder's layers and trains that on the training combinations alone (a
VAE loss, Adam at 1e-4, 100 epochs as the models were trained; its option to rebalance the
training set is not modelled), then compares the reconstruction of the held-out
combinations with the end-to-end model's. Reading it: the new decoder sees only the frozen
codes of training combinations. If it renders the held-out ones much better than the
end-to-end decoder did, the codes held what was needed and the decoder had failed; if not,
the codes (the encoder) failed, or any decoder trained on these combinations alone would.
The ground-truth decoder (gt_decoder, fed the true factors, put through the same test) tells
those apart: it is how well a decoder does from perfect codes on the same budget.

`retrain_decoder` is that training: a copy of the model whose decoder starts from `decoder`
(a freshly built one re-initialises it, as the paper does; None fine-tunes the trained one)
and learns, for `steps` steps of Adam at `config.lr` on batches of `config.batch_size` clean
images of the split's encoder set, loss = mean_i -log p(x_i | z_i) (Bernoulli, summed over
pixels) with z_i ~ q(z | x_i) a sample of the frozen posterior. Samples, not the means: with the
encoder frozen the paper's loss is this term alone (the KL and any penalty on the encoder are
constants; its model samples z in training), and eval/recon, which the test's NLLs stand
beside, decodes one posterior sample too. For gt_decoder the code is the normalised true
factors, as in its training. An objective's penalties on decoder parameters (LieGroupVAE's
basis terms) are not applied: the test asks what reconstruction alone can learn. A CascadeVAE
trained past its `discrete_from` decodes each image with its best category, argmin_k
-log p(x | z, e_k) (`reconstruction_logits`), from the first step, as its evaluation does;
the paper's retraining runs the model's balanced matching instead, whose balance weight
(0.001 nats a pair) rarely changes the choice.

Knows neither Ray, MLflow nor the scoring: the trial scores the returned model with the same
images and code as eval/recon and eval/recon_heldout (`raystudy.trials.common.decoder_test_scores`).
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn

from raystudy.data import GroundTruthDataset, Split
from raystudy.models import VAE, Batch
from raystudy.models.vae import bernoulli_nll, reconstruction_logits
from raystudy.spec import TrainConfig
from raystudy.training.loop import BatchSampler, TrainingDiverged


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


def retrain_decoder(
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrainConfig,
    steps: int,
    *,
    seed: int,
    device: torch.device,
    decoder: nn.Module | None = None,
) -> tuple[VAE, list[dict[str, float]]]:
    """A copy of `model` whose decoder was trained `steps` steps on its frozen encoder's codes
    of the split's encoder set (see the module doc), and the history of that training: per
    `config.report_every` steps, `{"step", "recon"}` with recon the mean loss since the last
    report. `model` itself is not changed.

    `decoder`: the decoder to start from, of the model's decoder's shape (copied); a freshly
    built one re-initialises it, as Montero et al. (2022) do. None fine-tunes the trained one.
    Raises `TrainingDiverged` when the loss is not finite at a report.
    """
    if steps < 1:
        raise ValueError(f"decoder test: steps must be >= 1, got {steps}")
    tested = copy.deepcopy(model).to(device)
    if decoder is not None:
        tested.decoder.load_state_dict(decoder.state_dict())  # also checks it is the same shape
        # Buffers are no weights: the re-initialised decoder keeps the phase the model trained
        # in (CascadeVAE's `discrete` flag, the only decoder buffer here).
        trained = dict(model.decoder.named_buffers())
        with torch.no_grad():
            for name, buffer in tested.decoder.named_buffers():
                buffer.copy_(trained[name])
    tested.encoder.requires_grad_(False).eval()
    tested.decoder.requires_grad_(True).train()
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    # Clean inputs: the encoder is scored on clean renders, and only its codes matter here.
    sampler = BatchSampler(dataset, split, config.batch_size, None, False, device, rng)
    optimizer = torch.optim.Adam(tested.decoder.parameters(), lr=config.lr)
    history: list[dict[str, float]] = []
    total = torch.zeros((), device=device)
    count = 0
    for step in range(1, steps + 1):
        batch = sampler()
        logits = reconstruction_logits(tested, decoder_input(tested, batch), batch.targets)
        loss = bernoulli_nll(logits, batch.targets).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if config.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(tested.decoder.parameters(), config.grad_clip)
        optimizer.step()
        total += loss.detach()
        count += 1
        if step % config.report_every == 0 or step == steps:
            mean = float(total) / count
            if not math.isfinite(mean):
                raise TrainingDiverged(step, mean)
            history.append({"step": float(step), "recon": mean})
            total.zero_()
            count = 0
    tested.requires_grad_(False).eval()
    return tested, history
