"""Dittadi et al.'s questions as Findings rows ("On the transfer of disentangled representations
in realistic settings", ICLR 2021).

Dittadi et al. (2021) ask whether weak supervision raises disentanglement (Sec. 3, Fig. 3
left), whether disentanglement goes with lower transfer error when only the probe's data shift
(OOD1, Sec. 5, Fig. 4) and when the encoder's do too (OOD2, Fig. 5), whether input noise helps
under OOD2 (Fig. 6), and whether ELBO or reconstruction track disentanglement, so they can pick
models without labels (Sec. 3, Fig. 3 right). Each question is answered here from the tables
`compute` made, never by hand: every rank correlation is read from `correlations.csv` or
`unsupervised_vs_disentanglement.csv` (not recomputed), and the one difference of means (weak
minus unsupervised disentanglement) gets a bootstrap of its own, resampling within each group.

A question the study cannot speak to (no weakly supervised trials, input noise never varied,
no OOD2-B scenario) has no row, rather than a blank one.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from raystudy.analysis.core.cells import SEPARATOR
from raystudy.analysis.core.columns import (
    GBT_D,
    NOISE_X,
    OBJECTIVE,
    PARAM,
    PROXY_DIRECTION,
    disentanglement_columns,
    metric,
    noise_indicator,
    parse_transfer,
    short,
)
from raystudy.analysis.core.groups import SUPERVISION
from raystudy.analysis.findings.rows import PAPER_ORDER, finding_row
from raystudy.analysis.findings.shared import rho_estimates, seed_count
from raystudy.analysis.stats.bootstrap import bootstrap_difference
from raystudy.analysis.stats.design import adjusted_difference, adjusted_spearman
from raystudy.analysis.stats.inference import Estimate, difference_test
from raystudy.keys import eval_key, metric_key

DITTADI = PAPER_ORDER[0]

WEAK_RAISES_DIS = "weak_supervision_raises_disentanglement"
DIS_OOD1 = "disentanglement_lowers_ood1_error"
DIS_OOD2 = "disentanglement_lowers_ood2_error"
NOISE_OOD2 = "input_noise_lowers_ood2_error"
PROXY_DIS = "proxy_tracks_disentanglement"
DIS_ACCURACY = "disentanglement_tracks_gbt_accuracy"

_CITE = "Dittadi et al. 2021"
NOISE_OOD1 = "input_noise_changes_ood1_error"
#: The claims each row tests (`raystudy.analysis.claims`): the paper's words on OOD1 are for
#: its GBT and MLP probes, on OOD2 per scenario; a row of another probe answers no claim.
_OOD1_CLAIMS = {"gbt": f"{DITTADI}.dis_ood1_gbt", "mlp": f"{DITTADI}.dis_ood1_mlp"}
_OOD2_CLAIMS = {"ood2_a": f"{DITTADI}.dis_ood2_a", "ood2_b": f"{DITTADI}.dis_ood2_b_real"}
_PROXY_CLAIMS = {
    (eval_key("elbo"), "weak"): f"{DITTADI}.proxy_elbo_weak",
    (eval_key("recon"), "weak"): f"{DITTADI}.proxy_recon_weak",
}
PAPER_OOD1_OTHER = f"its words on OOD1 are for GBT and MLP probes only ({_CITE}, Sec. 5, Fig. 4)"
PAPER_OOD2_OTHER = f"its words on OOD2 are for OOD2-A and OOD2-B only ({_CITE}, Sec. 5, Fig. 5)"
PAPER_PROXY_UNSUPERVISED = (
    f"the text states it for weakly supervised models only ({_CITE}, Sec. 3, Fig. 3 right)"
)
#: Scenario names of the `dittadi_hues` split as the papers write them.
_SCENARIO_NAMES = {"ood2_a": "OOD2-A, unseen hues", "ood2_b": "OOD2-B, real images"}


def dittadi_rows(
    frame: pd.DataFrame,
    correlations: pd.DataFrame,
    proxy_correlations: pd.DataFrame,
    *,
    n_boot: int,
    seed: int,
    min_trials: int,
) -> list[dict[str, object]]:
    """The rows (`rows.finding_row` dicts) of Dittadi et al.'s questions that the trials answer.

    `frame`: the finished trials with a `supervision` column (as `compute` analyses them);
    `correlations` and `proxy_correlations`: `transfer_correlations` and the ELBO /
    reconstruction vs disentanglement table of the same trials.
    """
    scores = _with_noise(frame)
    dis = disentanglement_metric(frame)
    if dis is None:  # every question is about a disentanglement score but the noise one
        return list(_noise_rows(correlations, scores))
    # A stand-in for DCI-D is named in each question; DCI-D itself is named by the number.
    note = "" if dis == metric(GBT_D) else f" ({short(dis)}: no {GBT_D} logged)"
    return [
        *_weak_rows(frame, dis, note, n_boot=n_boot, seed=seed, min_trials=min_trials),
        *_transfer_rows(correlations, scores, short(dis), note),
        *_noise_rows(correlations, scores),
        *_proxy_rows(proxy_correlations, scores, short(dis), note),
        *_accuracy_rows(proxy_correlations, scores),
    ]


def _with_noise(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with input noise as 0/1 under the name correlations.csv gives it."""
    noise = noise_indicator(frame)
    return frame if noise is None else frame.assign(**{NOISE_X: noise})


