"""The report's opening: the papers' questions this study's numbers can answer, one line each.

Dittadi et al. (2021) ask whether weak supervision raises disentanglement (Sec. 3, Fig. 3
left), whether disentanglement goes with lower transfer error when only the probe's data shift
(OOD1, Sec. 5, Fig. 4) and when the encoder's do too (OOD2, Fig. 5), whether input noise helps
under OOD2 (Fig. 6), and whether ELBO or reconstruction track disentanglement, so they can pick
models without labels (Sec. 3, Fig. 3 right). Each question is answered here from the tables
`compute` made, never by hand: every rank correlation is read from `correlations.csv` or
`unsupervised_vs_disentanglement.csv` (not recomputed), and the one difference of means (weak
minus unsupervised disentanglement) gets a bootstrap of its own, resampling within each group.

A verdict is "yes" or "no" only when the 95% interval excludes 0, read in the direction the
question asks ("no" is then an effect the other way); otherwise, or with no interval,
"inconclusive". A question the study cannot speak to (no weakly supervised trials, input
noise never varied, no OOD2-B scenario) has no row, rather than a blank one.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterator

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from raystudy.analysis.cells import SEPARATOR
from raystudy.analysis.columns import (
    GBT_D,
    NOISE_X,
    PROXY_DIRECTION,
    disentanglement_columns,
    metric,
    parse_transfer,
    short,
)
from raystudy.analysis.groups import SUPERVISION

COLUMNS = [
    "question",
    "text",
    "statistic",
    "x",
    "y",
    "group",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "n_text",
    "yes_if",
    "verdict",
    "paper",
]

WEAK_RAISES_DIS = "weak_supervision_raises_disentanglement"
DIS_OOD1 = "disentanglement_lowers_ood1_error"
DIS_OOD2 = "disentanglement_lowers_ood2_error"
NOISE_OOD2 = "input_noise_lowers_ood2_error"
PROXY_DIS = "proxy_tracks_disentanglement"

_CITE = "Dittadi et al. 2021"
PAPER_WEAK = (
    f"much higher (DCI, MIG); high disentanglement needs weak supervision ({_CITE}, Sec. 3,"
    " Fig. 3 left)"
)
#: Fig. 4 and the text of Sec. 5 ("Is disentanglement correlated with OOD1 generalization?").
PAPER_OOD1 = {
    "gbt": f"yes, strongly, in every OOD1 scenario ({_CITE}, Sec. 5, Fig. 4)",
    "mlp": f"yes, mildly, in every OOD1 scenario ({_CITE}, Sec. 5, Fig. 4)",
}
PAPER_OOD1_OTHER = f"yes in every OOD1 scenario, strong for GBT, mild for MLP ({_CITE}, Fig. 4)"
#: Fig. 5 and the text of Sec. 5 ("Is disentanglement correlated with OOD2 generalization?"):
#: the text speaks of GBTs; the caption of every probe.
PAPER_OOD2 = {
    ("ood2_a", "gbt"): f"weaker than OOD1 but non-negligible ({_CITE}, Sec. 5, Fig. 5)",
    ("ood2_b", "gbt"): f"minor at best on real images ({_CITE}, Sec. 5, Fig. 5)",
}
PAPER_OOD2_OTHER = f"only minimal in OOD2 ({_CITE}, Sec. 5, Fig. 5)"
PAPER_NOISE = f"yes, significantly better OOD2 transfer ({_CITE}, Sec. 5, Fig. 6)"
#: Sec. 3 ("How useful are common disentanglement metrics..."), and Sec. 5's conclusion that
#: model selection by ELBO or reconstruction is feasible with weak supervision.
PAPER_PROXY = {
    ("eval/elbo", "weak"): (
        f"yes, DCI and MIG correlate strongly, positively with ELBO ({_CITE}, Sec. 3, Fig. 3 right)"
    ),
    ("eval/recon", "weak"): (
        "yes, DCI and MIG correlate strongly, negatively with reconstruction loss"
        f" ({_CITE}, Sec. 3, Fig. 3 right)"
    ),
}
PAPER_PROXY_UNSUPERVISED = (
    f"the text states it for weakly supervised models only ({_CITE}, Sec. 3, Fig. 3 right)"
)
#: Scenario names of the `dittadi_hues` split as the papers write them.
_SCENARIO_NAMES = {"ood2_a": "OOD2-A, unseen hues", "ood2_b": "OOD2-B, real images"}
#: Bootstrap replicates x trials drawn at once: bounds memory at ~16 MB of indices.
_MAX_DRAWS = 2_000_000


def findings_table(
    frame: pd.DataFrame,
    correlations: pd.DataFrame,
    proxy_correlations: pd.DataFrame,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    min_trials: int = 5,
) -> pd.DataFrame:
    """One row per question the study can answer (the table of `findings.csv`).

    `frame`: the finished trials with a `supervision` column (as `compute` analyses them);
    `correlations` and `proxy_correlations`: `transfer_correlations` and the ELBO /
    reconstruction vs disentanglement table of the same trials.
    """
    dis = disentanglement_metric(frame)
    if dis is None:  # every question is about a disentanglement score but the noise one
        rows = list(_noise_rows(correlations))
    else:
        # A stand-in for DCI-D is named in each question; DCI-D itself is named by the number.
        note = "" if dis == metric(GBT_D) else f" ({short(dis)}: no {GBT_D} logged)"
        rows = [
            *_weak_rows(frame, dis, note, n_boot=n_boot, seed=seed, min_trials=min_trials),
            *_transfer_rows(correlations, short(dis), note),
            *_noise_rows(correlations),
            *_proxy_rows(proxy_correlations, short(dis), note),
        ]
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.astype({"n": "int64", **{c: "float64" for c in ("value", "ci_low", "ci_high")}})


def disentanglement_metric(frame: pd.DataFrame) -> str | None:
    """The column the questions use: DCI's D (`dis/dci_d`, the score of Dittadi et al.'s
    figures), else the first other disentanglement score the trials logged; None when none."""
    logged = [c for c in disentanglement_columns(frame) if np.isfinite(_values(frame, c)).any()]
    return metric(GBT_D) if metric(GBT_D) in logged else next(iter(logged), None)


def _values(frame: pd.DataFrame, column: str) -> NDArray[np.float64]:
    return frame[column].to_numpy(dtype=np.float64, na_value=np.nan)


def verdict(low: float, high: float, yes_if: str) -> str:
    """'yes' when the interval lies on the side `yes_if` ('> 0' or '< 0') names, 'no' when
    on the other, 'inconclusive' when it holds 0 or is missing."""
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 0.0 <= high:
        return "inconclusive"
    return "yes" if (low > 0.0) == (yes_if == "> 0") else "no"


def bootstrap_difference(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    *,
    n_boot: int,
    rng: np.random.Generator,
    level: float = 0.95,
) -> tuple[float, float, float]:
    """mean(a) - mean(b) and its percentile-bootstrap interval, each sample resampled on its
    own (the groups' sizes are fixed by the study's design); NaN bounds when n_boot < 1."""
    diff = float(a.mean() - b.mean())
    if n_boot < 1:
        return diff, math.nan, math.nan
    chunk = max(1, _MAX_DRAWS // (a.size + b.size))
    reps = []
    for start in range(0, n_boot, chunk):
        size = min(chunk, n_boot - start)
        means_a = a[rng.integers(0, a.size, (size, a.size))].mean(axis=1)
        means_b = b[rng.integers(0, b.size, (size, b.size))].mean(axis=1)
        reps.append(means_a - means_b)
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(np.concatenate(reps), [tail, 100.0 - tail])
    return diff, float(low), float(high)


def _row(question: str, text: str, statistic: str, yes_if: str, **values: object) -> dict:
    low, high = float(values["ci_low"]), float(values["ci_high"])  # type: ignore[arg-type]
    return {
        "question": question,
        "text": text,
        "statistic": statistic,
        "yes_if": yes_if,
        "verdict": verdict(low, high, yes_if),
        **values,
    }


def _weak_rows(
    frame: pd.DataFrame, dis: str, note: str, *, n_boot: int, seed: int, min_trials: int
) -> Iterator[dict]:
    """Weak minus unsupervised mean disentanglement, when both groups have min_trials."""
    if SUPERVISION not in frame.columns:
        return
    # A score logged as +-inf is left out like a missing one, as in every other table.
    scores = _values(frame, dis)
    kinds = frame[SUPERVISION].to_numpy()
    weak = scores[(kinds == "weak") & np.isfinite(scores)]
    unsupervised = scores[(kinds == "unsupervised") & np.isfinite(scores)]
    if min(weak.size, unsupervised.size) < max(min_trials, 1):
        return
    rng = np.random.default_rng([seed, zlib.crc32(WEAK_RAISES_DIS.encode())])
    value, low, high = bootstrap_difference(weak, unsupervised, n_boot=n_boot, rng=rng)
    yield _row(
        WEAK_RAISES_DIS,
        f"Does weak supervision raise disentanglement{note}?",
        "difference",
        "> 0",
        x=f"{SUPERVISION}=weak - {SUPERVISION}=unsupervised",
        y=short(dis),
        group=f"{SUPERVISION}=weak, {SUPERVISION}=unsupervised",
        value=value,
        ci_low=low,
        ci_high=high,
        n=weak.size + unsupervised.size,
        n_text=f"{weak.size} + {unsupervised.size}",
        paper=PAPER_WEAK,
    )


def _answered(table: pd.DataFrame, group: str) -> pd.DataFrame:
    """One group's rows with a rho (too few trials or a constant score: nothing to say)."""
    if table.empty:
        return table
    return table[(table["group"] == group) & np.isfinite(table["rho"].astype("float64"))]


