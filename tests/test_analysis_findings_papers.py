"""Findings rows of Montero et al. 2021 and 2022, Schott et al. 2022 and Locatello et al. 2019
(`raystudy.analysis.findings.table`), against results tables whose answers are planted
(`planted_papers`): each planted effect must be found with its sign, inside
its interval and with a small p-value; a null table must give large p-values; a table that
cannot answer a question must give no row for it. Rank correlations must be the numbers of the
tables `compute` writes, not recomputed ones."""

from __future__ import annotations

import math
import re
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest
from planted_papers import (
    LOCATELLO_METRICS,
    MONTERO2021_SPLITS,
    composition_planted,
    locatello_planted,
    locatello_rho,
    locatello_shares,
    montero2021_planted,
    montero2022_planted,
    schott_planted,
    spearman_of,
)

from raystudy.analysis.core.cells import transfer_by_cell
from raystudy.analysis.core.groups import trial_groups, with_supervision
from raystudy.analysis.core.results import finished
from raystudy.analysis.findings.locatello import (
    HYPERPARAMETER_SHARE,
    METRICS_AGREE,
    OBJECTIVE_SHARE,
    SEED_AND_HYPERPARAMETERS_OUTWEIGH,
)
from raystudy.analysis.findings.montero import SPLIT_KINDS
from raystudy.analysis.findings.montero2021 import (
    COMPOSITION_HELDOUT_ABOVE_TRAINING,
    DIS_LOWERS_HELDOUT,
    GT_HELDOUT_ABOVE_TRAINING,
    HELDOUT_ABOVE_TRAINING,
)
from raystudy.analysis.findings.montero2022 import (
    ENCODER_R2_FALLS,
    RETRAINED_DECODER_LOWERS_HELDOUT,
)
from raystudy.analysis.findings.rows import COLUMNS
from raystudy.analysis.findings.schott import (
    OTHERS_STAY_PREDICTABLE,
    R2_DROPS,
    SUPERVISION_SHRINKS_DROP,
)
from raystudy.analysis.findings.shared import PaperTables, paired_estimate
from raystudy.analysis.findings.table import paper_rows
from raystudy.analysis.tables.agreement import metric_agreement, objective_spread
from raystudy.analysis.tables.composition import composition_table
from raystudy.analysis.tables.correlations import transfer_correlations
from raystudy.analysis.tables.decoder_arms import decoder_test_table
from raystudy.analysis.tables.r2 import r2_modularity, r2_table

N_BOOT = 200


class Analysed(NamedTuple):
    rows: pd.DataFrame
    done: pd.DataFrame
    correlations: pd.DataFrame
    tables: PaperTables


def analyse(raw: pd.DataFrame, *, min_trials: int = 5, n_boot: int = N_BOOT) -> Analysed:
    """The rows of a results table, every input built as `pipeline.compute` builds it."""
    frame = with_supervision(raw.reset_index(drop=True))
    runs = finished(frame)
    done = transfer_by_cell(runs)
    groups = trial_groups(done)
    options = {"n_boot": n_boot, "seed": 0, "min_trials": min_trials}
    correlations = transfer_correlations(done, groups, **options)
    tables = PaperTables(
        r2=r2_table(runs),
        r2_modularity=r2_modularity(runs),
        agreement=metric_agreement(done, groups, **options),
        spread=objective_spread(done),
        decoder_test=decoder_test_table(runs),
        composition=composition_table(runs),
    )
    rows = paper_rows(done, correlations, tables, min_trials=min_trials, n_boot=n_boot)
    return Analysed(pd.DataFrame(rows), done, correlations, tables)


def of(rows: pd.DataFrame, question: str) -> pd.DataFrame:
    return rows[rows["question"] == question] if not rows.empty else rows


def inside(row: pd.Series, planted: float) -> bool:
    return bool(row["ci_low"] <= planted <= row["ci_high"])


# ---------------------------------------------------------------- Montero et al. 2021


@pytest.fixture(scope="module")
def montero2021() -> Analysed:
    return analyse(montero2021_planted(seed=0))


GAPS = dict(zip(MONTERO2021_SPLITS, (0.0, 40.0, 400.0), strict=True))
GT_GAPS = dict(zip(MONTERO2021_SPLITS, (0.0, 20.0, 200.0), strict=True))


