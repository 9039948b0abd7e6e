"""Findings a reviewer can trust, on planted tables with known answers: a pooled correlation
carried entirely by a design factor is `confounded` (naming it), a true within-group effect is
`yes`, a family of null pairs leaves no more false `yes` than Holm and Benjamini-Hochberg
allow, the partial rank test holds its level, and an inconclusive Finding says its power."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from raystudy.analysis.core.groups import trial_groups
from raystudy.analysis.findings.dittadi import DIS_OOD1, WEAK_RAISES_DIS
from raystudy.analysis.findings.rows import (
    POOLED_ONLY,
    UNDETERMINED,
    adjusted_family,
    finding_row,
)
from raystudy.analysis.findings.text import finding_lines
from raystudy.analysis.pipeline import Settings, compute
from raystudy.analysis.stats.design import Adjusted, adjusted_spearman, design_factors, dummies
from raystudy.analysis.stats.inference import partial_spearman, power, rho_test
from raystudy.analysis.tables.correlations import correlation_table

DCI = "metrics.dis/dci_d"
OOD1 = "metrics.transfer/ood1_a/gbt/mae"


def _design(seeds: int) -> pd.DataFrame:
    """A grid as a laptop study has it: 2 objectives x 2 betas x noise on/off x seeds."""
    rows = [
        {
            "status": "FINISHED",
            "params.model.objective": objective,
            "params.model.beta": beta,
            "params.train.input_noise": noise,
            "params.split": "dittadi_hues",
            "params.seed": str(seed),
        }
        for objective in ("beta_vae", "ada_gvae")
        for beta in ("1.0", "4.0")
        for noise in ("False", "True")
        for seed in range(seeds)
    ]
    frame = pd.DataFrame(rows)
    frame["tags.mlflow.runName"] = [f"{i:03d}" for i in range(len(frame))]
    return frame


def _confounded(seeds: int = 6, seed: int = 0) -> pd.DataFrame:
    """DCI-D and the OOD1 error both move with supervision, and with nothing else in common:
    inside either supervision group they are independent."""
    rng = np.random.default_rng(seed)
    frame = _design(seeds)
    weak = (frame["params.model.objective"] == "ada_gvae").to_numpy()
    frame[DCI] = 0.05 + 0.4 * weak + 0.05 * rng.uniform(size=len(frame))
    frame[OOD1] = 0.3 - 0.1 * weak + 0.02 * rng.normal(size=len(frame))
    frame["metrics.dis/mig"] = frame[DCI] * 0.5
    return frame


def _within(seeds: int = 6, seed: int = 0) -> pd.DataFrame:
    """The OOD1 error falls with DCI-D inside every design cell (seed-to-seed variation)."""
    rng = np.random.default_rng(seed)
    frame = _design(seeds)
    weak = (frame["params.model.objective"] == "ada_gvae").to_numpy()
    dci = 0.05 + 0.2 * weak + 0.15 * rng.uniform(size=len(frame))
    frame[DCI] = dci
    frame[OOD1] = 0.3 - 0.5 * dci + 0.01 * rng.normal(size=len(frame))
    frame["metrics.dis/mig"] = dci * 0.5
    return frame


def _only(findings: pd.DataFrame, question: str) -> pd.Series:
    rows = findings[findings["question"] == question]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def test_a_pooled_correlation_carried_by_supervision_is_confounded_and_names_it() -> None:
    analysis = compute(_confounded(), Settings(n_boot=200))
    row = _only(analysis.findings, DIS_OOD1)
    # pooled: strongly negative, its interval and its Holm p-value say so
    assert row["value"] < -0.6 and row["ci_high"] < 0 and row["p_holm"] < 0.001
    # with the grid held fixed there is nothing left, and the verdict says so
    assert row["measured"] == POOLED_ONLY
    assert row["carried_by"] == "supervision"
    assert set(row["held_fixed"].split(", ")) == {
        "model.objective",
        "model.beta",
        "train.input_noise",
    }
    assert row["within_p_holm"] >= 0.05 and row["within_ci_low"] < 0 < row["within_ci_high"]
    line = next(li for li in finding_lines(analysis.findings) if "OOD1" in li)
    assert " Confounded: " in line and "carried by supervision" in line
    assert f"{row['value']:+.2f}" in line and f"{row['within_value']:+.2f}" in line
    # the row is correlations.csv's, which carries the held-fixed numbers and q-values too
    cell = analysis.correlations[
        (analysis.correlations["x"] == "dis/dci_d")
        & (analysis.correlations["y"] == "transfer/ood1_a/gbt/mae")
        & (analysis.correlations["group"] == "all")
    ].iloc[0]
    assert cell["within_rho"] == pytest.approx(row["within_value"])
    assert cell["q_bh"] < 0.05 and cell["within_q_bh"] >= 0.05
    # never "yes" to it, under any seed of the same design
    for seed in range(1, 6):
        again = _only(compute(_confounded(seed=seed), Settings(n_boot=50)).findings, DIS_OOD1)
        assert again["measured"] != again["yes_if"]


def test_a_true_within_group_effect_is_yes() -> None:
    analysis = compute(_within(), Settings(n_boot=200))
    row = _only(analysis.findings, DIS_OOD1)
    assert row["measured"] == row["yes_if"]
    assert row["within_value"] < -0.5 and row["within_ci_high"] < 0
    assert row["within_p_holm"] < 0.05 and row["carried_by"] == ""


def test_weak_supervision_aliased_with_noise_is_never_a_yes() -> None:
    """Every weak model had input noise and no unsupervised one did: the difference cannot
    be told from noise's, so the Finding is confounded, naming noise, however large."""
    rng = np.random.default_rng(3)
    frame = _design(6)
    weak = (frame["params.model.objective"] == "ada_gvae").to_numpy()
    frame["params.train.input_noise"] = np.where(weak, "True", "False")
    frame["params.model.k"] = np.where(weak, "1", None)  # only Ada-GVAE reads k: not a confounder
    frame[DCI] = 0.1 + 0.3 * weak + 0.05 * rng.normal(size=len(frame))
    row = _only(compute(frame, Settings(n_boot=100)).findings, WEAK_RAISES_DIS)
    assert row["p_holm"] < 0.001 and row["measured"] == POOLED_ONLY
    assert row["carried_by"] == "train.input_noise" and np.isnan(row["within_value"])
    # the same trials with noise crossed with supervision: a yes, beta held fixed
    frame["params.train.input_noise"] = np.tile(["True", "False"], len(frame) // 2)
    row = _only(compute(frame, Settings(n_boot=100)).findings, WEAK_RAISES_DIS)
    assert row["measured"] == row["yes_if"]
    assert set(row["held_fixed"].split(", ")) == {"model.beta", "train.input_noise"}


def test_weak_supervision_carried_by_beta_is_confounded() -> None:
    """Weak models mostly at beta 4, unsupervised at beta 1, a quarter of both at beta 2;
    DCI-D moves with beta alone: at equal beta the groups do not differ. Over five planted
    tables (seeded), the held-fixed test errs at its 5% level at most once."""
    verdicts = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        frame = _design(6)
        weak = (frame["params.model.objective"] == "ada_gvae").to_numpy()
        frame["params.model.beta"] = np.where(weak, "4.0", "1.0")
        frame.loc[frame.index[::4], "params.model.beta"] = "2.0"
        beta = frame["params.model.beta"].astype(float).to_numpy()
        frame[DCI] = 0.1 * beta + 0.05 * rng.normal(size=len(frame))
        row = _only(compute(frame, Settings(n_boot=50)).findings, WEAK_RAISES_DIS)
        assert row["p_holm"] < 0.001  # pooled, the groups differ by 0.2
        verdicts.append(row["measured"])
        if row["measured"] == POOLED_ONLY:
            assert row["carried_by"] == "model.beta"
            assert row["within_ci_low"] < 0 < row["within_ci_high"]
    assert verdicts.count(POOLED_ONLY) >= 4, verdicts


def _null_rows(n: int, pairs: int, rng: np.random.Generator) -> list[dict[str, object]]:
    """Findings of `pairs` independent (x, y) pairs over the same design: every H0 is true."""
    frame = _design(n // 8)
    covariates, held = dummies(frame, design_factors(frame))
    rows = []
    for i in range(pairs):
        x, y = rng.normal(size=len(frame)), rng.normal(size=len(frame))
        pooled = rho_test(float(stats.spearmanr(x, y).statistic), len(frame))
        within = partial_spearman(x, y, covariates)
        rows.append(
            finding_row(
                "test",
                f"null_{i}",
                f"Null pair {i}?",
                "rho",
                "< 0",
                "none",
                x="x",
                y="y",
                group="all",
                pooled=pooled,
                within=Adjusted(within, held, ""),
                n_seeds=n // 8,
            )
        )
    return rows


def test_thirty_null_pairs_leave_at_most_the_expected_false_yes() -> None:
    rng = np.random.default_rng(11)
    families, raw, adjusted = 40, 0, 0
    families_with_a_false_yes = 0
    for _ in range(families):
        table = adjusted_family(_null_rows(48, 30, rng))
        raw += int((table["within_p"] < 0.05).sum())
        yes = int((table["measured"] != UNDETERMINED).sum())
        adjusted += yes
        families_with_a_false_yes += yes > 0
    # uncorrected, ~5% of the 1,200 tests come out "significant"; Holm keeps the chance of
    # any false yes in a family near 5% (at most 4 of 40 families here, seeded)
    assert 30 <= raw <= 90
    assert families_with_a_false_yes <= 4 and adjusted <= 5


def test_benjamini_hochberg_q_values_of_a_null_table() -> None:
    rng = np.random.default_rng(5)
    frame = _design(6)
    xs = [f"metrics.dis/null{i}" for i in range(6)]
    ys = [f"metrics.transfer/s{i}/gbt/mae" for i in range(5)]
    for column in (*xs, *ys):
        frame[column] = rng.normal(size=len(frame))
    table = correlation_table(frame, xs, ys, trial_groups(frame), n_boot=50)
    assert len(table) == 30
    # q >= p always; BH over a null family: no discovery at 5%
    assert (table["q_bh"] >= table["p_value"] - 1e-12).all()
    assert (table["q_bh"] >= 0.05).all() and (table["within_q_bh"] >= 0.05).all()
    expected = stats.false_discovery_control(table["p_value"].to_numpy(), method="bh")
    assert np.allclose(table["q_bh"].to_numpy(), expected)


def test_the_partial_rank_test_holds_its_level_under_the_null() -> None:
    """Fisher's z with Bonett & Wright's variance and k design dummies: about 5% of null
    pairs come out at p < 0.05 (here 1,000 pairs of 32 trials, 4 dummies)."""
    rng = np.random.default_rng(7)
    frame = _design(4)
    covariates, _ = dummies(frame, design_factors(frame))
    assert covariates.shape == (32, 3)
    # design effects on both, which the dummies must remove
    shift = covariates @ np.array([2.0, -1.0, 1.5])
    p = np.array(
        [
            partial_spearman(
                shift + rng.normal(size=32), shift + rng.normal(size=32), covariates
            ).p_value
            for _ in range(1000)
        ]
    )
    assert 0.03 <= float((p < 0.05).mean()) <= 0.08


def test_an_inconclusive_finding_says_what_it_could_detect_and_the_seeds_it_needs() -> None:
    rng = np.random.default_rng(2)
    frame = _design(2)  # 16 trials: too few for a small effect
    weak = (frame["params.model.objective"] == "ada_gvae").to_numpy()
    dci = 0.05 + 0.2 * weak + 0.15 * rng.uniform(size=len(frame))
    frame[DCI] = dci
    frame[OOD1] = 0.3 - 0.05 * dci + 0.02 * rng.normal(size=len(frame))
    frame["metrics.dis/mig"] = dci
    findings = compute(frame, Settings(n_boot=100)).findings
    row = _only(findings, DIS_OOD1)
    assert row["measured"] == UNDETERMINED
    assert abs(row["within_value"]) < row["detectable"] < 1
    assert row["more_seeds"] >= 1
    line = next(li for li in finding_lines(findings) if "OOD1" in li)
    assert f"|rho| >= {row['detectable']:.2f}" in line
    assert f"~{row['more_seeds']:.0f} more seeds" in line
    # the numbers are the formula's: n = 16 with k = 3 dummies, at the level 0.05 / m, m the
    # tests of the row's family
    family = findings[findings["family"] == row["family"]]
    k, n, m = 3, 16, int(family["within_p"].notna().sum())
    r = row["within_value"]
    se = math.sqrt((1 + r**2 / 2) / (n - 3 - k))
    need = stats.norm.ppf(1 - 0.05 / m / 2) + stats.norm.ppf(0.8)
    assert row["detectable"] == pytest.approx(math.tanh(need * se))
    trials = 3 + k + (n - 3 - k) * (need * se / math.atanh(abs(r))) ** 2
    assert row["more_seeds"] == math.ceil((math.ceil(trials) - n) / (n / 2))
    # and fall as the study grows
    small = power(rho_test(-0.2, 16, 3), correlation=True)
    large = power(rho_test(-0.2, 160, 3), correlation=True)
    assert large.detectable < small.detectable / 2.5
    assert small.trials_needed == pytest.approx(large.trials_needed, rel=0.05)


def test_adjusted_spearman_without_design_is_spearman() -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=30), "b": rng.normal(size=30)})
    frame["b"] += frame["a"]
    got = adjusted_spearman(frame, "a", "b")
    assert got.held_fixed == () and got.carried_by == ""
    assert got.estimate.value == pytest.approx(stats.spearmanr(frame["a"], frame["b"]).statistic)


