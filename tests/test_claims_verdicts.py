"""The papers' claims answered: equivalence tests for claims of no effect, power from the
verdict's own test, families that keep a paper's primary claims apart, orderings, and the
claims table that `raystudy analyze` writes as claims.csv."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from raystudy.analysis.claims.registry import all_claims
from raystudy.analysis.findings.claims import claim_counts, claims_table
from raystudy.analysis.findings.orderings import DATASET_ORDER, GAP_ORDER, GT_LESS_AFFECTED
from raystudy.analysis.findings.rows import (
    AGREES,
    DISAGREES,
    EQUIVALENT,
    INCONCLUSIVE,
    MEASURED,
    NOT_TESTABLE,
    POSITIVE,
    UNDETERMINED,
    adjusted_family,
    finding_row,
)
from raystudy.analysis.stats.inference import (
    ALPHA,
    Estimate,
    equivalence_p,
    equivalence_reach,
    power,
)
from tests.planted_papers import MONTERO2021_SPLITS, montero2021_planted, schott_planted
from tests.test_analysis_findings_papers import analyse, of


def _paired(values: np.ndarray) -> Estimate:
    from raystudy.analysis.findings.shared import paired_estimate

    return paired_estimate(values)


def test_equivalence_is_shown_for_a_null_effect_and_refused_near_the_margin() -> None:
    rng = np.random.default_rng(0)
    null = _paired(rng.normal(0.0, 0.02, 40))
    assert equivalence_p(null, 0.1, correlation=False) < 1e-6
    near = _paired(rng.normal(0.09, 0.02, 40))
    assert equivalence_p(near, 0.1, correlation=False) > 0.05
    # a correlation is tested on Fisher's z: rho 0 from n = 400 is within 0.3, from n = 8 not
    from raystudy.analysis.stats.inference import rho_test

    assert equivalence_p(rho_test(0.0, 400), 0.3, correlation=True) < 1e-6
    assert equivalence_p(rho_test(0.0, 8), 0.3, correlation=True) > 0.2
    # the margin this n confirms shrinks with n
    assert equivalence_reach(rho_test(0.0, 400), correlation=True) < equivalence_reach(
        rho_test(0.0, 40), correlation=True
    )


@pytest.mark.parametrize("dof", [2.0, 5.0, 30.0, math.inf])
def test_an_effect_beyond_the_detectable_one_is_always_significant(dof: float) -> None:
    # the power statement and the verdict come from the same test: at the level alpha / m,
    # an observed effect larger than the detectable one has p below that level
    from scipy import stats

    m = 45
    for value in (0.5, 1.0, 3.0):
        se = 0.2
        p = 2 * (stats.t.sf(value / se, dof) if math.isfinite(dof) else stats.norm.sf(value / se))
        estimate = Estimate(value, math.nan, math.nan, p, se, 10, 0, dof)
        got = power(estimate, correlation=False, alpha=ALPHA / m)
        if value > got.detectable:
            assert p < ALPHA / m
        assert got.trials_needed >= 10 or value > got.detectable


def _row(claim_id: str | None, value: float, se: float, n: int, paper_id: str) -> dict:
    p = 2 * float(__import__("scipy").stats.t.sf(abs(value) / se, n - 1))
    estimate = Estimate(value, value - 2 * se, value + 2 * se, p, se, n, 0, n - 1.0)
    return finding_row(
        paper_id,
        "q",
        "Question?",
        "difference",
        "> 0",
        "" if claim_id else "words",
        x="x",
        y="y",
        group="all",
        pooled=estimate,
        n_seeds=n,
        claim_id=claim_id,
    )


def test_a_claim_of_no_effect_agrees_only_when_equivalence_is_shown() -> None:
    claimed = "montero2021.element_generalises"  # a claim of no effect, margin 0.10
    table = adjusted_family(
        [
            _row(claimed, 0.001, 0.005, 30, "montero2021"),  # within the margin
            _row(claimed, 0.30, 0.02, 30, "montero2021"),  # an effect beyond it
            _row(claimed, 0.05, 0.2, 5, "montero2021"),  # too few to tell
        ]
    )
    assert list(table["paper_answer"]) == [EQUIVALENT] * 3
    assert list(table["measured"]) == [EQUIVALENT, POSITIVE, UNDETERMINED]
    assert list(table["agreement"]) == [AGREES, DISAGREES, INCONCLUSIVE]
    # the open row says the margin this n could confirm, wider than the claim's
    assert (
        table.loc[2, "detectable"] > 0.10 and "wider than the claim's margin" in table.loc[2, "why"]
    )
    assert set(table["measured"]) <= set(MEASURED) and "no" not in set(table["agreement"])


def test_secondary_rows_do_not_drown_a_papers_primary_claim() -> None:
    primary = _row("schott2022.struggle_composition", 0.5, 0.12, 5, "schott2022")
    alone = adjusted_family([primary])
    crowded = adjusted_family(
        [primary, *(_row(None, 0.01, 0.1, 5, "schott2022") for _ in range(40))]
    )
    assert alone.loc[0, "family"] == "schott2022 primary"
    assert crowded.loc[0, "p_holm"] == pytest.approx(alone.loc[0, "p_holm"])
    assert crowded.loc[0, "agreement"] == AGREES
    # in one family of 41 tests the same row would not have survived Holm's first step
    assert alone.loc[0, "p_value"] * 41 > ALPHA


def test_montero_gap_ordering_agrees_when_planted_in_order_and_disagrees_reversed() -> None:
    ordered = analyse(montero2021_planted(seed=0)).rows  # gaps 0 < 40 < 400 nats
    rows = of(ordered, GAP_ORDER)
    assert len(rows) == 2 and (rows["claim_id"] == "montero2021.gap_ordering").all()
    assert (rows["value"] > 0).all() and (rows["p_value"] < 1e-6).all()
    reversed_gaps = dict(zip(MONTERO2021_SPLITS, (400.0, 40.0, 0.0), strict=True))
    table = adjusted_family(
        of(analyse(montero2021_planted(gaps=reversed_gaps, seed=1)).rows, GAP_ORDER).to_dict(
            "records"
        )
    )
    assert (table["agreement"] == DISAGREES).all()
    gt = of(ordered, GT_LESS_AFFECTED)
    assert len(gt) == 1 and gt.iloc[0]["value"] < 0  # planted gaps 200 against 400


def test_schott_dataset_ordering_follows_the_planted_fall() -> None:
    raw = schott_planted(seed=0)
    r2 = [c for c in raw.columns if c.startswith("metrics.transfer/") and c.endswith("/r2")]
    harder = (raw["params.dataset.name"] == "shapes3d") & (raw["params.split"] != "schott_random")
    raw.loc[harder, r2] -= 0.2
    rows = of(analyse(raw).rows, DATASET_ORDER)
    assert not rows.empty and (rows["claim_id"] == "schott2022.dataset_ordering").all()
    # dSprites' R^2 minus Shapes3D's: the planted 0.2 beside what the datasets differ by
    # already (the same on the random split, where nothing was planted)
    random = raw[raw["params.split"] == "schott_random"]
    column = next(c for c in r2 if "/test/" in c)
    by = random.groupby("params.dataset.name")[column].mean()
    level = float(by["dsprites"] - by["shapes3d"])
    assert rows["value"].to_numpy() == pytest.approx(0.2 + level, abs=0.05)
    assert (rows["p_value"] < 1e-3).all()


def test_claims_table_says_what_each_claim_needs_and_counts_the_agreement() -> None:
    rows = adjusted_family(
        [
            _row("schott2022.struggle_composition", 0.5, 0.05, 10, "schott2022"),
            _row("schott2022.struggle_composition", -0.5, 0.05, 10, "schott2022"),
            _row("montero2021.element_generalises", 0.001, 0.005, 30, "montero2021"),
        ]
    )
    table = claims_table(rows, "schott2022_laptop")
    assert len(table) == len(all_claims()) and table.iloc[0]["paper"] == "schott2022"
    by = table.set_index("claim_id")
    assert by.loc["schott2022.struggle_composition", "agreement"] == DISAGREES  # one row against
    assert by.loc["montero2021.element_generalises", "agreement"] == AGREES
    untested = by.loc["dittadi2021.weak_raises_disentanglement"]
    assert untested["agreement"] == NOT_TESTABLE and "needs" in untested["detail"]
    counts = claim_counts(table)
    assert counts.startswith(f"{len(table)} claims of the papers: 1 agree, 1 disagree")
    assert f"{len(table) - 2} not testable by this study" in counts
    assert claims_table(pd.DataFrame()).eq(NOT_TESTABLE).any(axis=None)


def test_montero_no_dependence_claim_is_asked_of_the_gap_not_the_raw_nll() -> None:
    from raystudy.analysis.findings.montero2021 import DIS_LOWERS_GAP, DIS_LOWERS_HELDOUT

    # planted: D = Phi(u) and the held-out NLL falls with u, so the gap falls with D
    rows = analyse(montero2021_planted(seed=0)).rows
    gap = of(rows, DIS_LOWERS_GAP)
    assert len(gap) == 3 and (gap["claim_id"] == "montero2021.dis_no_effect").all()
    assert (gap["value"] < -0.5).all()
    assert (of(rows, DIS_LOWERS_HELDOUT)["claim_id"] == "").all()
    # with no dependence planted, the gap's rho is small
    flat = of(analyse(montero2021_planted(strength=0.0, seed=2)).rows, DIS_LOWERS_GAP)
    assert (flat["value"].abs() < 0.5).all()