def test_montero2021_heldout_gap_per_split_is_found(montero2021: Analysed) -> None:
    rows = of(montero2021.rows, HELDOUT_ABOVE_TRAINING)
    assert sorted(rows["group"]) == [
        f"cell={split}; end-to-end models" for split in sorted(MONTERO2021_SPLITS)
    ]
    done = montero2021.done
    for _, row in rows.iterrows():
        split = row["group"].removeprefix("cell=").split(";")[0]
        trials = done[(done["cell"] == split) & (done["params.model.objective"] != "gt_decoder")]
        train = trials["metrics.eval/recon"]
        gap = (trials["metrics.eval/recon_heldout"] - train) / train
        assert row["value"] == pytest.approx(gap.mean())
        x = "(eval/recon_heldout - eval/recon) / eval/recon"
        assert (row["n"], row["n_seeds"], row["x"]) == (30, 5, x)
        # a contrast within each trial: nothing held fixed, the pooled numbers stand for both
        assert row["within_value"] == row["value"] and row["held_fixed"] == ""
        assert row["paper_id"] == "montero2021" and row["yes_if"] == "> 0"
        if GAPS[split] > 0:
            assert row["value"] > 0 and row["p_value"] < 1e-6
            assert row["paper_answer"] == "> 0"
        else:
            # recombination-to-element: the paper claims no gap, tested for equivalence
            assert row["p_value"] > 0.01 and row["paper_answer"] == "~ 0"
            assert row["claim_id"] == "montero2021.element_generalises"
    kinds = {row["group"]: row["text"] for _, row in rows.iterrows()}
    assert "recombination-to-range" in kinds["cell=montero_range; end-to-end models"]


def test_montero2021_ground_truth_decoder_gap_is_its_own_row(montero2021: Analysed) -> None:
    rows = of(montero2021.rows, GT_HELDOUT_ABOVE_TRAINING)
    assert len(rows) == 3 and (rows["n"] == 5).all()
    for _, row in rows.iterrows():
        split = row["group"].removeprefix("cell=").split(";")[0]
        assert row["group"].endswith("model.objective=gt_decoder")
        assert row["statistic"] == "relative_gap"
        if GT_GAPS[split] > 0:
            assert row["value"] > 0 and row["p_value"] < 0.01
        else:
            assert row["p_value"] > 0.01


def test_montero2021_lasso_d_rho_is_read_from_correlations(montero2021: Analysed) -> None:
    rows = of(montero2021.rows, DIS_LOWERS_HELDOUT)
    planted = spearman_of(-1.0 / math.sqrt(2.0))
    assert len(rows) == 3
    table = montero2021.correlations
    for _, row in rows.iterrows():
        # the ground-truth decoder (D near 1) is left out: Fig. 3 correlates end-to-end models
        assert (row["x"], row["group"], row["n"]) == (
            "dis/dci_lasso_d",
            "supervision=unsupervised",
            30,
        )
        source = table[
            (table["x"] == row["x"]) & (table["y"] == row["y"]) & (table["group"] == row["group"])
        ]
        assert len(source) == 1
        source = source.iloc[0]
        for ours, theirs in (("value", "rho"), ("ci_low", "ci_low"), ("ci_high", "ci_high")):
            assert row[ours] == source[theirs]
        assert row["p_value"] == source["p_value"]
        assert row["within_value"] == pytest.approx(source["within_rho"])
        assert row["within_p"] == pytest.approx(source["within_p"])
        assert row["held_fixed"] == "model.beta, model.gamma"
        assert row["value"] < 0 and row["p_value"] < 0.01 and row["yes_if"] == "< 0"
        assert inside(row, planted), (row["y"], row["ci_low"], row["ci_high"], planted)
    assert sorted(rows["y"]) == sorted(f"eval/recon_heldout@{s}" for s in MONTERO2021_SPLITS)


def test_montero2021_null_table_gives_large_p_values() -> None:
    zero = dict.fromkeys(MONTERO2021_SPLITS, 0.0)
    rows = analyse(montero2021_planted(gaps=zero, gt_gaps=zero, strength=0.0, seed=3)).rows
    for question in (HELDOUT_ABOVE_TRAINING, DIS_LOWERS_HELDOUT, GT_HELDOUT_ABOVE_TRAINING):
        found = of(rows, question)
        assert len(found) == 3
        assert (found["p_value"] > 0.01).all(), found[["group", "p_value"]]


