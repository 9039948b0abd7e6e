"""The image composition task's score (Montero et al., ICLR 2021, Sec. 2.3 and Table 1): the
negative log-likelihood of each triple's target under the model's composed output,

    nll = mean_triples sum_pixels -log Bernoulli(y | sigmoid(decoder(h))),
    h = W_r cat[z_r; a] + W_t cat[z_t; a] + b,   z ~ q(z|x) one sample per input image,

in nats per image, on training triples (``eval/composition_nll``) and on triples whose target
is held out (``eval/composition_nll_heldout``): Table 1's "NLL (training)" and "NLL
(testing)". A generator seeded by the caller draws the posterior samples, so two models are
scored on the same noise.
"""

from __future__ import annotations

import numpy as np
import torch

from raystudy.data import GroundTruthDataset
from raystudy.data.splits.composition import Triples
from raystudy.models.objectives import Batch
from raystudy.models.objectives.composition import composition_layer
from raystudy.models.vae import VAE, bernoulli_nll

#: The key `composition_nll` returns (reported as eval/composition_nll[_heldout]).
COMPOSITION_OUTPUTS = ("composition_nll",)


def triple_batch(
    dataset: GroundTruthDataset, triples: Triples, device: torch.device, chunk: int = 768
) -> Batch:
    """The images of `triples` rendered on `device` (in chunks of `chunk` images) as a clean
    `Batch`: references, targets, transforms, one-hot actions."""
    n = triples.action.size
    idx = np.concatenate([triples.reference, triples.transform, triples.target])
    images = torch.cat(
        [
            dataset.render(torch.from_numpy(idx[i : i + chunk]).to(device))
            for i in range(0, len(idx), chunk)
        ]
    )
    action = torch.from_numpy(triples.one_hot(dataset.factors.num_factors)).to(device)
    return Batch(images[:n], images[2 * n :], inputs2=images[n : 2 * n], action=action)


@torch.no_grad()
def composition_nll(
    model: VAE, batch: Batch, seed: int = 0, batch_size: int = 256
) -> dict[str, float]:
    """{"composition_nll": mean over the batch's triples of the target's NLL (module doc)}."""
    if batch.inputs2 is None or batch.action is None:
        raise ValueError("composition_nll scores triples: the batch has no transform or action")
    layer = composition_layer(model)
    generator = torch.Generator(device=batch.inputs.device).manual_seed(seed)
    total = 0.0
    n = batch.inputs.shape[0]
    for start in range(0, n, batch_size):
        rows = slice(start, start + batch_size)
        m = batch.inputs[rows].shape[0]
        mu, logvar = model.encode(torch.cat([batch.inputs[rows], batch.inputs2[rows]]))
        eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
        z = mu + eps * (0.5 * logvar).exp()
        logits = model.decode(layer(z[:m], z[m:], batch.action[rows].to(z.dtype)))
        total += float(bernoulli_nll(logits, batch.targets[rows]).sum())
    return {"composition_nll": total / n}
