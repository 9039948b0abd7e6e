"""The metric-key contract: every key a trial reports to MLflow and Tune, in one place.

A trial builds these keys (`raystudy.scoring`, the training loops, the stacked trial), the
spec's checks predict them (`raystudy.metrics.reported`, for `search.metric`) and the analysis
and Tune-state readers parse them (`raystudy.analysis.core.columns`, `raystudy.tune.state`):

- ``train/<term>``: a training loss term, at each report step;
- ``eval/<score>`` and ``eval/<score>_heldout``: unsupervised scores of held-out images, and of
  combinations never trained on (Montero et al. 2021); ``eval/recon_decoder_test[_heldout]``
  and ``eval/recon_encoder_test[_heldout]`` the same NLL after the decoder test's two arms
  (Montero et al. 2022);
- ``dis/<score>``: disentanglement; ``down/<score>``: in-distribution downstream accuracy;
- ``transfer/<scenario>/<probe>/<score>[/<factor>]``: OOD transfer of a probe;
- ``stack/<s>/<key>``: model s's own value in a stacked trial's Tune report;
- ``system/<name>``: MLflow's system metrics of the machine a trial ran on (CPU, memory, GPU),
  in MLflow only, never in Tune's reports or the results' namespaces;
- ``study/<name>``: what the study driver logs on the study's parent run when the study ends;
- ``time/<phase>/wall_s`` and ``time/<phase>/cpu_s``: where a trial's time went
  (`raystudy.phases`), logged once with its final scores, in MLflow only.

A key is typed nowhere else: `tests/test_contracts.py` fails on a string that starts with one
of these namespaces outside this module.

This module imports nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

TRAIN = "train/"
EVAL = "eval/"
DIS = "dis/"
DOWN = "down/"
TRANSFER = "transfer/"
#: Wall and CPU seconds of a trial's phases (`raystudy.phases`): MLflow only.
TIME = "time/"
#: The namespaces of the scores a trial reports once, after training.
FINAL_PREFIXES = (EVAL, DIS, DOWN, TRANSFER)
#: Suffix of an `eval/` score measured on combinations the model never trained on.
HELDOUT_SUFFIX = "_heldout"
#: The `eval/` score of Montero et al. (2022)'s decoder test (`evaluation.decoder_test_steps`):
#: the reconstruction NLL after the decoder was trained again on the frozen encoder's codes,
#: `eval/recon_decoder_test` and on held-out combinations `eval/recon_decoder_test_heldout`.
DECODER_TEST = "recon_decoder_test"
#: The same NLL after the decoder test's other arm (`evaluation.decoder_test_arms: [encoder]`):
#: the decoder frozen and the encoder trained again.
ENCODER_TEST = "recon_encoder_test"
#: Each arm of the decoder test and the `eval/` score it reports.
DECODER_TEST_ARMS = {"decoder": DECODER_TEST, "encoder": ENCODER_TEST}

#: MLflow's prefix for system metrics (its UI's "System metrics" tab shows these keys).
SYSTEM = "system/"

#: Reported with the final metrics. ("done" would be Tune's reserved stop key.)
EVALUATED = "evaluated"
#: Prefix of a model's own values in a stacked trial's Tune reports: ``stack/<s>/<metric>``.
STACK_KEYS = "stack/"
#: Under ``stack/<s>/`` in every report from the one at which model s diverged: that step.
DIVERGED_KEY = "diverged_at_step"

#: The study's parent run: its trial counts by outcome and its wall time, logged once by the
#: driver when the study ends (`raystudy.study.outcome`).
STUDY = "study/"
STUDY_FINISHED = STUDY + "trials_finished"
#: Trials the scheduler (ASHA) stopped before their final scores.
STUDY_STOPPED = STUDY + "trials_stopped"
STUDY_WALL_S = STUDY + "wall_s"
#: Every namespace a key of this contract starts with.
NAMESPACES = (TRAIN, EVAL, DIS, DOWN, TRANSFER, SYSTEM, STACK_KEYS, STUDY, TIME)


def train_key(term: str) -> str:
    """`recon` -> `train/recon`."""
    return TRAIN + term


def eval_key(score: str, heldout: bool = False) -> str:
    """`elbo` -> `eval/elbo`; on held-out combinations `eval/elbo_heldout`."""
    return EVAL + score + (HELDOUT_SUFFIX if heldout else "")


def metric_key(namespace: str, score: str) -> str:
    """A metric's score under its namespace (`dis` or `down`): `dis/dci_d`."""
    return f"{namespace}/{score}"


def transfer_key(scenario: str, probe: str, score: str, factor: str | None = None) -> str:
    """`transfer/<scenario>/<probe>/<score>`, per factor with `/<factor>`."""
    head = f"{TRANSFER}{scenario}/{probe}/{score}"
    return head if factor is None else f"{head}/{factor}"


def system_key(name: str) -> str:
    """MLflow's name for a system metric: `cpu_utilization_percentage` -> `system/...`."""
    return SYSTEM + name


def time_key(phase: str, measure: str) -> str:
    """Phase `train`'s wall seconds: `time/train/wall_s` (`raystudy.phases`)."""
    return f"{TIME}{phase}/{measure}"


def stack_key(s: int, key: str) -> str:
    """Model s's own `key` in a stacked trial's report: `stack/<s>/<key>`."""
    return f"{STACK_KEYS}{s}/{key}"


@dataclass(frozen=True)
class TransferKey:
    """The parts of a `transfer/<scenario>/<probe>/<score>[/<factor>]` key."""

    scenario: str
    probe: str
    score: str
    factor: str | None = None


def parse_transfer(key: str) -> TransferKey | None:
    """The parts of a transfer key (`transfer_key`'s inverse); None for any other key."""
    parts = key.split("/")
    if parts[0] + "/" != TRANSFER or len(parts) not in (4, 5):
        return None
    return TransferKey(*parts[1:4], parts[4] if len(parts) == 5 else None)