def test_montero2021_questions_without_their_trials_have_no_row() -> None:
    raw = montero2021_planted(seed=0)
    no_gt = analyse(raw[raw["params.model.objective"] != "gt_decoder"]).rows
    assert of(no_gt, GT_HELDOUT_ABOVE_TRAINING).empty
    assert len(of(no_gt, HELDOUT_ABOVE_TRAINING)) == 3
    # without any gt_decoder trial every trial is unsupervised: the group is `all`
    assert set(of(no_gt, DIS_LOWERS_HELDOUT)["group"]) == {"all"}
    too_few = analyse(raw, min_trials=31).rows  # 30 end-to-end trials per split
    for question in (HELDOUT_ABOVE_TRAINING, DIS_LOWERS_HELDOUT, GT_HELDOUT_ABOVE_TRAINING):
        assert of(too_few, question).empty
    unheld = analyse(raw.drop(columns="metrics.eval/recon_heldout")).rows
    for question in (HELDOUT_ABOVE_TRAINING, DIS_LOWERS_HELDOUT, GT_HELDOUT_ABOVE_TRAINING):
        assert of(unheld, question).empty
    gbt_only = of(analyse(raw.drop(columns="metrics.dis/dci_lasso_d")).rows, DIS_LOWERS_HELDOUT)
    assert len(gbt_only) == 3 and set(gbt_only["x"]) == {"dis/dci_d"}
    assert all("no dis/dci_lasso_d logged" in text for text in gbt_only["text"])


def test_montero2021_composition_rows_carry_table1() -> None:
    gaps = dict(zip(MONTERO2021_SPLITS, (-20.0, 300.0, 3000.0), strict=True))
    rows = of(
        analyse(composition_planted(gaps=gaps, seed=0)).rows, COMPOSITION_HELDOUT_ABOVE_TRAINING
    )
    assert len(rows) == 3
    for _, row in rows.iterrows():
        split = row["group"].removeprefix("cell=")
        assert inside(row, gaps[split]) and row["p_value"] < 0.01
        assert np.sign(row["value"]) == np.sign(gaps[split])
    paper = dict(zip(rows["group"], rows["paper"], strict=True))
    assert "19138.82" in paper["cell=montero_extrapolation"]
    assert "+19107.09" in paper["cell=montero_extrapolation"]
    assert (
        paper["cell=montero_element"].startswith("no") and "-22.83" in paper["cell=montero_element"]
    )
    other = composition_planted(gaps=gaps, seed=0).assign(**{"params.dataset.name": "shapes3d"})
    rows = of(analyse(other).rows, COMPOSITION_HELDOUT_ABOVE_TRAINING)
    assert len(rows) == 3 and all("dSprites' three conditions only" in p for p in rows["paper"])


# ---------------------------------------------------------------- Montero et al. 2022


@pytest.fixture(scope="module")
def montero2022() -> Analysed:
    return analyse(montero2022_planted(decoder_effects={"extrp": -50.0}, seed=0))


def test_montero2022_decoder_test_pairs_models(montero2022: Analysed) -> None:
    rows = of(montero2022.rows, RETRAINED_DECODER_LOWERS_HELDOUT)
    assert len(rows) == 6 and (rows["n_text"] == "7 models, 21 trials").all()
    table = montero2022.tables.decoder_test
    for _, row in rows.iterrows():
        split, dataset = re.match(r"split=(\S+), dataset=(\w+);", row["group"]).groups()
        models = table[
            (table["split"] == split)
            & (table["dataset"] == dataset)
            & (table["model"] != "gt_decoder")
        ]
        diff = models["heldout_nll_retrained"] - models["heldout_nll"]
        assert row["value"] == pytest.approx(diff.mean()) and row["n"] == len(models) == 7
        assert row["yes_if"] == "< 0" and row["paper_id"] == "montero2022"
        planted = -50.0 if split == "montero2022_extrp" else 0.0
        assert inside(row, planted)
        if planted:
            assert row["value"] < 0 and row["p_value"] < 1e-4
        else:
            assert row["p_value"] > 0.01


def test_montero2022_encoder_test_falls_beyond_element(montero2022: Analysed) -> None:
    rows = of(montero2022.rows, ENCODER_R2_FALLS)
    assert len(rows) == 8  # 2 readouts x 2 datasets x 2 conditions, the trials of each
    for _, row in rows.iterrows():
        split = row["group"].split(";")[0].split(",")[0].removeprefix("split=")
        planted = {"montero2022_r2r": 0.3, "montero2022_extrp": 0.6}[split]
        assert inside(row, planted) and row["value"] > 0 and row["p_value"] < 1e-6
        assert row["claim_id"].startswith("montero2022.")
    # each row compares the trials of one dataset: element's against the condition's
    assert all(" + " in text for text in rows["n_text"])
    assert rows["group"].str.contains("dataset=").all()