def _column(scores: pd.DataFrame, name: str) -> str:
    return metric(name) if metric(name) in scores.columns else name


def disentanglement_metric(frame: pd.DataFrame) -> str | None:
    """The column the questions use: DCI's D (`dis/dci_d`, the score of Dittadi et al.'s
    figures), else the first other disentanglement score the trials logged; None when none."""
    logged = [c for c in disentanglement_columns(frame) if np.isfinite(_values(frame, c)).any()]
    return metric(GBT_D) if metric(GBT_D) in logged else next(iter(logged), None)


def _values(frame: pd.DataFrame, column: str) -> NDArray[np.float64]:
    return frame[column].to_numpy(dtype=np.float64, na_value=np.nan)


def _weak_rows(
    frame: pd.DataFrame, dis: str, note: str, *, n_boot: int, seed: int, min_trials: int
) -> Iterator[dict]:
    """Weak minus unsupervised mean disentanglement, when both groups have min_trials: the
    bootstrap interval and Welch's test pooled, and the same difference with every other
    design factor held fixed (OLS)."""
    if SUPERVISION not in frame.columns:
        return
    # A score logged as +-inf is left out like a missing one, as in every other table.
    scores = _values(frame, dis)
    kinds = frame[SUPERVISION].to_numpy()
    usable = np.isin(kinds, ["weak", "unsupervised"]) & np.isfinite(scores)
    weak = scores[(kinds == "weak") & usable]
    unsupervised = scores[(kinds == "unsupervised") & usable]
    if min(weak.size, unsupervised.size) < max(min_trials, 1):
        return
    rng = np.random.default_rng([seed, zlib.crc32(WEAK_RAISES_DIS.encode())])
    value, low, high = bootstrap_difference(weak, unsupervised, n_boot=n_boot, rng=rng)
    welch = difference_test(scores[usable], kinds[usable] == "weak", np.empty((usable.sum(), 0)))
    rows = frame[usable]
    within = adjusted_difference(
        rows, dis, (kinds[usable] == "weak"), exclude=(SUPERVISION, OBJECTIVE)
    )
    yield finding_row(
        DITTADI,
        WEAK_RAISES_DIS,
        f"Does weak supervision raise disentanglement{note}?",
        "difference",
        "> 0",
        "",
        x=f"{SUPERVISION}=weak - {SUPERVISION}=unsupervised",
        y=short(dis),
        group=f"{SUPERVISION}=weak, {SUPERVISION}=unsupervised",
        pooled=Estimate(value, low, high, welch.p_value, welch.se, int(usable.sum()), 0, welch.dof),
        n_text=f"{weak.size} + {unsupervised.size}",
        within=within,
        n_seeds=seed_count(rows),
        claim_id=f"{DITTADI}.weak_raises_disentanglement",
    )


def _answered(table: pd.DataFrame, group: str) -> pd.DataFrame:
    """One group's rows with a rho (too few trials or a constant score: nothing to say)."""
    if table.empty:
        return table
    return table[(table["group"] == group) & np.isfinite(table["rho"].astype("float64"))]


def _group_rows(scores: pd.DataFrame, group: str) -> pd.DataFrame:
    """The trials of a correlations.csv group: `all`, or `<column>=<value>`."""
    if group == "all":
        return scores
    column, _, value = group.partition("=")
    column = column if column in scores.columns else PARAM + column
    return scores[scores[column].astype(str) == value]


def _rho_row(
    question: str,
    text: str,
    yes_if: str,
    cell: pd.Series,
    paper: str,
    scores: pd.DataFrame,
    claim_id: str | None = None,
) -> dict:
    """A Finding read from a correlations.csv row: its rho, interval, p-value and its rho
    with the design held fixed are that row's; what carries the pooled rho is found here."""
    x, y = _column(scores, cell["x"]), _column(scores, cell["y"])
    rows = _group_rows(scores, cell["group"])
    pooled, within = rho_estimates(
        cell, adjusted_spearman(rows, x, y, exclude=(PARAM + cell["x"],))
    )
    both = rows[np.isfinite(_values(rows, x)) & np.isfinite(_values(rows, y))]
    return finding_row(
        DITTADI,
        question,
        text,
        "rho",
        yes_if,
        "" if claim_id else paper,
        x=cell["x"],
        y=cell["y"],
        group=cell["group"],
        pooled=pooled,
        within=within,
        n_seeds=seed_count(both),
        claim_id=claim_id,
    )


