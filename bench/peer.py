"""raystudy's training loop against disent's (PyTorch Lightning) on the same beta-VAE, per step.

    /tmp/disent-venv/bin/python -m bench.peer [--threads 1] [--rounds 8] [--steps 5] [--json PATH]

`disent` (PyPI, Dan Coleman's disentanglement framework on PyTorch Lightning) is not a
dependency of raystudy: install it into a virtual environment that sees this one's packages,
keeping torch at the pinned CPU build:

    python -m venv /tmp/disent-venv --system-site-packages
    /tmp/disent-venv/bin/pip install -c constraints.txt disent
    /tmp/disent-venv/bin/pip uninstall -y torchvision   # see below

The configuration, read off disent 0.8's source: `BetaVae` with ``recon_loss="bce"``
(`binary_cross_entropy_with_logits`, i.e. a Bernoulli likelihood on logits) and
``loss_reduction="mean_sum"`` (summed over pixels, resp. latent dimensions, averaged over the
batch: raystudy's and disentanglement_lib's reduction), ``latent_distribution="normal"``,
``kl_loss_mode="direct"`` (the closed-form KL), ``beta=1`` (with "mean_sum", disent's beta
is the paper's beta), ``optimizer="adam"`` with lr 1e-4; 10 latents, batch 64, 64x64 dSprites,
the same torch threads. Before timing, disent's `training_step` and raystudy's `beta_vae`
objective are checked to give the same loss on the same weights, batch and seed.

Four variants, alternating round by round (`bench._table.interleaved`), each timed per step
in its steady state (from the end of a round's first step to the end of its last):

- ``raystudy``: `raystudy.training.loop.train` with raystudy's conv model (disentanglement_lib's);
  it samples and renders every batch, and reports once per round
  (`bench.train_step.steady_seconds_per_step`);
- ``disent``: disent's `BetaVae` under a Lightning `Trainer`, with its own `EncoderConv64` /
  `DecoderConv64` (kernel 4 where disentanglement_lib has 2 in the encoder's last two
  convolutions: a slightly larger model), on pre-rendered batches (no data cost at all);
- ``disent, raystudy model``: the same, with raystudy's conv encoder/decoder behind disent's
  module interface: the framework difference alone, on the same model;
- ``raystudy, disent model``: raystudy's loop with disent's conv64 modules.

torchvision: disent imports it at package import (for DfcVae's VGG loss and an ImageNet
dSprites variant, neither used here), and the torchvision wheels this machine's index holds
are CUDA builds that cannot load next to the CPU torch. When `import torchvision` fails, an
empty stand-in (`_stand_in_torchvision`) is put in its place for the import to succeed; any
use of it raises.
"""

from __future__ import annotations

import argparse
import copy
import importlib.abc
import importlib.machinery
import statistics
import sys
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from bench._table import Load, interleaved, markdown, median_ratio, quartiles, record, write_json
from bench.train_step import steady_seconds_per_step
from raystudy.data import get_dataset, get_split
from raystudy.models import VAE, build_model, get_objective
from raystudy.models.conv import ConvDecoder, ConvEncoder
from raystudy.models.objectives import Batch
from raystudy.spec import TrainConfig

LATENTS = 10
BATCH = 64
LR = 1e-4
POOL = 8  # pre-rendered batches disent's loader cycles through
SETUP = """\
disent is not importable from this Python ({python}): {error}
Install it into a separate environment (it is not a raystudy dependency) and run this
script with that environment's python:
    python -m venv /tmp/disent-venv --system-site-packages
    /tmp/disent-venv/bin/pip install -c constraints.txt disent
    /tmp/disent-venv/bin/pip uninstall -y torchvision
    /tmp/disent-venv/bin/python -m bench.peer"""


class _StandIn(types.ModuleType):
    """A module whose every attribute is a class that refuses to be used."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        module = self.__name__

        class Missing:
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                raise ImportError(f"{module}.{name}: torchvision is not usable here")

        Missing.__name__ = name
        return Missing


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname == "torchvision" or fullname.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StandIn(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def _stand_in_torchvision() -> None:
    """Let `import torchvision` succeed with an empty stand-in when the real one cannot load.

    Lightning and torchmetrics are imported first, so they record torchvision as absent and
    never reach for it; only disent's module-level imports then see the stand-in.
    """
    try:
        import torchvision  # noqa: F401
    except Exception:  # the CUDA wheel's failure is a RuntimeError, not an ImportError
        for name in [m for m in sys.modules if m.split(".")[0] == "torchvision"]:
            del sys.modules[name]
        import lightning  # noqa: F401

        sys.meta_path.insert(0, _StandInFinder())


def import_disent() -> types.SimpleNamespace:
    """disent's classes used here; SystemExit with the set-up to follow when it is missing."""
    try:
        _stand_in_torchvision()
        import lightning
        from disent.frameworks.vae import BetaVae
        from disent.model import AutoEncoder, DisentDecoder, DisentEncoder
        from disent.model.ae import DecoderConv64, EncoderConv64
    except ImportError as exc:
        raise SystemExit(SETUP.format(python=sys.executable, error=exc)) from exc
    return types.SimpleNamespace(
        L=lightning,
        BetaVae=BetaVae,
        AutoEncoder=AutoEncoder,
        DisentEncoder=DisentEncoder,
        DisentDecoder=DisentDecoder,
        EncoderConv64=EncoderConv64,
        DecoderConv64=DecoderConv64,
    )