def test_montero2022_null_table_gives_large_p_values() -> None:
    rows = analyse(montero2022_planted(r2_drops={}, seed=4)).rows
    for question in (RETRAINED_DECODER_LOWERS_HELDOUT, ENCODER_R2_FALLS):
        found = of(rows, question)
        assert len(found) == (6 if question == RETRAINED_DECODER_LOWERS_HELDOUT else 8)
        assert (found["p_value"] > 0.01).all(), found[["group", "p_value"]]


def test_montero2022_questions_without_their_trials_have_no_row() -> None:
    raw = montero2022_planted(decoder_effects={"extrp": -50.0}, seed=0)
    element_only = analyse(raw[raw["params.split"] == "montero2022_r2e"]).rows
    assert of(element_only, ENCODER_R2_FALLS).empty
    assert len(of(element_only, RETRAINED_DECODER_LOWERS_HELDOUT)) == 2
    untested = raw.drop(
        columns=["metrics.eval/recon_decoder_test", "metrics.eval/recon_decoder_test_heldout"]
    )
    assert of(analyse(untested).rows, RETRAINED_DECODER_LOWERS_HELDOUT).empty
    few = analyse(raw, min_trials=8).rows  # 7 end-to-end models per split and dataset
    assert of(few, RETRAINED_DECODER_LOWERS_HELDOUT).empty
    assert len(of(few, ENCODER_R2_FALLS)) == 8  # the encoder test counts trials, not models


# ---------------------------------------------------------------- Schott et al. 2022

DROPS = {"composition": 0.3, "interpolation": 0.1, "extrapolation": 0.5}
CLOSURE = {"weak": 0.0, "supervised": 0.5}


@pytest.fixture(scope="module")
def schott() -> Analysed:
    return analyse(schott_planted(drops=DROPS, closure=CLOSURE, modularity_gap=0.6, seed=0))


def _kind(row: pd.Series) -> str:
    return row["text"].split(" to ")[1].split(" (")[0]


def test_schott_r2_drops_per_model_and_readout(schott: Analysed) -> None:
    rows = of(schott.rows, R2_DROPS)
    assert len(rows) == 6 * 3 * 2  # models x kinds x readouts
    for _, row in rows.iterrows():
        group = (
            "supervised"
            if "supervised" in row["group"]
            else "weak"
            if "ada_gvae" in row["group"]
            else ""
        )
        planted = DROPS[_kind(row)] * (1.0 - CLOSURE.get(group, 0.0))
        assert inside(row, planted), (row["group"], row["text"], planted)
        assert row["value"] > 0 and row["within_p"] < 0.01
        assert row["held_fixed"] == "dataset.name" and row["n_text"] == "6 + 6"
        assert row["within_value"] == pytest.approx(row["value"])  # datasets are balanced


def test_schott_full_supervision_shrinks_the_drop_and_weak_does_not(schott: Analysed) -> None:
    rows = of(schott.rows, SUPERVISION_SHRINKS_DROP)
    assert len(rows) == 3 * 2 * 2  # kinds x readouts x (weak, supervised)
    for _, row in rows.iterrows():
        full = row["group"].startswith("model.objective in (supervised")
        planted = DROPS[_kind(row)] * (0.5 if full else 0.0)
        assert inside(row, planted), (row["group"], row["text"], planted)
        if full:
            assert row["value"] > 0 and row["p_value"] < 0.01 and row["n_text"] == "24 + 36"
        else:
            assert row["p_value"] > 0.01 and row["n_text"] == "12 + 36"
        assert "dataset.name" in row["held_fixed"]


def test_schott_other_factors_stay_predictable(schott: Analysed) -> None:
    rows = of(schott.rows, OTHERS_STAY_PREDICTABLE)
    assert (
        sorted(rows["group"])
        == ["split=schott_extrapolation"] * 2 + ["split=schott_interpolation"] * 2
    )
    table = schott.tables.r2_modularity
    for _, row in rows.iterrows():
        probe = row["y"].split("/")[2]
        sub = table[(table["split"] == row["group"][6:]) & (table["probe"] == probe)]
        assert row["n"] == len(sub) == 6 * 2 * 4  # models x datasets x OOD factors
        assert row["value"] == pytest.approx((sub["others_r2"] - sub["ood_r2"]).mean())
        assert inside(row, 0.6) and row["p_value"] < 1e-6