def _mae_cells(correlations: pd.DataFrame, x: str) -> Iterator[tuple[str, str, str, pd.Series]]:
    """(scenario without its cell, how the question names it, probe, row) of each
    rho(x, transfer/<scenario>/<probe>/mae) in group `all`."""
    sub = _answered(correlations, "all")
    for _, cell in sub[sub["x"] == x].iterrows():
        target = parse_transfer(cell["y"])
        if target is None or target.score != "mae" or target.factor is not None:
            continue
        scenario = target.scenario.split(SEPARATOR)[0]
        # OOD2-B, real images; with a cell's name when a study has several (`ood2_b@finger`)
        where = _SCENARIO_NAMES.get(scenario, scenario.upper().replace("_", "-"))
        if target.scenario != scenario:
            where += f"; {target.scenario}"
        yield scenario, where, target.probe, cell


def _transfer_rows(
    correlations: pd.DataFrame, scores: pd.DataFrame, dis: str, note: str
) -> Iterator[dict]:
    """rho(disentanglement, transfer MAE) per OOD1 and OOD2 scenario and probe."""
    for scenario, where, probe, cell in _mae_cells(correlations, dis):
        if scenario.startswith("ood1"):
            question, kind, paper = DIS_OOD1, "OOD1", PAPER_OOD1_OTHER
            claimed = _OOD1_CLAIMS.get(probe)
        elif scenario.startswith("ood2"):
            question, kind, paper = DIS_OOD2, "OOD2", PAPER_OOD2_OTHER
            # The paper's words on OOD2-A are of GBTs; on OOD2-B of every probe.
            claimed = _OOD2_CLAIMS.get(scenario) if scenario != "ood2_a" or probe == "gbt" else None
        else:
            continue
        text = (
            f"Does disentanglement{note} go with lower {kind} transfer error"
            f" ({where}, {probe} probe)?"
        )
        yield _rho_row(question, text, "< 0", cell, paper, scores, claimed)


def _noise_rows(correlations: pd.DataFrame, scores: pd.DataFrame) -> Iterator[dict]:
    """rho(input noise as 0/1, transfer MAE) per OOD2 scenario and probe: Fig. 6's top row.

    The rank correlation, not a difference of mean errors, because it is what the paper
    reports and `correlations.csv` already holds it (present only when noise varies)."""
    for scenario, where, probe, cell in _mae_cells(correlations, NOISE_X):
        text = f"Does input noise lower the transfer error ({where}, {probe} probe)?"
        if scenario.startswith("ood2"):
            claimed = f"{DITTADI}.noise_ood2"
            yield _rho_row(NOISE_OOD2, text, "< 0", cell, "", scores, claimed)
        elif scenario.startswith("ood1"):
            claimed = f"{DITTADI}.noise_ood1"
            yield _rho_row(NOISE_OOD1, text, "< 0", cell, "", scores, claimed)


def _proxy_rows(proxy: pd.DataFrame, scores: pd.DataFrame, dis: str, note: str) -> Iterator[dict]:
    """rho(ELBO or reconstruction, disentanglement) within weak and unsupervised trials."""
    for kind in ("weak", "unsupervised"):
        sub = _answered(proxy, f"{SUPERVISION}={kind}")
        for proxy_name, direction in PROXY_DIRECTION.items():
            rows = sub[(sub["x"] == proxy_name) & (sub["y"] == dis)]
            if rows.empty:
                continue
            better = "higher ELBO" if direction == "max" else "lower reconstruction NLL"
            text = f"Can a {better} pick disentangled models{note} ({kind} trials)?"
            claimed = _PROXY_CLAIMS.get((proxy_name, kind))
            yes_if = "> 0" if direction == "max" else "< 0"
            paper = PAPER_PROXY_UNSUPERVISED
            yield _rho_row(PROXY_DIS, text, yes_if, rows.iloc[0], paper, scores, claimed)


#: The in-distribution GBT accuracy of Fig. 3 right (`metrics/downstream.py`), at the largest
#: training size a study logged (GBT10000 needs 10,000 training codes; a laptop study has
#: fewer), and the metrics the claim names.
GBT_ACCURACIES = tuple(metric_key("down", f"gbt{n}_acc") for n in (10000, 1000))
_ACCURACY_METRICS = (GBT_D, metric_key("dis", "mig"))


def _accuracy_rows(proxy: pd.DataFrame, scores: pd.DataFrame) -> Iterator[dict]:
    """rho(GBT accuracy, DCI-D or MIG) over all trials (Sec. 3, Fig. 3 right)."""
    sub = _answered(proxy, "all")
    for name in _ACCURACY_METRICS:
        for accuracy in GBT_ACCURACIES:
            rows = sub[(sub["x"] == accuracy) & (sub["y"] == name)]
            if rows.empty:
                continue
            text = f"Does {name} go with the GBT's in-distribution accuracy ({accuracy})?"
            claimed = f"{DITTADI}.dis_gbt_accuracy"
            yield _rho_row(DIS_ACCURACY, text, "> 0", rows.iloc[0], "", scores, claimed)
            break