def disent_autoencoder(d: types.SimpleNamespace, model: str, channels: int) -> nn.Module:
    """disent's `AutoEncoder` around its conv64 modules ("disent") or raystudy's ("raystudy")."""
    shape = (channels, 64, 64)
    if model == "disent":
        return d.AutoEncoder(
            d.EncoderConv64(shape, z_size=LATENTS, z_multiplier=2),
            d.DecoderConv64(shape, z_size=LATENTS),
        )

    class Encoder(d.DisentEncoder):  # disent wants [mu, logvar] concatenated
        def __init__(self) -> None:
            super().__init__(shape, z_size=LATENTS, z_multiplier=2)
            self.net = ConvEncoder(channels, LATENTS)

        def encode(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cat(self.net(x), dim=1)

    class Decoder(d.DisentDecoder):
        def __init__(self) -> None:
            super().__init__(shape, z_size=LATENTS)
            self.net = ConvDecoder(channels, LATENTS)

        def decode(self, z: torch.Tensor) -> torch.Tensor:
            return self.net(z)

    return d.AutoEncoder(Encoder(), Decoder())


class _DisentAsEncoder(nn.Module):
    """disent's encoder seen as raystudy's: x -> (mu, logvar)."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = self.inner(x, chunk=True)
        return mu, logvar


def framework(d: types.SimpleNamespace, autoencoder: nn.Module) -> Any:
    cfg = d.BetaVae.cfg(
        optimizer="adam",
        optimizer_kwargs={"lr": LR},
        recon_loss="bce",
        loss_reduction="mean_sum",
        latent_distribution="normal",
        kl_loss_mode="direct",
        beta=1.0,
    )
    return d.BetaVae(model=autoencoder, cfg=cfg)


def check_same_loss(d: types.SimpleNamespace, channels: int, x: torch.Tensor) -> float:
    """disent's training_step and raystudy's beta_vae objective on one batch, same weights
    and seed: they must agree, or the configurations differ. Returns the loss."""
    torch.manual_seed(0)
    ours = build_model("conv", channels, LATENTS)
    theirs = framework(d, disent_autoencoder(d, "raystudy", channels))
    theirs._model._encoder.net.load_state_dict(ours.encoder.state_dict())
    theirs._model._decoder.net.load_state_dict(ours.decoder.state_dict())
    torch.manual_seed(1)
    a = get_objective("beta_vae", beta=1.0)(ours, Batch(x, x)).loss
    torch.manual_seed(1)
    with warnings.catch_warnings():  # self.log() without a Trainer warns, then does nothing
        warnings.simplefilter("ignore")
        b = theirs.training_step({"x_targ": (x,)}, 0)
    if not torch.allclose(a, b, rtol=1e-5):
        raise AssertionError(f"disent loss {b.item()} != raystudy loss {a.item()}")
    return float(a)


class RaystudyRunner:
    """Rounds of raystudy's loop on one model, timed from the end of the first step."""

    def __init__(self, model: VAE, dataset: Any, split: Any, steps: int) -> None:
        self.model, self.dataset, self.split = model, dataset, split
        # One report per round, at its end (a study reports every 50 steps).
        self.config = TrainConfig(steps=steps + 1, batch_size=BATCH, lr=LR, report_every=steps + 1)
        self.objective = get_objective("beta_vae", beta=1.0)

    def __call__(self) -> float:
        return steady_seconds_per_step(
            self.model, self.objective, self.dataset, self.split, self.config
        )


class DisentRunner:
    """Rounds of a Lightning `Trainer.fit` of one framework, timed like `RaystudyRunner`."""

    def __init__(self, d: types.SimpleNamespace, fw: Any, batches: list[Any], steps: int):
        self.d, self.fw, self.batches, self.steps = d, fw, batches, steps
        self.threads = torch.get_num_threads()

    def __call__(self) -> float:
        stamps: list[float] = []
        threads = self.threads

        class Stamp(self.d.L.Callback):
            def on_train_batch_end(self, *args: Any) -> None:
                stamps.append(time.perf_counter())
                if torch.get_num_threads() != threads:
                    now = torch.get_num_threads()
                    raise RuntimeError(f"torch threads changed from {threads} to {now}")

        trainer = self.d.L.Trainer(
            accelerator="cpu",
            devices=1,
            max_steps=self.steps + 1,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            num_sanity_val_steps=0,
            callbacks=[Stamp()],
        )
        loader = torch.utils.data.DataLoader(self.batches, batch_size=None, shuffle=False)
        trainer.fit(self.fw, loader)
        return (stamps[-1] - stamps[0]) / self.steps


@dataclass(frozen=True)
class Row:
    variant: str
    framework: str
    model: str
    params: int
    threads: int
    steps_per_s: float  # from the median s/step over rounds
    vs_raystudy: float  # median over rounds of (this s/step) / (raystudy s/step)
    vs_q1: float
    vs_q3: float


def measure(threads: int, rounds: int, steps: int) -> tuple[list[Row], float]:
    torch.set_num_threads(threads)
    d = import_disent()
    import logging

    logging.getLogger("lightning").setLevel(logging.ERROR)
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    warnings.filterwarnings("ignore", ".*GPU available but not used.*")

    dataset = get_dataset("dsprites")
    split = get_split("iid", dataset)
    channels = dataset.channels
    rng = np.random.default_rng(0)
    images = [
        dataset.render(torch.from_numpy(split.sample("encoder", BATCH, rng))) for _ in range(POOL)
    ]
    loss = check_same_loss(d, channels, images[0])
    batches = [{"x_targ": (x,)} for x in images]

    torch.manual_seed(0)
    ours = build_model("conv", channels, LATENTS)
    theirs_own = framework(d, disent_autoencoder(d, "disent", channels))
    theirs_ours = framework(d, disent_autoencoder(d, "raystudy", channels))
    own = theirs_own._model
    ours_theirs = VAE(
        _DisentAsEncoder(copy.deepcopy(own._encoder)), copy.deepcopy(own._decoder), 10
    )
    variants: dict[str, tuple[str, str, nn.Module, Callable[[], float]]] = {
        "raystudy": (
            "raystudy",
            "raystudy conv",
            ours,
            RaystudyRunner(ours, dataset, split, steps),
        ),
        "disent": ("disent", "disent conv64", own, DisentRunner(d, theirs_own, batches, steps)),
        "disent, raystudy model": (
            "disent",
            "raystudy conv",
            theirs_ours._model,
            DisentRunner(d, theirs_ours, batches, steps),
        ),
        "raystudy, disent model": (
            "raystudy",
            "disent conv64",
            ours_theirs,
            RaystudyRunner(ours_theirs, dataset, split, steps),
        ),
    }
    per_step = interleaved({k: v[3] for k, v in variants.items()}, rounds)
    rows = []
    for name, (fw, model, module, _) in variants.items():
        ratios = [a / b for a, b in zip(per_step[name], per_step["raystudy"], strict=True)]
        q1, q3 = quartiles(ratios)
        rows.append(
            Row(
                name,
                fw,
                model,
                sum(p.numel() for p in module.parameters()),
                threads,
                1.0 / statistics.median(per_step[name]),
                median_ratio(per_step[name], per_step["raystudy"]),
                q1,
                q3,
            )
        )
    return rows, loss


def table(rows: list[Row]) -> str:
    return markdown(
        ["variant", "loop", "model", "params", "threads", "steps/s", "s/step vs raystudy (IQR)"],
        [
            (
                r.variant,
                r.framework,
                r.model,
                f"{r.params:,}",
                r.threads,
                f"{r.steps_per_s:.2f}",
                f"{r.vs_raystudy:.3f} ({r.vs_q1:.3f}-{r.vs_q3:.3f})",
            )
            for r in rows
        ],
        right=3,
    )


def summary(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for the combined table (`python -m bench`)."""
    return [
        (
            f"peer: {r['variant']}, {r['threads']} thr",
            f"{r['steps_per_s']:.2f} steps/s, s/step x{r['vs_raystudy']:.3f} of raystudy's",
        )
        for r in payload["rows"]
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per round")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    started = Load.now()
    import_disent()  # fail early, with the set-up to follow, before anything is rendered

    rows: list[Row] = []
    for threads in args.threads:
        found, loss = measure(threads, args.rounds, args.steps)
        print(f"{threads} thread(s): same loss on one batch ({loss:.3f}); {Load.now()}")
        rows += found
    print(table(rows))
    print(f"\nstarted with {started}; ended with {Load.now()}")
    from importlib.metadata import version

    versions = {p: version(p) for p in ("disent", "lightning")}
    payload = {"rounds": args.rounds, "steps": args.steps, "versions": versions}
    write_json(args.json, record("peer", started, {**payload, "rows": [asdict(r) for r in rows]}))


if __name__ == "__main__":
    main()
