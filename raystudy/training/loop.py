"""The training loop: model + dataset + split + config -> trained model and its history.

Images are rendered per step on the training device from factor indices sampled inside the
split's encoder set, so the model only ever sees the combinations the split allows. Knows
neither Ray nor MLflow: progress and checkpoints leave through the callbacks.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from raystudy.data import GroundTruthDataset, Split
from raystudy.data.splits.composition import TRAIN_ROLES, sample_triples
from raystudy.data.splits.pairs import categorical_columns, pairs_problem, varying_in_encoder_set
from raystudy.models import VAE, Batch, Objective, PairK, add_input_noise
from raystudy.phases import phase
from raystudy.spec import TrainConfig
from raystudy.training.report import ReportWindow, checkpoint_due, report_due

#: (step, train/* metrics or None, checkpoint state or None); called when either is due.
ProgressFn = Callable[[int, dict[str, float] | None, dict[str, Any] | None], None]


class TrainingDiverged(RuntimeError):
    def __init__(self, step: int, loss: float) -> None:
        self.step = step
        self.loss = loss
        super().__init__(f"training diverged at step {step}: loss is {loss}")

    def __reduce__(self) -> tuple[type, tuple[int, float]]:
        # Ray copies and pickles a trial's exception to report it; the default rebuilds it
        # from the message alone and fails, so Tune would record a TypeError instead.
        return type(self), (self.step, self.loss)


def kl_warmup(step: int, warmup_steps: int) -> float:
    """Linear KL warm-up: the KL weight grows from 0 to 1 over `warmup_steps` steps."""
    return 1.0 if warmup_steps <= 0 else min(1.0, step / warmup_steps)


def learning_rate(step: int, config: TrainConfig) -> float:
    """The step's learning rate: `lr` times `lr_decay` per milestone reached (a step-wise
    schedule as Dittadi et al. 2021 halve it at 150k and 300k steps); a function of the step
    alone, so a resumed run continues the schedule exactly."""
    return config.lr * config.lr_decay ** bisect.bisect_right(config.lr_milestones, step)


def set_learning_rate(optimizer: torch.optim.Optimizer, step: int, config: TrainConfig) -> None:
    if config.lr_milestones:
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, config)


def preferred_memory_format(model: torch.nn.Module, device: torch.device) -> torch.memory_format:
    """channels_last (NHWC) for a model with 2-D (transposed) convolutions on CPU, else NCHW.

    oneDNN's CPU convolutions run faster on NHWC: on this project's 2-core machine a step of
    the conv beta-VAE took ~10% less time (1 and 3 channels, 1 and 2 threads) and the resnet's
    ~12% less (`bench/RESULTS.md`, "Training loop"). A model without convolutions (mlp) only
    pays for the layout changes (~8% slower), and on GPU the gain is unmeasured, so both keep
    NCHW. The results equal NCHW training up to float rounding (tests/test_train.py), not
    bit-for-bit, which is why `train` uses it only when asked to (`train.channels_last`).
    """
    convs = (torch.nn.Conv2d, torch.nn.ConvTranspose2d)
    if device.type == "cpu" and any(isinstance(m, convs) for m in model.modules()):
        return torch.channels_last
    return torch.contiguous_format


class BatchSampler:
    """Draws a training batch: factor indices from the encoder set, rendered on `device`.

    Every batch carries the normalised factors (index / (size - 1)) of its images. With
    `pair_k` set, the batch holds pairs differing in that many factors; "random" draws k per
    pair uniformly in 1..K-1, K the number of factors that vary in the encoder set (Locatello
    et al. 2020 draw it per pair too), grouping the pairs by k for `Split.sample_pairs`;
    "laplace" draws SlowVAE's transitions at `laplace_rate` (`Split.sample_laplace_pairs`, the
    dataset's categorical factors kept). With `triples`, it holds composition triples inside
    the encoder set (`raystudy.data.splits.composition`, rendered in one call: reference, transform,
    target).
    """

    def __init__(
        self,
        dataset: GroundTruthDataset,
        split: Split,
        batch_size: int,
        pair_k: PairK | None,
        input_noise: bool,
        device: torch.device,
        rng: np.random.Generator,
        noise_sd: tuple[float, float] = (0.05, 0.1),
        memory_format: torch.memory_format = torch.contiguous_format,
        triples: bool = False,
        laplace_rate: float | None = None,
    ) -> None:
        if triples and pair_k is not None:
            raise ValueError("a batch holds pairs or composition triples, not both")
        self.triples = triples
        self.dataset, self.split = dataset, split
        self.memory_format = memory_format
        self.batch_size, self.pair_k, self.input_noise = batch_size, pair_k, input_noise
        self.noise_sd = noise_sd
        self.device, self.rng = device, rng
        sizes = torch.tensor(dataset.factors.sizes, dtype=torch.float32, device=device)
        self.scale = 1.0 / (sizes - 1.0).clamp(min=1.0)
        self.varying = varying_in_encoder_set(dataset, split)
        self.laplace_rate = laplace_rate
        self.fixed = categorical_columns(dataset)
        problem = pairs_problem(pair_k, dataset, split)
        if problem is not None:
            raise ValueError(problem)

    @classmethod
    def for_training(
        cls,
        dataset: GroundTruthDataset,
        split: Split,
        config: TrainConfig,
        objective: Objective,
        device: torch.device,
        rng: np.random.Generator,
        memory_format: torch.memory_format = torch.contiguous_format,
    ) -> BatchSampler:
        """The sampler a training run of `objective` with `config` draws its batches from: the
        pairs (`pair_k`, `laplace_rate`) or triples it trains on."""
        return cls(
            dataset,
            split,
            config.batch_size,
            objective.pair_k,
            config.input_noise,
            device,
            rng,
            noise_sd=(config.input_noise_pixel_sd, config.input_noise_grey_sd),
            memory_format=memory_format,
            triples=objective.triples,
            laplace_rate=objective.laplace_rate,
        )

    def _images(self, indices: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        idx = torch.from_numpy(indices).to(self.device)
        clean = self.dataset.render(idx).contiguous(memory_format=self.memory_format)
        noisy = add_input_noise(clean, *self.noise_sd) if self.input_noise else clean
        noisy = noisy.contiguous(memory_format=self.memory_format)  # no-op when it already is
        return noisy, clean, idx.float() * self.scale

    def _pairs(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if self.pair_k == "laplace":
            return self.split.sample_laplace_pairs(
                "encoder", n, self.laplace_rate, self.fixed, self.rng
            )
        if self.pair_k != "random":
            assert isinstance(self.pair_k, int)
            return self.split.sample_pairs("encoder", n, self.pair_k, self.rng)
        ks = self.rng.integers(1, self.varying, size=n)  # uniform in 1..K-1
        first = np.empty((n, self.dataset.factors.num_factors), dtype=np.int64)
        second = np.empty_like(first)
        for k in np.unique(ks):
            rows = np.flatnonzero(ks == k)
            first[rows], second[rows] = self.split.sample_pairs(
                "encoder", rows.size, int(k), self.rng
            )
        return first, second

    def draw(self) -> tuple[np.ndarray, np.ndarray | None]:
        """The next batch's factor indices and, for triples, its one-hot actions [B, K].

        Indices: [B, K] single images; for pairs the first images then the second ones,
        [2B, K]; for triples the references, transforms, then targets, [3B, K] (one render
        call for all: rendering costs per call as much as per image)."""
        if self.triples:
            t = sample_triples(self.split, self.batch_size, self.rng, TRAIN_ROLES)
            indices = np.concatenate([t.reference, t.transform, t.target])
            return indices, t.one_hot(self.dataset.factors.num_factors)
        if self.pair_k is None:
            return self.split.sample("encoder", self.batch_size, self.rng), None
        return np.concatenate(self._pairs(self.batch_size)), None

    def fields(
        self,
        noisy: torch.Tensor,
        clean: torch.Tensor,
        factors: torch.Tensor,
        action: torch.Tensor | None,
        dim: int = 0,
    ) -> dict[str, torch.Tensor]:
        """The `Batch` fields of a rendering of `draw`'s indices, split along `dim` (1 for
        the stacked loop's [S, rows, ...] tensors): the encoder reads the noisy images, the
        decoder's targets are clean."""

        def rows(t: torch.Tensor, part: int) -> torch.Tensor:
            return t.narrow(dim, part * self.batch_size, self.batch_size)

        if self.triples:
            assert action is not None
            return {
                "inputs": rows(noisy, 0),
                "targets": rows(clean, 2),
                "inputs2": rows(noisy, 1),
                "factors": rows(factors, 0),
                "factors2": rows(factors, 1),
                "action": action,
            }
        if self.pair_k is None:
            return {"inputs": noisy, "targets": clean, "factors": factors}
        return {
            "inputs": rows(noisy, 0),
            "targets": rows(clean, 0),
            "inputs2": rows(noisy, 1),
            "targets2": rows(clean, 1),
            "factors": rows(factors, 0),
            "factors2": rows(factors, 1),
        }

    def __call__(self) -> Batch:
        with phase("render"):
            indices, action = self.draw()
            noisy, clean, factors = self._images(indices)
            hot = None if action is None else torch.from_numpy(action).to(self.device)
            return Batch(**self.fields(noisy, clean, factors, hot))


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
    memory_format: torch.memory_format | None = None,
) -> list[dict[str, float]]:
    """Train `model` in place for `config.steps` steps; returns the reported history.

    The same loop serves every objective: per step it minimises `terms.loss` over the model's
    parameters with Adam, then lets the objective update its own networks
    (`Objective.auxiliary_step`). `on_progress` gets the train/* means (loss, recon, kl and the
    objective's extras) every `report_every` steps and a resumable state every
    `checkpoint_every` steps (and both at the last step). With `resume_from` (such a state)
    training continues from that step with the same parameters, optimiser moments (the
    objective's included) and random streams, so on CPU it ends bit-for-bit where an
    uninterrupted run does.

    Speed options: `config.channels_last` lays weights and images out channels-last while
    training where `preferred_memory_format` says it is faster (`memory_format` overrides the
    choice); `config.compile` runs the encoder and decoder under `torch.compile`. Both give
    the same results up to float rounding, and the model is handed back as it came: NCHW,
    not compiled.
    """
    layout = torch.contiguous_format if memory_format is None else memory_format
    if memory_format is None and config.channels_last:
        layout = preferred_memory_format(model, device)
    model.to(device=device, memory_format=layout).train()
    compiled = [model.encoder, model.decoder] if config.compile else []
    for module in compiled:
        module.compile()
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    objective.setup(model, device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    history: list[dict[str, float]] = []
    step = 0
    if resume_from is not None:
        model.load_state_dict(resume_from["model"])
        optimizer.load_state_dict(resume_from["optimizer"])
        objective.load_state_dict(resume_from.get("objective", {}))
        rng.bit_generator.state = resume_from["np_rng"]
        torch.set_rng_state(resume_from["torch_rng"])
        if device.type == "cuda" and resume_from.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(resume_from["cuda_rng"], device)
        history = list(resume_from["history"])
        step = int(resume_from["step"])

    sampler = BatchSampler.for_training(
        dataset, split, config, objective, device, rng, memory_format=layout
    )
    window = ReportWindow(1, device, [history])
    history = window.histories[0]
    while step < config.steps:
        batch = sampler()
        terms = objective(
            model, batch, step=step, kl_weight=kl_warmup(step, config.kl_warmup_steps)
        )
        optimizer.zero_grad(set_to_none=True)
        terms.loss.backward()
        if config.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        set_learning_rate(optimizer, step, config)
        optimizer.step()
        objective.auxiliary_step(terms)
        step += 1
        window.add(terms.scalars())
        row: dict[str, float] | None = None
        state: dict[str, Any] | None = None
        if report_due(step, config):
            [row] = window.close(step)
            if row is None:
                raise TrainingDiverged(*window.diverged[0])
        if checkpoint_due(step, config):
            state = {
                "step": step,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "objective": objective.state_dict(),
                "np_rng": rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
                "history": history,
            }
        if on_progress is not None and (row is not None or state is not None):
            on_progress(step, row, state)
    for module in compiled:
        # Evaluation runs other batch sizes under no_grad: compiled, each would compile anew.
        module._compiled_call_impl = None  # what nn.Module.compile() set
    model.to(memory_format=torch.contiguous_format).eval()
    return history
