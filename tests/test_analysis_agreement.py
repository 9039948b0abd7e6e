"""Locatello et al. (2019)'s evidence from a study: the metrics' agreement (Fig. 2) and each
metric's spread within vs between objectives (Figs. 3-4), against direct computations."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from planted_tables import planted_results
from scipy.stats import spearmanr

from raystudy.analysis.core.results import finished
from raystudy.analysis.pipeline import (
    AGREEMENT_FILE,
    SPREAD_FILE,
    Settings,
    compute,
    write_analysis,
)
from raystudy.analysis.tables.agreement import headline_columns, metric_agreement, objective_spread


def test_agreement_is_spearman_of_each_pair_of_headline_metrics() -> None:
    frame = finished(planted_results(60, seed=3))
    table = metric_agreement(frame, [("all", frame.index)], n_boot=50, min_trials=5)
    names = ["dis/beta_vae", "dis/factor_vae", "dis/mig", "dis/dci_d", "dis/modularity", "dis/sap"]
    # DCI's completeness/informativeness and Modularity's explicitness are not headline scores.
    assert list(pd.unique(table["x"])) == names and list(pd.unique(table["y"])) == names
    for x, y in itertools.product(names, names):
        row = table[(table["x"] == x) & (table["y"] == y)].iloc[0]
        expected = spearmanr(frame[f"metrics.{x}"], frame[f"metrics.{y}"]).statistic
        assert row["n"] == 60 and row["rho"] == pytest.approx(expected, abs=1e-12)
        assert row["ci_low"] <= row["rho"] <= row["ci_high"]
    assert "metrics.dis/dci_c" not in headline_columns(frame)


def test_agreement_needs_two_metrics() -> None:
    frame = finished(planted_results(20))[["status", "metrics.dis/mig", "params.model.objective"]]
    assert metric_agreement(frame, [("all", frame.index)], n_boot=10).empty


def test_spread_is_the_sd_of_objective_means_beside_the_pooled_within_sd() -> None:
    frame = pd.DataFrame(
        {
            "params.model.objective": ["a", "a", "a", "b", "b", "b"],
            "metrics.dis/mig": [0.1, 0.2, 0.3, 0.5, 0.6, 0.7],
            # b is best on average, but one of a's trials beats b's median.
            "metrics.dis/sap": [0.0, 0.1, 0.9, 0.3, 0.4, 0.5],
        }
    )
    spread = objective_spread(frame).set_index("metric")
    mig = spread.loc["dis/mig"]
    assert mig["between_sd"] == pytest.approx(np.std([0.2, 0.6], ddof=1))
    # Residuals +-0.1 and 0 in each objective; 6 trials - 2 means = 4 degrees of freedom.
    assert mig["within_sd"] == pytest.approx(np.sqrt(4 * 0.01 / 4))
    assert (mig["best_objective"], mig["best_beaten_by"]) == ("b", "0/3")
    sap = spread.loc["dis/sap"]
    assert (sap["best_objective"], sap["best_beaten_by"]) == ("b", "1/3")
    assert sap["within_sd"] > sap["between_sd"]  # the seeds move it more than the objective
    assert objective_spread(frame.assign(**{"params.model.objective": "a"})).empty
    # An infinite score counts as missing, not as a value that makes every sd infinite.
    inf = frame.assign(**{"metrics.dis/mig": [0.1, 0.2, 0.3, 0.5, 0.6, np.inf]})
    row = objective_spread(inf).set_index("metric").loc["dis/mig"]
    assert row["trials"] == 5 and np.isfinite(row["between_sd"]) and np.isfinite(row["within_sd"])


def test_analyze_writes_the_agreement_tables_and_figures_only_where_they_apply(
    tmp_path: Path,
) -> None:
    planted = planted_results(36)
    analysis = compute(planted, Settings(n_boot=10, min_trials=3))
    files = {f.name for f in write_analysis(analysis, tmp_path, study="s", planned_trials=36)}
    figures = {"metric_agreement.png", "disentanglement_by_objective.png"}
    assert {AGREEMENT_FILE, SPREAD_FILE} | figures <= files
    written = pd.read_csv(tmp_path / SPREAD_FILE)
    assert len(written) == 6 and set(written["objectives"]) == {6}
    assert "Locatello et al. 2019, Fig. 2" in (tmp_path / "report.html").read_text()

    # One objective and one metric: neither table nor figure, nor one left from before.
    single = planted[["run_id", "status", "metrics.dis/mig", "metrics.transfer/exact/gbt/mae"]]
    single = single.assign(**{"params.model.objective": "beta_vae"})
    other = compute(single, Settings(n_boot=10, min_trials=3))
    files = {f.name for f in write_analysis(other, tmp_path, study="p", planned_trials=36)}
    assert not ({AGREEMENT_FILE, SPREAD_FILE} | figures) & files
    assert not (tmp_path / AGREEMENT_FILE).exists()
    assert not (tmp_path / "metric_agreement.png").exists()


def test_one_supervision_type_is_not_drawn_again_beside_all() -> None:
    from raystudy.analysis.core.groups import trial_groups, with_supervision
    from raystudy.analysis.figures.models import agreement_heatmaps

    frame = with_supervision(finished(planted_results(60, seed=3)))

    def titles(frame: pd.DataFrame) -> list[str]:
        table = metric_agreement(frame, trial_groups(frame), n_boot=20, min_trials=5)
        fig = agreement_heatmaps(table)
        assert fig is not None
        return [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]

    kinds = frame["supervision"].unique()
    assert len(kinds) >= 2, kinds  # the planted study mixes objectives
    assert titles(frame)[0] == "all (n=60)" and len(titles(frame)) == 1 + len(kinds)
    only = frame[frame["supervision"] == kinds[0]]
    assert titles(only) == [f"all: supervision={kinds[0]} (n={len(only)})"]
