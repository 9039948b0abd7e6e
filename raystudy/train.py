"""The training loop: model + dataset + split + config -> trained model and its history.

Images are rendered per step on the training device from factor indices sampled inside the
split's encoder set, so the model only ever sees the combinations the split allows. Knows
neither Ray nor MLflow: progress and checkpoints leave through the callbacks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from raystudy.data import GroundTruthDataset, Split
from raystudy.models import VAE, Batch, Objective, add_input_noise
from raystudy.spec import TrainConfig

#: (step, train/* metrics or None, checkpoint state or None); called when either is due.
ProgressFn = Callable[[int, dict[str, float] | None, dict[str, Any] | None], None]


class TrainingDiverged(RuntimeError):
    def __init__(self, step: int, loss: float) -> None:
        self.step = step
        self.loss = loss
        super().__init__(f"training diverged at step {step}: loss is {loss}")


def kl_warmup(step: int, warmup_steps: int) -> float:
    """Linear KL warm-up: the KL weight grows from 0 to 1 over `warmup_steps` steps."""
    return 1.0 if warmup_steps <= 0 else min(1.0, step / warmup_steps)


class BatchSampler:
    """Draws a training batch: factor indices from the encoder set, rendered on `device`."""

    def __init__(
        self,
        dataset: GroundTruthDataset,
        split: Split,
        batch_size: int,
        pairs: bool,
        input_noise: bool,
        device: torch.device,
        rng: np.random.Generator,
    ) -> None:
        self.dataset, self.split = dataset, split
        self.batch_size, self.pairs, self.input_noise = batch_size, pairs, input_noise
        self.device, self.rng = device, rng

    def _images(self, indices: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        clean = self.dataset.render(torch.from_numpy(indices).to(self.device))
        noisy = add_input_noise(clean) if self.input_noise else clean
        return noisy, clean

    def __call__(self) -> Batch:
        if not self.pairs:
            return Batch(*self._images(self.split.sample("encoder", self.batch_size, self.rng)))
        first, second = self.split.sample_pairs("encoder", self.batch_size, 1, self.rng)
        # One render call for both halves: rendering cost is per call as much as per image.
        inputs, targets = self._images(np.concatenate([first, second]))
        n = self.batch_size
        return Batch(inputs[:n], targets[:n], inputs[n:], targets[n:])


def train(
    model: VAE,
    objective: Objective,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrainConfig,
    *,
    seed: int,
    device: torch.device,
    on_progress: ProgressFn | None = None,
    resume_from: dict[str, Any] | None = None,
) -> list[dict[str, float]]:
    """Train `model` in place for `config.steps` steps; returns the reported history.

    `on_progress` gets the train/* means every `report_every` steps and a resumable state every
    `checkpoint_every` steps (and both at the last step). With `resume_from` (such a state)
    training continues from that step with the same parameters, optimiser moments and random
    streams.
    """
    model.to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    history: list[dict[str, float]] = []
    step = 0
    if resume_from is not None:
        model.load_state_dict(resume_from["model"])
        optimizer.load_state_dict(resume_from["optimizer"])
        rng.bit_generator.state = resume_from["np_rng"]
        torch.set_rng_state(resume_from["torch_rng"])
        history = list(resume_from["history"])
        step = int(resume_from["step"])

    sampler = BatchSampler(
        dataset, split, config.batch_size, objective.pairs, config.input_noise, device, rng
    )
    sums = torch.zeros(3, device=device)  # loss, recon, kl since the last report
    count = 0
    while step < config.steps:
        batch = sampler()
        terms = objective(model, batch, kl_weight=kl_warmup(step, config.kl_warmup_steps))
        optimizer.zero_grad(set_to_none=True)
        terms.loss.backward()
        if config.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        step += 1
        # Accumulate on the device: a .item() per step would synchronise a GPU every step.
        sums += torch.stack([terms.loss.detach(), terms.recon.detach(), terms.kl.detach()])
        count += 1
        row: dict[str, float] | None = None
        state: dict[str, Any] | None = None
        if step % config.report_every == 0 or step == config.steps:
            loss, recon, kl = (sums / count).tolist()
            if not math.isfinite(loss):
                raise TrainingDiverged(step, loss)
            row = {"train/loss": loss, "train/recon": recon, "train/kl": kl}
            history.append({"step": float(step), **row})
            sums.zero_()
            count = 0
        if step % config.checkpoint_every == 0 or step == config.steps:
            state = {
                "step": step,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "np_rng": rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(),
                "history": history,
            }
        if on_progress is not None and (row is not None or state is not None):
            on_progress(step, row, state)
    model.eval()
    return history
