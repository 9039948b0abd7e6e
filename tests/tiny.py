"""A study small enough for tests: seconds per trial on one CPU core."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from raystudy.data import GroundTruthDataset, Split
    from raystudy.models import VAE
    from raystudy.spec import TrialConfig

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "search_spaces" / "smoke.yaml"

TINY = [
    "train.steps=8",
    "train.batch_size=8",
    "train.report_every=4",
    "train.checkpoint_every=4",
    "evaluation.num_train=120",
    "evaluation.num_test=60",
    "evaluation.probe_train=80",
    "evaluation.probe_test=40",
    "evaluation.num_eval_images=32",
    "evaluation.probes=[gbt]",
    "model.latent_dim=4",
    # Studies in tests are about running trials; logging their models (a torch.export per
    # trial, seconds for each new Ray worker) is tested in test_logged_models.py.
    "execution.log_models=false",
]


#: For tests about running studies, not scoring them: MIG costs milliseconds, DCI seconds.
LIGHT = "evaluation.metrics=[mig]"


def tiny(name: str, *extra: str) -> list[str]:
    """Overrides of the smoke spec for a tiny study named `name`."""
    return [f"name={name}", *TINY, *extra]


def trained(config: TrialConfig) -> tuple[VAE, GroundTruthDataset, Split]:
    """A model of `config`, trained its steps on CPU in this process, with its dataset and
    split: what a trial scores."""
    import torch

    from raystudy.scoring import build_split
    from raystudy.training.loop import train
    from raystudy.trials.finish import build_models

    device = torch.device("cpu")
    built = build_models([config], device)
    assert built.dataset is not None, built.error
    model, dataset = built.models[0], built.dataset
    split = build_split(config, dataset)
    train(model, built.objectives[0], dataset, split, config.train, seed=0, device=device)
    return model, dataset, split