def test_schott_null_table_gives_large_p_values() -> None:
    null = dict.fromkeys(DROPS, 0.0)
    rows = analyse(schott_planted(drops=null, closure={}, modularity_gap=0.0, seed=5)).rows
    drops = of(rows, R2_DROPS)
    assert len(drops) == 36
    # 36 tests of true nulls: about 5% below 0.05 by chance, none far below
    assert (drops["p_value"] < 0.05).mean() <= 0.1 and (drops["p_value"] > 1e-3).all()
    for question in (SUPERVISION_SHRINKS_DROP, OTHERS_STAY_PREDICTABLE):
        found = of(rows, question)
        assert len(found) and (found["p_value"] > 0.01).all(), found[["text", "p_value"]]


def test_schott_questions_without_their_trials_have_no_row() -> None:
    raw = schott_planted(seed=0)
    random_only = analyse(raw[raw["params.split"] == "schott_random"]).rows
    for question in (R2_DROPS, SUPERVISION_SHRINKS_DROP, OTHERS_STAY_PREDICTABLE):
        assert of(random_only, question).empty
    unsupervised = raw["params.model.objective"].isin(["beta_vae", "beta_tcvae"])
    rows = analyse(raw[unsupervised]).rows
    assert of(rows, SUPERVISION_SHRINKS_DROP).empty and len(of(rows, R2_DROPS)) == 3 * 3 * 2
    no_single = raw[raw["params.split"].isin(["schott_random", "schott_composition"])]
    rows = analyse(no_single).rows
    assert of(rows, OTHERS_STAY_PREDICTABLE).empty and len(of(rows, R2_DROPS)) == 6 * 2


# ---------------------------------------------------------------- Locatello et al. 2019


def test_locatello_metric_agreement_is_read_from_the_table() -> None:
    analysed = analyse(locatello_planted(seed=0))
    rows = of(analysed.rows, METRICS_AGREE)
    names = list(LOCATELLO_METRICS)
    assert len(rows) == len(names) * (len(names) - 1) // 2
    table = analysed.tables.agreement
    for _, row in rows.iterrows():
        source = table[
            (table["x"] == row["x"]) & (table["y"] == row["y"]) & (table["group"] == "all")
        ]
        assert row["value"] == source["rho"].iloc[0] and row["n"] == 240
        planted = locatello_rho(row["x"], row["y"])
        assert inside(row, planted), (row["x"], row["y"], planted)
        if "dis/modularity" in (row["x"], row["y"]):
            assert row["p_value"] > 0.01 and row["paper"].startswith("less")
            assert row["claim_id"] == ""
        elif "dis/sap" not in (row["x"], row["y"]):
            assert row["value"] > 0 and row["p_value"] < 1e-6
            assert row["claim_id"] == "locatello2019.metrics_agree" and row["paper_answer"] == "> 0"


EFFECTS = {"beta_vae": 0.0, "factor_vae": 1.0, "beta_tcvae": 2.0}


def test_locatello_variance_shares_are_found() -> None:
    rows = analyse(locatello_planted(objective_effects=EFFECTS, seed=0)).rows
    objective, hyper, seed = locatello_shares(EFFECTS)  # dis/mig: loading 1, no noise
    found = rows[(rows["y"] == "dis/mig") & (rows["question"] != METRICS_AGREE)]
    found = found.set_index("question")
    assert set(found.index) == {
        OBJECTIVE_SHARE,
        HYPERPARAMETER_SHARE,
        SEED_AND_HYPERPARAMETERS_OUTWEIGH,
    }
    for question, planted in (
        (OBJECTIVE_SHARE, objective),
        (HYPERPARAMETER_SHARE, hyper),
        (SEED_AND_HYPERPARAMETERS_OUTWEIGH, hyper + seed - objective),
    ):
        row = found.loc[question]
        assert inside(row, planted), (question, row["ci_low"], row["ci_high"], planted)
        assert row["value"] > 0 and row["p_value"] < 0.01
        assert row["n_text"] == "240 trials: 3 objectives, 12 models" and row["n_seeds"] == 20
    # the three shares add up to 1: the comparison is 1 - 2 x the objective's share
    assert found.loc[SEED_AND_HYPERPARAMETERS_OUTWEIGH, "value"] == pytest.approx(
        1 - 2 * found.loc[OBJECTIVE_SHARE, "value"]
    )


