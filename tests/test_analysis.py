"""The analysis on synthetic studies with a known answer (no training, no Ray): it must find
the planted correlation within its interval, no correlation where there is none, and zero
regret when selecting by the planted score."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from planted_tables import NULL, PLANTED, SCENARIOS, planted_results, planted_rho
from scipy.stats import spearmanr

from raystudy.analysis.claims.registry import all_claims
from raystudy.analysis.core.columns import RUN_NAME
from raystudy.analysis.core.groups import AxisError, trial_groups, with_supervision
from raystudy.analysis.core.results import finished
from raystudy.analysis.figures.study import R2_FIGURE
from raystudy.analysis.findings.claims import claim_counts
from raystudy.analysis.findings.rows import AGREEMENTS
from raystudy.analysis.pipeline import Settings, StudyAnalysis, compute, write_analysis
from raystudy.analysis.stats.bootstrap import bootstrap_weights, weighted_spearman
from raystudy.analysis.summary import format_summary
from raystudy.analysis.tables.correlations import (
    COLUMNS,
    correlation_table,
    transfer_correlations,
)
from raystudy.analysis.tables.selection import selection_table

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def planted() -> pd.DataFrame:
    return with_supervision(planted_results(300, seed=0, failed=4, running=3))


@pytest.fixture(scope="module")
def planted_correlations(planted: pd.DataFrame) -> pd.DataFrame:
    done = finished(planted)
    return transfer_correlations(done, trial_groups(done), n_boot=1000, seed=0)


def _cell(table: pd.DataFrame, x: str, y: str, group: str = "all") -> pd.Series:
    rows = table[(table["x"] == x) & (table["y"] == y) & (table["group"] == group)]
    assert len(rows) == 1, (x, y, group)
    return rows.iloc[0]


def test_weighted_ranks_give_scipy_spearman_on_every_resample_even_with_ties() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, (40, 2)).astype(float)  # heavy ties
    y = np.column_stack([rng.normal(size=40), np.round(rng.normal(size=40))])
    weights = bootstrap_weights(40, 6, rng)
    rho = weighted_spearman(weights, x, y)
    for b in range(6):
        rows = np.repeat(np.arange(40), weights[b].astype(int))
        for j in range(2):
            for k in range(2):
                expected = spearmanr(x[rows, j], y[rows, k]).statistic
                assert rho[b, j, k] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("scenario", [s for s, c in SCENARIOS.items() if c is not None])
def test_planted_correlation_is_recovered_within_its_interval(
    planted_correlations: pd.DataFrame, scenario: str
) -> None:
    truth = planted_rho(SCENARIOS[scenario])
    cell = _cell(planted_correlations, PLANTED, f"transfer/{scenario}/gbt/mae")
    assert cell["n"] == 300  # failed and running trials are not analysed
    assert cell["ci_low"] <= truth <= cell["ci_high"]
    assert cell["rho"] == pytest.approx(truth, abs=0.1)
    assert cell["ci_high"] - cell["ci_low"] < 0.3
    # r2 is a score, not an error: the same relation with the opposite sign
    r2 = _cell(planted_correlations, PLANTED, f"transfer/{scenario}/gbt/r2")
    assert r2["rho"] == pytest.approx(-cell["rho"], abs=1e-9)


def test_a_null_score_has_intervals_around_zero(planted_correlations: pd.DataFrame) -> None:
    cell = _cell(planted_correlations, NULL, "transfer/ood1_a/gbt/mae")
    assert cell["ci_low"] < 0.0 < cell["ci_high"]
    nulls = planted_correlations[
        (planted_correlations["x"] == NULL) & (planted_correlations["group"] == "all")
    ]
    covered = (nulls["ci_low"] < 0) & (nulls["ci_high"] > 0)
    assert covered.mean() >= 0.8, nulls  # 95% intervals: a miss now and then, not often


def test_selecting_by_the_planted_score_has_zero_regret(planted: pd.DataFrame) -> None:
    done = finished(planted)
    table = selection_table(done, trial_groups(done))
    exact = table[table["scenario"] == "exact"]
    by_planted = exact[exact["selector"] == PLANTED]
    assert len(by_planted) == 2 * 4  # 2 probes x (all + 3 supervision types)
    assert (by_planted["regret"] == 0.0).all()
    best = done["metrics.transfer/exact/gbt/mae"].idxmin()
    row = by_planted[(by_planted["group"] == "all") & (by_planted["probe"] == "gbt")].iloc[0]
    assert row["chosen"] == done.loc[best, RUN_NAME]
    by_null = exact[(exact["selector"] == NULL) & (exact["group"] == "all")]
    assert (by_null["regret"] > 0).all() and (by_null["random_regret"] > 0).all()
    # elbo is higher-is-better, recon lower-is-better: both pick by their own direction
    assert set(table.loc[table["selector"] == "eval/recon", "direction"]) == {"min"}
    assert set(table.loc[table["selector"] == "eval/elbo", "direction"]) == {"max"}


def test_cells_with_too_few_trials_are_blank_not_numbers(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "metrics.dis/dci_d": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
            "metrics.dis/mig": [0.3, 0.3, 0.3, 0.3, 0.3, 0.3],  # constant: rho undefined
            "metrics.transfer/a/gbt/mae": [0.9, 0.8, 0.5, 0.1, 0.05, 0.01],
            "metrics.transfer/b/gbt/mae": [1.0, 2.0, 3.0, np.nan, np.nan, np.nan],
        }
    )
    table = correlation_table(
        frame,
        ["metrics.dis/dci_d", "metrics.dis/mig"],
        ["metrics.transfer/a/gbt/mae", "metrics.transfer/b/gbt/mae"],
        [("all", frame.index)],
        n_boot=200,
        min_trials=5,
    )
    assert list(table.columns) == COLUMNS
    full = _cell(table, "dis/dci_d", "transfer/a/gbt/mae")
    assert full["n"] == 6 and full["rho"] == pytest.approx(-1.0)
    few = _cell(table, "dis/dci_d", "transfer/b/gbt/mae")
    numbers = ["rho", "ci_low", "ci_high", "p_value", "q_bh", "within_rho", "within_p"]
    assert few["n"] == 3 and few[numbers].isna().all()
    flat = _cell(table, "dis/mig", "transfer/a/gbt/mae")
    assert flat["n"] == 6 and flat[["rho", "ci_low", "ci_high"]].isna().all()
    table.to_csv(tmp_path / "c.csv", index=False)
    line = next(li for li in (tmp_path / "c.csv").read_text().splitlines() if ",3," in li)
    blank = "," * (len(COLUMNS) - 4)
    assert line.endswith(",3" + blank), line  # blank in the CSV, not "nan" or 0


def test_bootstrap_intervals_are_seeded(planted: pd.DataFrame) -> None:
    done = finished(planted)
    groups = [("all", done.index)]
    args = (done, ["metrics.dis/mig"], ["metrics.transfer/ood1_a/gbt/mae"], groups)
    first = correlation_table(*args, n_boot=300, seed=7)
    again = correlation_table(*args, n_boot=300, seed=7)
    other = correlation_table(*args, n_boot=300, seed=8)
    pd.testing.assert_frame_equal(first, again)
    assert first["rho"].iat[0] == other["rho"].iat[0]
    assert first["ci_low"].iat[0] != other["ci_low"].iat[0]


def test_groups_by_supervision_and_by_named_axes(planted: pd.DataFrame) -> None:
    done = finished(planted)
    names = [g for g, _ in trial_groups(done, ["model", "beta"])]
    assert names[:4] == [
        "all",
        "supervision=unsupervised",
        "supervision=weak",
        "supervision=reference",
    ]
    assert "model.objective=ada_gvae" in names and "model.beta=4.0" in names
    # Models that have no beta (factor_vae, gt_decoder) are in no beta group.
    by_beta = [rows for g, rows in trial_groups(done, ["beta"]) if g.startswith("model.beta=")]
    assert len(by_beta) == 4 and "model.beta=nan" not in names and "model.beta=None" not in names
    grouped = done.loc[[i for rows in by_beta for i in rows], "params.model.objective"]
    assert set(grouped) == {"beta_vae", "beta_tcvae", "ada_gvae", "ml_vae"}
    assert sum(len(rows) for rows in by_beta) == done["params.model.beta"].notna().sum()
    weak = dict(trial_groups(done))["supervision=weak"]
    assert set(done.loc[weak, "params.model.objective"]) == {"ada_gvae", "ml_vae"}
    with pytest.raises(AxisError, match=r"'nope' names no parameter.*model.objective"):
        trial_groups(done, ["nope"])


def test_failed_and_running_trials_are_counted_and_left_out(planted: pd.DataFrame) -> None:
    # 60 finished trials, then the 4 failed and 3 running ones the fixture ends with
    frame = pd.concat([planted.head(60), planted.tail(7)])
    analysis = compute(frame, Settings(n_boot=100))
    assert analysis.status_counts.to_dict() == {"FINISHED": 60, "FAILED": 4, "RUNNING": 3}
    assert list(analysis.unfinished["status"]) == ["FAILED"] * 4 + ["RUNNING"] * 3
    assert analysis.unfinished["error"].iloc[0] == "RuntimeError: planted"
    sizes = {g: len(rows) for g, rows in trial_groups(finished(frame))}
    per_group = analysis.correlations.groupby("group")["n"].max()
    assert per_group.to_dict() == sizes and sizes["all"] == 60
    assert analysis.selection.groupby("group")["n"].max().to_dict() == sizes


def test_infinite_scores_are_left_out_and_named(planted: pd.DataFrame, tmp_path: Path) -> None:
    frame = planted.head(60).copy()
    frame.loc[[3, 7], "metrics.dis/dci_d"] = [np.inf, -np.inf]
    analysis = compute(frame, Settings(n_boot=100))
    rows = analysis.correlations[
        (analysis.correlations["x"] == "dis/dci_d") & (analysis.correlations["group"] == "all")
    ]
    assert set(rows["n"]) == {58}
    names = frame[RUN_NAME]
    assert analysis.nonfinite.to_dict("records") == [
        {"score": "dis/dci_d", "runs": 2, "trials": f"{names[3]}, {names[7]}"}
    ]
    said = format_summary(StudyAnalysis(analysis, tmp_path, [], None))
    assert f"left out as +-inf: dis/dci_d in 2 run(s) ({names[3]}, {names[7]})" in said
    write_analysis(analysis, tmp_path, study="planted", planned_trials=60)
    report = (tmp_path / "report.html").read_text()
    assert "Scores left out as infinite" in report and names[7] in report
    assert compute(planted.head(60), Settings(n_boot=10)).nonfinite.empty


def _is_png(path: Path) -> bool:
    return path.read_bytes()[:8] == PNG_SIGNATURE and matplotlib.image.imread(path).ndim == 3


def test_write_analysis_files_figures_and_a_self_contained_report(tmp_path: Path) -> None:
    frame = planted_results(80, seed=3, failed=1)
    # a reconstruction split (Montero et al.) logs held-out NLL: figure 7 appears
    frame["params.split"] = np.where(np.arange(len(frame)) % 2, "montero_range", "montero_element")
    frame["metrics.eval/recon_heldout"] = frame["metrics.eval/recon"] + 300.0
    analysis = compute(frame, Settings(by=("model",), n_boot=200))
    files = write_analysis(analysis, tmp_path, study="planted", planned_trials=81, spec_text="x: 1")
    names = {f.name for f in files}
    assert {"results.parquet", "correlations.csv", "selection.csv", "report.html"} <= names
    # the Findings of two splits' cells: each question per cell, as correlations.csv has them
    findings = pd.read_csv(tmp_path / "findings.csv")
    assert len(findings) == len(analysis.findings) > 0
    assert {"ood1_a@montero_element", "ood1_a@montero_range"} <= set(
        findings["y"].str.split("/").str[1]
    )
    # every claim of the papers, each with its agreement; the counts open the report
    claims = pd.read_csv(tmp_path / "claims.csv")
    assert list(claims["claim_id"]) == list(analysis.claims["claim_id"])
    assert len(claims) == len(all_claims()) and set(claims["agreement"]) <= set(AGREEMENTS)
    assert claim_counts(analysis.claims) in (tmp_path / "report.html").read_text()
    pngs = sorted(tmp_path.glob("*.png"))
    assert len(pngs) == 9 and all(_is_png(p) for p in pngs)
    # every figure but Schott et al.'s R^2 (no schott_* split here) and the decoder test (no
    # trial retrained its decoder) is drawn
    assert [f.name for f in analysis.figures if f.reason] == ["decoder_test.png", R2_FIGURE]
    table = pd.read_csv(tmp_path / "correlations.csv")
    assert list(table.columns) == COLUMNS
    assert {"all", "supervision=weak", "model.objective=ml_vae"} <= set(table["group"])
    assert len(pd.read_parquet(tmp_path / "results.parquet")) == 81
    report = (tmp_path / "report.html").read_text()
    assert report.count("data:image/png;base64,") == 9
    links = re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", report, re.I)
    assert len(links) == 9 and all(v.startswith("data:image/png;base64,") for v in links)
    assert not re.search(r"url\(|@import|<script|<link", report, re.I)
    assert "Runs not analysed" in report and "RuntimeError: planted" in report
    assert "Model selection" in report and "x: 1" in report


def _runs(n: int, **columns: object) -> pd.DataFrame:
    """A finished results table of n runs named r00, r01, ..."""
    return pd.DataFrame(
        {
            "status": "FINISHED",
            RUN_NAME: [f"r{i:02d}" for i in range(n)],
            "params.model.objective": "beta_vae",
            **columns,
        }
    )


def _selection_row(table: pd.DataFrame, selector: str) -> pd.Series:
    rows = table[(table["selector"] == selector) & (table["group"] == "all")]
    assert len(rows) == 1
    return rows.iloc[0]


def test_regret_is_against_the_best_of_every_model_not_of_those_the_selector_scored() -> None:
    mae = np.array([0.10, 0.12, 0.15, 0.30, 0.32, 0.34])
    # factor_vae was logged only on the three worst models; mig on all of them
    frame = _runs(
        6,
        **{
            "metrics.dis/factor_vae": [np.nan, np.nan, np.nan, 0.1, 0.2, 0.9],
            "metrics.dis/mig": [0.9, 0.8, 0.7, 0.3, 0.2, 0.1],
            "metrics.transfer/t/gbt/mae": mae,
        },
    )
    table = selection_table(frame, [("all", frame.index)], min_trials=3)
    partial = _selection_row(table, "dis/factor_vae")
    assert partial["n"] == 3 and partial["chosen"] == "r05"
    assert partial["best_mae"] == pytest.approx(0.10)
    assert partial["regret"] == pytest.approx(0.34 - 0.10)
    assert partial["random_regret"] == pytest.approx(mae.mean() - 0.10)
    full = _selection_row(table, "dis/mig")
    assert full["regret"] == 0.0 and full["random_regret"] == partial["random_regret"]


def test_a_constant_selector_chooses_nothing_and_a_tie_costs_its_mean() -> None:
    mae = [0.10, 0.20, 0.30, 0.40, 0.50, 0.60]
    frame = _runs(
        6,
        **{
            "metrics.dis/mig": [0.0] * 6,  # chooses nothing: no regret, not 0
            "metrics.dis/sap": [0.5, 0.1, 0.5, 0.2, 0.3, 0.4],  # r00 and r02 tie at the top
            "metrics.transfer/t/gbt/mae": mae,
        },
    )
    table = selection_table(frame, [("all", frame.index)], min_trials=3)
    flat = _selection_row(table, "dis/mig")
    assert np.isnan(flat["regret"]) and flat["n"] == 6
    assert flat["best_mae"] == pytest.approx(0.10)  # the scale is still there
    tie = _selection_row(table, "dis/sap")
    assert tie["chosen"] == "r00" and tie["regret"] == pytest.approx(0.20 - 0.10)


def test_repeated_axes_and_repeated_row_labels_count_each_run_once(planted: pd.DataFrame) -> None:
    done = finished(planted)
    names = [g for g, _ in trial_groups(done, ["model", "objective", "beta", "model.beta"])]
    assert len(names) == len(set(names))
    # Two results tables concatenated in a notebook, labels kept: 60 + 60 distinct runs.
    frame = pd.concat([done.head(60), done.iloc[60:120].set_axis(done.index[:60])])
    analysis = compute(frame, Settings(by=("model", "objective"), n_boot=50))
    assert analysis.correlations.groupby("group")["n"].max()["all"] == 120
    assert analysis.selection.groupby("group")["n"].max()["all"] == 120


def test_transfer_scores_of_different_splits_are_never_pooled() -> None:
    rng = np.random.default_rng(0)
    dci = rng.uniform(size=40)
    split = np.where(np.arange(40) < 20, "iid", "extrapolation")
    # Within each split better disentanglement transfers better (MAE falls with DCI), but
    # extrapolation is much harder and its models happen to score higher DCI.
    dci = np.where(split == "iid", dci, dci + 1.0)
    mae = np.where(split == "iid", 1.0 - 0.5 * dci, 3.0 - 0.5 * dci)
    frame = _runs(40, **{"params.split": split, "metrics.dis/dci_d": dci})
    frame["metrics.transfer/test/gbt/mae"] = mae
    analysis = compute(frame, Settings(n_boot=50))
    table = analysis.correlations
    assert not table["y"].str.startswith("transfer/test/").any()  # no pooled column
    for cell in ("iid", "extrapolation"):
        row = _cell(table, "dis/dci_d", f"transfer/test@{cell}/gbt/mae")
        assert row["n"] == 20 and row["rho"] == pytest.approx(-1.0)
        assert _cell(table, "dis/dci_d", f"transfer/test@{cell}/gbt/mae", f"cell={cell}")["n"] == 20
    picked = analysis.selection[analysis.selection["selector"] == "dis/dci_d"]
    assert (picked[picked["group"] == "all"]["regret"] == 0.0).all()
