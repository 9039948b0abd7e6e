"""Where a trial's probes fit, and the data they fit on: each transfer scenario's training
and test draws and their codes, fixed by `evaluation.seed` alone.

No Ray and no MLflow: `raystudy.scoring` scores every probe on these sets, and benchmarks
(bench/probe_equivalence.py) refit probes on exactly the sets a trial's probes saw.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch

from raystudy.data import Scenario, Split
from raystudy.spec import EvaluationConfig


def nonfinite(codes: np.ndarray) -> str | None:
    """What is wrong with codes that hold NaN or inf (None when all are finite)."""
    bad = ~np.isfinite(codes)
    if not bad.any():
        return None
    rows = int(bad.any(axis=1).sum())
    dims = np.flatnonzero(bad.any(axis=0)).tolist()
    return f"codes of {rows} of {len(codes)} images are NaN or inf (dimension(s) {dims})"


def scoring_device(setting: str, device: torch.device) -> str:
    """Where the probes fit (`evaluation.device`): "auto" is the trial's own device, "cuda"
    needs the trial to hold a GPU."""
    if setting == "cpu":
        return "cpu"
    if setting == "cuda" and device.type != "cuda":
        raise RuntimeError(
            "evaluation.device is cuda but this trial holds no GPU (torch sees "
            f"{torch.cuda.device_count()}): give the study resources.gpu > 0 on a cluster "
            "with GPUs, or set evaluation.device to auto or cpu"
        )
    return str(device) if device.type == "cuda" else "cpu"


@dataclass(frozen=True)
class ProbeSet:
    """One transfer scenario's probe data: the factor indices and codes a probe trains on and
    is tested on (`invalid` says what is wrong when the codes are not finite)."""

    name: str
    scenario: Scenario
    train_idx: np.ndarray
    z_train: np.ndarray
    test_idx: np.ndarray
    z_test: np.ndarray
    invalid: str | None


def probe_sets(
    split: Split,
    evaluation: EvaluationConfig,
    codes: Callable[[np.ndarray, str], np.ndarray],
    say: Callable[[str], None] = lambda message: None,
    asking: str = "",
) -> Iterator[ProbeSet]:
    """Every scenario's probe data on the draws `evaluation.seed` fixes (`codes` maps factor
    indices and a domain to codes): what every probe of a trial fits and is scored on."""
    ev = evaluation
    for i, (scenario_name, scenario) in enumerate(split.scenarios.items()):
        say(f"probes {asking} on scenario {scenario_name} ({i + 1}/{len(split.scenarios)})")
        rng = np.random.default_rng([ev.seed, 3, i])
        train_idx = split.sample(f"{scenario_name}/train", ev.probe_train, rng)
        test_idx = split.sample(f"{scenario_name}/test", ev.probe_test, rng)
        train_domain, test_domain = scenario.probe_domains
        z_train = codes(train_idx, train_domain)
        z_test = codes(test_idx, test_domain)
        wrong = nonfinite(z_train) or nonfinite(z_test)
        yield ProbeSet(scenario_name, scenario, train_idx, z_train, test_idx, z_test, wrong)