def _rho_row(question: str, text: str, yes_if: str, cell: pd.Series, paper: str) -> dict:
    return _row(
        question,
        text,
        "rho",
        yes_if,
        x=cell["x"],
        y=cell["y"],
        group=cell["group"],
        value=cell["rho"],
        ci_low=cell["ci_low"],
        ci_high=cell["ci_high"],
        n=int(cell["n"]),
        n_text=str(int(cell["n"])),
        paper=paper,
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


def _transfer_rows(correlations: pd.DataFrame, dis: str, note: str) -> Iterator[dict]:
    """rho(disentanglement, transfer MAE) per OOD1 and OOD2 scenario and probe."""
    for scenario, where, probe, cell in _mae_cells(correlations, dis):
        if scenario.startswith("ood1"):
            question, kind, paper = DIS_OOD1, "OOD1", PAPER_OOD1.get(probe, PAPER_OOD1_OTHER)
        elif scenario.startswith("ood2"):
            question, kind = DIS_OOD2, "OOD2"
            paper = PAPER_OOD2.get((scenario, probe), PAPER_OOD2_OTHER)
        else:
            continue
        text = (
            f"Does disentanglement{note} go with lower {kind} transfer error"
            f" ({where}, {probe} probe)?"
        )
        yield _rho_row(question, text, "< 0", cell, paper)


def _noise_rows(correlations: pd.DataFrame) -> Iterator[dict]:
    """rho(input noise as 0/1, transfer MAE) per OOD2 scenario and probe: Fig. 6's top row.

    The rank correlation, not a difference of mean errors, because it is what the paper
    reports and `correlations.csv` already holds it (present only when noise varies)."""
    for scenario, where, probe, cell in _mae_cells(correlations, NOISE_X):
        if scenario.startswith("ood2"):
            text = f"Does input noise lower the transfer error ({where}, {probe} probe)?"
            yield _rho_row(NOISE_OOD2, text, "< 0", cell, PAPER_NOISE)


def _proxy_rows(proxy: pd.DataFrame, dis: str, note: str) -> Iterator[dict]:
    """rho(ELBO or reconstruction, disentanglement) within weak and unsupervised trials."""
    for kind in ("weak", "unsupervised"):
        sub = _answered(proxy, f"{SUPERVISION}={kind}")
        for proxy_name, direction in PROXY_DIRECTION.items():
            rows = sub[(sub["x"] == proxy_name) & (sub["y"] == dis)]
            if rows.empty:
                continue
            better = "higher ELBO" if direction == "max" else "lower reconstruction NLL"
            text = f"Can a {better} pick disentangled models{note} ({kind} trials)?"
            paper = PAPER_PROXY.get((proxy_name, kind), PAPER_PROXY_UNSUPERVISED)
            yes_if = "> 0" if direction == "max" else "< 0"
            yield _rho_row(PROXY_DIS, text, yes_if, rows.iloc[0], paper)


def finding_parts(row: pd.Series) -> tuple[str, str, str]:
    """A finding's question, its verdict ('Yes', 'No', 'Inconclusive'), and the rest of its
    line: the number with its interval and n, and what the paper reported."""
    low, high = row["ci_low"], row["ci_high"]
    ci = f"[{low:+.2f}, {high:+.2f}]" if np.isfinite(low) and np.isfinite(high) else "[no CI]"
    if row["statistic"] == "difference":
        measure = f"mean {row['y']}, {row['x'].replace(SUPERVISION + '=', '')}"
    else:
        measure = f"rho({row['x']}, {row['y']})"
    rest = f"{measure} = {row['value']:+.2f} {ci}, n = {row['n_text']}. Paper: {row['paper']}."
    return str(row["text"]), str(row["verdict"]).capitalize(), rest


def finding_line(row: pd.Series) -> str:
    """One finding as a sentence: `<question> <Verdict>: <number> [CI], n. Paper: <...>.`"""
    question, answer, rest = finding_parts(row)
    return f"{question} {answer}: {rest}"


def finding_lines(table: pd.DataFrame) -> list[str]:
    return [finding_line(row) for _, row in table.iterrows()]


#: Said in place of the findings when the study can answer none of the questions.
NO_FINDINGS = (
    "None of the papers' questions can be answered from these trials: they need a"
    " disentanglement score (dis/*) logged beside transfer scores of OOD1 / OOD2 scenarios"
    " (split dittadi_hues), weakly supervised and unsupervised models, or input noise varied,"
    " with enough finished trials for each."
)