def test_a_sampled_axis_is_held_fixed_by_its_ranks_and_can_carry_a_correlation() -> None:
    """An Optuna-like study: beta drawn from a continuous range, one value per trial. One
    dummy per value would leave no degrees of freedom; its ranks hold it fixed in one column,
    and a correlation that beta alone makes is confounded by it."""
    rng = np.random.default_rng(8)
    n = 40
    beta = np.exp(rng.uniform(0.0, np.log(16.0), size=n))
    frame = pd.DataFrame(
        {
            "status": "FINISHED",
            "tags.mlflow.runName": [f"{i:03d}" for i in range(n)],
            "params.model.objective": "beta_vae",
            "params.model.beta": [f"{b:.6g}" for b in beta],
            "params.seed": [str(i) for i in range(n)],
            "params.split": "dittadi_hues",
        }
    )
    covariates, held = dummies(frame, design_factors(frame))
    assert held == ("model.beta",) and covariates.shape == (n, 1)
    frame[DCI] = np.log(beta) + 0.3 * rng.normal(size=n)
    frame[OOD1] = -np.log(beta) + 0.3 * rng.normal(size=n)
    frame["metrics.dis/mig"] = frame[DCI]
    row = _only(compute(frame, Settings(n_boot=100)).findings, DIS_OOD1)
    assert row["value"] < -0.7 and row["p_holm"] < 0.001
    assert row["measured"] == POOLED_ONLY and row["carried_by"] == "model.beta"


@pytest.mark.parametrize("size", [1, 2, 7, 40])
def test_holm_and_bh_agree_with_statsmodels_multipletests(size: int) -> None:
    from statsmodels.stats.multitest import multipletests

    from raystudy.analysis.stats.inference import benjamini_hochberg, holm

    rng = np.random.default_rng(size)
    p = rng.uniform(0, 0.2, size) ** rng.uniform(0.5, 2, size)
    p[: size // 3] = p[size - size // 3 :] if size > 2 else p[: size // 3]  # ties
    for ours, method in ((holm, "holm"), (benjamini_hochberg, "fdr_bh")):
        np.testing.assert_allclose(ours(p), multipletests(p, method=method)[1], rtol=1e-12)
    with_nan = np.append(p, np.nan)
    assert np.isnan(holm(with_nan)[-1])
    np.testing.assert_allclose(holm(with_nan)[:-1], holm(p), rtol=1e-12)
