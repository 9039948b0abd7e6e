"""The analysis outputs of the papers beside Dittadi et al.'s correlations: Schott et al.
(2022)'s R^2 table and modularity summary, rho(input noise, transfer) (Dittadi et al. 2021,
Fig. 6 top row) and the per-factor figure by noise (Fig. 15), and Montero et al. (2021)'s
reconstruction against the Lasso D-score, with rho(D, held-out NLL) per split. Every
expected number is computed here from the same synthetic table, with pandas or scipy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from planted_tables import (
    FACTORS,
    SCHOTT_FACTORS,
    planted_results,
    schott_results,
)
from scipy.stats import spearmanr

from raystudy.analysis.core.cells import transfer_by_cell
from raystudy.analysis.core.groups import model_labels, trial_groups, with_supervision
from raystudy.analysis.core.results import finished
from raystudy.analysis.figures.models import reconstruction_splits, reconstruction_x
from raystudy.analysis.figures.study import R2_FIGURE
from raystudy.analysis.figures.transfer import per_factor_transfer, r2_by_split
from raystudy.analysis.pipeline import (
    MODULARITY_FILE,
    R2_FILE,
    Settings,
    StudyAnalysis,
    compute,
    write_analysis,
)
from raystudy.analysis.summary import format_summary
from raystudy.analysis.tables.correlations import transfer_correlations
from raystudy.analysis.tables.r2 import r2_modularity, r2_table

KEYS = ["params.model.beta", "params.split", "params.dataset.name"]


@pytest.fixture(scope="module")
def schott() -> pd.DataFrame:
    frame = schott_results()
    # One run without its gbt scores: that cell's count and mean are over the other seeds.
    frame.loc[4, [c for c in frame.columns if "/gbt/" in c]] = np.nan
    return frame


def _expected(frame: pd.DataFrame, values: pd.Series) -> pd.DataFrame:
    """Seed mean, std (ddof 1) and count of `values` per beta, split and dataset."""
    stats = values.groupby([frame[k] for k in KEYS]).agg(["mean", "std", "count"])
    return stats[stats["count"] > 0]


def _row(table: pd.DataFrame, beta: str, split: str, dataset: str, **keys: str) -> pd.Series:
    sel = (
        (table["model"] == f"beta_vae beta={beta}")
        & (table["split"] == split)
        & (table["dataset"] == dataset)
    )
    for key, value in keys.items():
        sel &= table[key] == value
    assert sel.sum() == 1, (beta, split, dataset, keys)
    return table[sel].iloc[0]


@pytest.mark.parametrize("probe", ["gbt", "mlp"])
def test_r2_table_is_the_seed_mean_spread_and_count_per_model_split_and_dataset(
    schott: pd.DataFrame, probe: str
) -> None:
    table = r2_table(schott)
    checked = 0
    for column in ("r2", "r2/pos_x", "r2/shape"):
        values = schott[f"metrics.transfer/test/{probe}/{column}"]
        for (beta, split, dataset), want in _expected(schott, values).iterrows():
            row = _row(table, beta, split, dataset, scenario="test", probe=probe)
            assert row[column] == pytest.approx(want["mean"], rel=1e-12)
            std = column.replace("r2", "r2_std", 1)
            assert row[std] == pytest.approx(want["std"], rel=1e-12)
            if column == "r2":
                assert row["n"] == want["count"]
            checked += 1
    assert checked == 3 * 3 * 2 * 2  # columns x betas x splits x datasets
    missing = _row(table, "1.0", "schott_random", "shapes3d", scenario="test", probe=probe)
    assert missing["n"] == (2 if probe == "gbt" else 3)  # run 4 is that cell's second seed
    # Only the split that has them gets single-factor rows; the paper's split order holds.
    singles = table[table["scenario"].str.startswith("single_")]
    assert set(singles["split"]) == {"schott_extrapolation"}
    assert list(pd.unique(table["split"])) == ["schott_random", "schott_extrapolation"]


def test_modularity_is_the_ood_factor_beside_the_mean_of_the_others(schott: pd.DataFrame) -> None:
    table = r2_modularity(schott)
    assert set(table["ood_factor"]) == set(SCHOTT_FACTORS[1:])
    assert set(table["split"]) == {"schott_extrapolation"}
    for factor in ("scale", "pos_y"):
        head = f"metrics.transfer/single_{factor}/gbt/r2/"
        others = schott[[head + f for f in SCHOTT_FACTORS if f != factor]].mean(axis=1)
        want_ood = _expected(schott, schott[head + factor])
        want_others = _expected(schott, others)
        assert len(want_ood) == 3 * 2  # betas x datasets of the extrapolation split
        for (beta, split, dataset), want in want_ood.iterrows():
            row = _row(table, beta, split, dataset, probe="gbt", ood_factor=factor)
            assert row["n"] == want["count"]
            assert row["ood_r2"] == pytest.approx(want["mean"], rel=1e-12)
            assert row["ood_r2_std"] == pytest.approx(want["std"], rel=1e-12)
            other = want_others.loc[(beta, split, dataset)]
            assert row["others_r2"] == pytest.approx(other["mean"], rel=1e-12)
            assert row["others_r2_std"] == pytest.approx(other["std"], rel=1e-12)
            assert row["others_r2"] > row["ood_r2"]  # the table plants the OOD factor's drop


def test_a_model_is_everything_but_its_seed_split_and_dataset() -> None:
    frame = finished(planted_results(60, seed=1))
    labels = model_labels(frame)
    assert labels.iloc[0] == (
        f"beta_vae beta={frame['params.model.beta'].iloc[0]} "
        f"train.input_noise={frame['params.train.input_noise'].iloc[0]}"
    )
    factor_vae = labels[frame["params.model.objective"] == "factor_vae"]
    assert factor_vae.str.contains("gamma=").all() and not factor_vae.str.contains("beta=").any()
    # Runs of one label differ in nothing but their seed.
    params = [c for c in frame.columns if c.startswith("params.") and c != "params.seed"]
    assert (frame[params].groupby(labels).nunique(dropna=False) == 1).all().all()
    assert labels.groupby(labels).size().max() > 1


def test_rho_of_input_noise_with_transfer_is_spearman_of_the_noise_indicator() -> None:
    frame = with_supervision(finished(planted_results(120, seed=2)))
    noisy = frame["params.train.input_noise"] == "True"
    frame.loc[noisy, "metrics.transfer/ood2_a/gbt/mae"] -= 0.1  # noise helps, as in Fig. 6
    table = transfer_correlations(frame, trial_groups(frame), n_boot=20)
    rows = table[table["x"] == "train.input_noise"]
    weak = frame["supervision"] == "weak"
    for y in ("transfer/ood2_a/gbt/mae", "transfer/ood1_a/mlp/r2"):
        everyone = pd.Series(True, index=frame.index)
        for group, sel in (("all", everyone), ("supervision=weak", weak)):
            cell = rows[(rows["y"] == y) & (rows["group"] == group)].iloc[0]
            expected = spearmanr(noisy[sel].astype(float), frame.loc[sel, f"metrics.{y}"])
            assert cell["rho"] == pytest.approx(expected.statistic, abs=1e-12)
            assert cell["n"] == sel.sum()
    helped = rows[(rows["y"] == "transfer/ood2_a/gbt/mae") & (rows["group"] == "all")]
    assert helped["rho"].iat[0] < -0.3
    constant = frame.assign(**{"params.train.input_noise": "False"})
    table = transfer_correlations(constant, trial_groups(constant), n_boot=0)
    assert "train.input_noise" not in set(table["x"])  # a study without a noise axis


def test_per_factor_transfer_is_split_by_input_noise_when_it_varies() -> None:
    frame = finished(planted_results(40, seed=3))
    fig = per_factor_transfer(frame)
    assert fig is not None
    assert fig.axes[0].get_legend_handles_labels()[1] == [
        "without input noise",
        "with input noise",
    ]
    points = fig.axes[0].collections  # per level, one scatter per factor
    assert sum(len(c.get_offsets()) for c in points) == len(FACTORS) * len(frame)
    plain = per_factor_transfer(frame.assign(**{"params.train.input_noise": "True"}))
    assert plain is not None and plain.axes[0].get_legend() is None


def test_the_reconstruction_figure_plots_the_lasso_d_score_by_model(schott: pd.DataFrame) -> None:
    frame = schott.assign(**{"metrics.eval/recon_heldout": schott["metrics.eval/recon"] + 50.0})
    column, label = reconstruction_x(frame)
    assert column == "metrics.dis/dci_lasso_d" and label.startswith("dis/dci_lasso_d")
    fig = reconstruction_splits(frame)
    assert fig is not None
    ax = fig.axes[0]
    assert ax.get_xlabel() == label and ax.get_title() == "schott_extrapolation"
    drawn = np.concatenate([c.get_offsets()[:, 0] for c in ax.collections[1:]])
    sub = frame[frame["params.split"] == "schott_extrapolation"]
    assert sorted(drawn) == sorted(np.repeat(sub["metrics.dis/dci_lasso_d"].to_numpy(), 2))
    models = ax.get_legend_handles_labels()[1]
    assert {"beta_vae beta=1.0", "beta_vae beta=4.0", "beta_vae beta=16.0"} <= set(models)
    gbt = frame.drop(columns="metrics.dis/dci_lasso_d")
    column, label = reconstruction_x(gbt)
    assert column == "metrics.dis/dci_d" and "dis/dci_lasso_d was not logged" in label


def test_rho_of_d_with_held_out_nll_per_split_beside_transfer(schott: pd.DataFrame) -> None:
    frame = transfer_by_cell(schott)
    table = transfer_correlations(frame, trial_groups(frame), n_boot=20, min_trials=3)
    nll = table[table["y"].str.startswith("eval/recon_heldout")]
    assert set(nll["y"]) == {
        f"eval/recon_heldout@{d}:{s}"
        for d in ("dsprites", "shapes3d")
        for s in ("schott_random", "schott_extrapolation")
    }
    assert not nll["x"].str.endswith("_heldout").any()
    cell = frame["cell"] == "shapes3d:schott_extrapolation"
    row = nll[
        (nll["x"] == "dis/dci_lasso_d")
        & (nll["y"] == "eval/recon_heldout@shapes3d:schott_extrapolation")
        & (nll["group"] == "all")
    ].iloc[0]
    expected = spearmanr(
        frame.loc[cell, "metrics.dis/dci_lasso_d"], frame.loc[cell, "metrics.eval/recon_heldout"]
    )
    assert row["n"] == cell.sum() and row["rho"] == pytest.approx(expected.statistic, abs=1e-12)
    assert table["y"].str.startswith("transfer/test@").any()  # beside the transfer scores


def test_analyze_writes_the_r2_tables_only_for_a_study_of_schott_splits(tmp_path: Path) -> None:
    schott = schott_results(betas=(1.0, 4.0), datasets=("dsprites",))
    analysis = compute(schott, Settings(n_boot=10, min_trials=3))
    files = {f.name for f in write_analysis(analysis, tmp_path, study="s", planned_trials=12)}
    assert {R2_FILE, MODULARITY_FILE, R2_FIGURE} <= files
    written = pd.read_csv(tmp_path / R2_FILE)
    pd.testing.assert_frame_equal(written, r2_table(schott), check_dtype=False)
    report = (tmp_path / "report.html").read_text()
    assert "Schott et al. 2022" in report and "Modularity" in report
    said = format_summary(StudyAnalysis(analysis, tmp_path, [], None))
    assert f"{R2_FILE} ({len(written)} rows)" in said and "schott_extrapolation" in said
    assert "eval/recon_heldout@schott_random" in said  # rho(D, NLL) beside transfer

    # The same runs on splits of no Schott kind: no R^2 table, nor one left from before.
    iid = schott.assign(**{"params.split": np.where(schott.index % 2, "iid", "montero_range")})
    other = compute(iid, Settings(n_boot=10, min_trials=3))
    files = {f.name for f in write_analysis(other, tmp_path, study="p", planned_trials=12)}
    assert not {R2_FILE, MODULARITY_FILE, R2_FIGURE} & files
    assert not (tmp_path / R2_FILE).exists() and not (tmp_path / R2_FIGURE).exists()
    assert "R&sup2; per model and split" not in (tmp_path / "report.html").read_text()
    assert R2_FILE not in format_summary(StudyAnalysis(other, tmp_path, [], None))


def test_the_r2_figure_draws_each_models_seed_mean_per_split(schott: pd.DataFrame) -> None:
    table = r2_table(schott)
    fig = r2_by_split(table)
    assert fig is not None
    ax = fig.axes[0]
    assert ax.get_title() == "dsprites / gbt"
    means = [line.get_ydata() for line in ax.lines if line.get_marker() == "o"]
    sub = table[(table["scenario"] == "test") & (table["dataset"] == "dsprites")]
    expected = sub.loc[sub["probe"] == "gbt", "r2"]
    assert sorted(np.concatenate(means)) == pytest.approx(sorted(expected), rel=1e-12)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [f"beta_vae beta={b}" for b in ("1.0", "4.0", "16.0")]  # numbers as numbers
    assert r2_by_split(r2_table(planted_results(20))) is None


def test_montero2022_runs_enter_the_r2_table_as_the_encoder_test() -> None:
    # Montero et al. 2022's encoder test: readouts fit on training combinations, R^2 per
    # factor on the held-out ones; the table orders r2e -> r2r -> extrp, after no Schott split.
    splits = ("montero2022_extrp", "montero2022_r2e", "iid")
    frame = schott_results(betas=(1.0, 4.0), splits=splits, datasets=("shapes3d",))
    table = r2_table(frame)
    assert list(pd.unique(table["split"])) == ["montero2022_r2e", "montero2022_extrp"]
    values = frame["metrics.transfer/test/mlp/r2/shape"]
    for (beta, split, dataset), want in _expected(frame, values).iterrows():
        if split == "iid":
            continue
        row = _row(table, beta, split, dataset, scenario="test", probe="mlp")
        assert row["r2/shape"] == pytest.approx(want["mean"], rel=1e-12)
    fig = r2_by_split(table)
    assert fig is not None
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["r2e", "extrp"]