def test_locatello_null_objective_and_missing_design_give_no_answer() -> None:
    rows = analyse(locatello_planted(seed=6)).rows  # no objective effect
    shares = of(rows, OBJECTIVE_SHARE)
    assert len(shares) == len(LOCATELLO_METRICS)
    assert (shares["p_value"] > 0.01).all(), shares[["y", "p_value"]]
    assert (shares["ci_low"] <= 0).all()  # the basic interval of a null share holds 0
    one = locatello_planted(seed=0)
    one = one[one["params.model.objective"] == "beta_vae"]
    rows = analyse(one).rows
    for question in (OBJECTIVE_SHARE, HYPERPARAMETER_SHARE, SEED_AND_HYPERPARAMETERS_OUTWEIGH):
        assert of(rows, question).empty
    assert len(of(rows, METRICS_AGREE)) == 10
    single = locatello_planted(seed=0, metrics={"dis/mig": (1.0, 0.0)})
    assert of(analyse(single).rows, METRICS_AGREE).empty


def test_locatello_asks_unsupervised_trials_only() -> None:
    raw = locatello_planted(objective_effects=EFFECTS, seed=0)
    weak = raw[raw["params.model.objective"] == "beta_vae"].assign(
        **{"params.model.objective": "ada_gvae", "metrics.dis/mig": 100.0}
    )
    rows = analyse(pd.concat([raw, weak], ignore_index=True)).rows
    agree = of(rows, METRICS_AGREE)
    assert len(agree) and (agree["group"] == "supervision=unsupervised").all()
    assert (agree["n"] == 240).all()
    shares = of(rows, OBJECTIVE_SHARE)
    assert (shares["n"] == 240).all() and (shares["group"] == "supervision=unsupervised").all()


# ---------------------------------------------------------------- all papers


def test_rows_are_finding_rows_and_paired_tests_match_scipy() -> None:
    tables = [
        montero2021_planted(seed=0),
        montero2022_planted(seed=0),
        schott_planted(seed=0),
        locatello_planted(seed=0),
    ]
    for raw in tables:
        rows = analyse(raw).rows
        assert not rows.empty
        assert set(COLUMNS) <= set(rows.columns)
        assert set(rows["paper_id"]) <= {
            "montero2021",
            "montero2022",
            "schott2022",
            "locatello2019",
        }
        assert rows["yes_if"].isin(["> 0", "< 0"]).all()
        assert rows["text"].str.endswith("?").all() and (rows["paper"].str.len() > 20).all()
        assert ((rows["p_value"] >= 0) & (rows["p_value"] <= 1)).all()
        assert ((rows["ci_low"] <= rows["value"]) & (rows["value"] <= rows["ci_high"])).all()
    d = np.array([1.0, 2.0, 4.0, np.nan, 3.0])
    estimate = paired_estimate(d)
    assert (estimate.value, estimate.n) == (2.5, 4)
    assert estimate.se == pytest.approx(np.std([1, 2, 4, 3], ddof=1) / 2)
    assert estimate.ci_low < 2.5 < estimate.ci_high and 0 < estimate.p_value < 0.05
    assert math.isnan(paired_estimate(np.array([1.0])).p_value)


def test_split_kinds_match_the_split_registry() -> None:
    """Every Montero split the data layer defines has its kind here, from its own table."""
    from raystudy.data.splits.papers import montero2022
    from raystudy.data.splits.registry import SPLITS

    families = {
        "recomb2element": "recombination-to-element",
        "recomb2range": "recombination-to-range",
    }
    families["extrp"] = "extrapolation"
    listed = re.findall(r"^(montero2022_\w+)\s+\[(\w+)/", montero2022.__doc__ or "", re.MULTILINE)
    assert len(listed) >= 14
    for split, family in listed:
        assert SPLIT_KINDS[split] == families[family], split
    for kind, name in montero2022.KIND_NAMES.items():
        assert SPLIT_KINDS[f"montero2022_{kind}"] == name
    for kind in ("element", "range", "extrapolation"):
        assert SPLIT_KINDS[f"montero_{kind}"].endswith(kind)
    registered = {name for name in SPLITS.names() if name.startswith("montero")}
    assert registered == set(SPLIT_KINDS)
