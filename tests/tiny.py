"""A study small enough for tests: seconds per trial on one CPU core."""

from __future__ import annotations

from pathlib import Path

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
