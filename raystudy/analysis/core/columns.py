"""The metric-key contract (`raystudy.keys`) seen from the results table.

Columns of the table are `metrics.<name>`, `params.<dotted key>`, `tags.<tag>`. This module
says which columns play which role in the analysis, so no other module parses names.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from raystudy.keys import DECODER_TEST, DIS, DOWN, EVAL, TRANSFER, eval_key, metric_key
from raystudy.keys import parse_transfer as parse_key
from raystudy.tags import ERROR_TAG, INVALID_SCORES_TAG, RUN_NAME_TAG, column

METRIC = "metrics."
PARAM = "params."

#: The parameter that names a trial's objective (its supervision type follows from it).
OBJECTIVE = "params.model.objective"
INPUT_NOISE = "params.train.input_noise"
SPLIT = "params.split"
RUN_NAME = column(RUN_NAME_TAG)
ERROR = column(ERROR_TAG)
INVALID = column(INVALID_SCORES_TAG)

#: Unsupervised proxies a practitioner can compute without labels, and which way is better.
#: ELBO is a log-likelihood bound (higher is better); recon is a negative log-likelihood.
PROXY_DIRECTION = {eval_key("elbo"): "max", eval_key("recon"): "min"}
#: Reconstruction NLL on training combinations and on combinations never seen in training
#: (Montero et al. 2021). The held-out name is the one evaluation is expected to log; the
#: train one falls back to the plain held-out-image `eval/recon`.
TRAIN_NLL = (eval_key("recon_train"), eval_key("recon"))
HELDOUT_NLL = eval_key("recon", heldout=True)
#: The same two NLLs after Montero et al. (2022)'s decoder test (the decoder trained again on
#: the frozen encoder's codes; `evaluation.decoder_test_steps`).
DECODER_TEST_NLL = eval_key(DECODER_TEST)
DECODER_TEST_HELDOUT_NLL = eval_key(DECODER_TEST, heldout=True)
#: The composition task's target NLL (Montero et al. 2021, Sec. 2.3, Table 1) on training
#: triples and on triples whose target is held out.
COMPOSITION_NLL = eval_key("composition_nll")
COMPOSITION_HELDOUT_NLL = eval_key("composition_nll", heldout=True)
#: Montero et al. (2021) plot reconstruction against DCI's D with Lasso importances (their
#: App. A); the GBT DCI of Locatello et al. (2019) is the stand-in when a study lacks it.
LASSO_D = metric_key("dis", "dci_lasso_d")
GBT_D = metric_key("dis", "dci_d")
#: The x of rho(input noise, transfer) (Dittadi et al. 2021, Fig. 6 top row): 1 with noise.
NOISE_X = INPUT_NOISE.removeprefix("params.")


def metric(name: str) -> str:
    """`dis/dci_d` -> `metrics.dis/dci_d`."""
    return METRIC + name


def short(column: str) -> str:
    """`metrics.dis/dci_d` -> `dis/dci_d`; other columns unchanged."""
    return column.removeprefix(METRIC)


def _metrics(frame: pd.DataFrame, prefix: str) -> list[str]:
    return sorted(c for c in frame.columns if c.startswith(METRIC + prefix))


def disentanglement_columns(frame: pd.DataFrame) -> list[str]:
    """`dis/*` scores, without training-set diagnostics such as `dis/dci_i_train`."""
    return [c for c in _metrics(frame, DIS) if not c.endswith("_train")]


def unsupervised_columns(frame: pd.DataFrame) -> list[str]:
    """`eval/*` scores measured without labels (ELBO, reconstruction, KL, ...)."""
    return _metrics(frame, EVAL)


def downstream_columns(frame: pd.DataFrame) -> list[str]:
    """`down/*`: in-distribution downstream accuracy (e.g. `down/gbt10000_acc`)."""
    return _metrics(frame, DOWN)


def predictor_columns(frame: pd.DataFrame) -> list[str]:
    """What the correlations are *of*: disentanglement, unsupervised and downstream scores."""
    return disentanglement_columns(frame) + unsupervised_columns(frame) + downstream_columns(frame)


@dataclass(frozen=True)
class TransferScore:
    """One `transfer/<scenario>/<probe>/<score>` column (per-factor ones have a factor)."""

    column: str
    scenario: str
    probe: str
    score: str
    factor: str | None = None


def parse_transfer(column: str) -> TransferScore | None:
    key = parse_key(short(column))
    if key is None:
        return None
    return TransferScore(column, key.scenario, key.probe, key.score, key.factor)


def transfer_scores(
    frame: pd.DataFrame, scores: tuple[str, ...] = ("mae", "r2"), per_factor: bool = False
) -> list[TransferScore]:
    """The transfer columns of the given scores, aggregate (or per factor)."""
    out = [parse_transfer(c) for c in frame.columns if c.startswith(METRIC + TRANSFER)]
    # Grouped by score in the order asked (all MAE, then all R^2): their signs are opposite.
    return sorted(
        (t for t in out if t and t.score in scores and (t.factor is not None) == per_factor),
        key=lambda t: (scores.index(t.score), t.column),
    )


def transfer_columns(frame: pd.DataFrame, scores: tuple[str, ...] = ("mae", "r2")) -> list[str]:
    return [t.column for t in transfer_scores(frame, scores)]


def selection_direction(column: str) -> str | None:
    """'max' or 'min' when a score can select models (higher or lower is better), else None.

    KL and total correlation are not quality scores on their own, so they select nothing.
    """
    name = short(column)
    if name in PROXY_DIRECTION:
        return PROXY_DIRECTION[name]
    if name.startswith((DIS, DOWN)):
        return "max"
    return None


def first_present(frame: pd.DataFrame, names: tuple[str, ...]) -> str | None:
    """The column of the first metric in `names` the table has, or None."""
    return next((metric(n) for n in names if metric(n) in frame.columns), None)


def noise_indicator(frame: pd.DataFrame) -> pd.Series | None:
    """1.0 for a trial trained with input noise, 0.0 without, NaN where it is not recorded;
    None when the table has no `train.input_noise` or every trial has the same value.

    MLflow and Tune's storage keep params as strings ('True', 'False'); a table built in a
    notebook may hold booleans.
    """
    if INPUT_NOISE not in frame.columns:
        return None
    text = frame[INPUT_NOISE].astype(str).str.strip().str.lower()
    values = text.map({"true": 1.0, "1": 1.0, "false": 0.0, "0": 0.0}).astype("float64")
    return values if values.nunique() > 1 else None
