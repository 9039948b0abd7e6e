"""The report's Findings (Dittadi et al. 2021's questions answered from a study's numbers),
against synthetic tables whose answers are planted: a weak-supervision effect on DCI-D and an
input-noise effect on OOD2 errors of known size, or none. Every rho must be the number of
correlations.csv; a question the table cannot answer must have no row."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from planted_tables import PROBES, planted_effects

from raystudy.analysis.core.columns import disentanglement_columns
from raystudy.analysis.core.groups import trial_groups, with_supervision
from raystudy.analysis.findings.dittadi import (
    DIS_OOD1,
    DIS_OOD2,
    NOISE_OOD1,
    NOISE_OOD2,
    PROXY_DIS,
    WEAK_RAISES_DIS,
)
from raystudy.analysis.findings.rows import COLUMNS
from raystudy.analysis.findings.table import findings_table
from raystudy.analysis.findings.text import NO_FINDINGS, finding_lines
from raystudy.analysis.pipeline import (
    Analysis,
    Settings,
    StudyAnalysis,
    compute,
    proxy_columns,
)
from raystudy.analysis.report import ReportInputs, render_report
from raystudy.analysis.summary import format_summary
from raystudy.analysis.tables.correlations import correlation_table, transfer_correlations

N_BOOT = 200
WEAK_EFFECT = 0.3


def _tables(frame: pd.DataFrame, min_trials: int = 5) -> tuple[pd.DataFrame, ...]:
    """(findings, correlations, proxy correlations) of a finished table, as `compute` has them."""
    frame = with_supervision(frame)
    groups = trial_groups(frame)
    options = {"n_boot": N_BOOT, "seed": 0, "min_trials": min_trials}
    correlations = transfer_correlations(frame, groups, **options)
    proxy = correlation_table(
        frame, proxy_columns(frame), disentanglement_columns(frame), groups, **options
    )
    return findings_table(frame, correlations, proxy, **options), correlations, proxy


@pytest.fixture(scope="module")
def planted() -> pd.DataFrame:
    return planted_effects(40, weak_effect=WEAK_EFFECT, noise_effect=0.1, seed=1)


@pytest.fixture(scope="module")
def planted_tables(planted: pd.DataFrame) -> tuple[pd.DataFrame, ...]:
    return _tables(planted)


def _only(findings: pd.DataFrame, question: str) -> pd.Series:
    rows = findings[findings["question"] == question]
    assert len(rows) == 1
    return rows.iloc[0]


def test_a_planted_weak_effect_is_found_with_its_sign_and_inside_its_interval(
    planted: pd.DataFrame, planted_tables: tuple[pd.DataFrame, ...]
) -> None:
    findings = planted_tables[0]
    assert list(findings.columns) == COLUMNS
    weak = _only(findings, WEAK_RAISES_DIS)
    dci = planted["metrics.dis/dci_d"]
    is_weak = planted["params.model.objective"] == "ada_gvae"
    assert weak["value"] == pytest.approx(dci[is_weak].mean() - dci[~is_weak].mean())
    assert weak["measured"] == "> 0" and weak["value"] > 0
    assert weak["ci_low"] < WEAK_EFFECT < weak["ci_high"]
    assert (weak["n"], weak["n_text"], weak["y"]) == (80, "40 + 40", "dis/dci_d")
    pd.testing.assert_frame_equal(_tables(planted)[0], findings)  # seeded: the same again
    # input noise planted to lower every OOD2 error: yes per OOD2 scenario and probe
    noise = findings[findings["question"] == NOISE_OOD2]
    assert sorted(noise["y"]) == sorted(
        f"transfer/{s}/{p}/mae" for s in ("ood2_a", "ood2_b") for p in PROBES
    )
    assert (noise["measured"] == noise["yes_if"]).all() and (noise["ci_high"] < 0).all()
    # OOD1 and OOD2 rows per scenario and probe; the error falls with DCI-D: yes, rho < 0
    ood1 = findings[findings["question"] == DIS_OOD1]
    assert sorted(ood1["y"]) == [f"transfer/ood1_a/{p}/mae" for p in sorted(PROBES)]
    assert len(findings[findings["question"] == DIS_OOD2]) == 4
    transfer = findings[findings["question"].isin([DIS_OOD1, DIS_OOD2])]
    assert (transfer["measured"] == transfer["yes_if"]).all() and (transfer["value"] < 0).all()
    # ELBO rises and reconstruction NLL falls with DCI-D, in both supervision groups
    proxy = findings[findings["question"] == PROXY_DIS]
    assert sorted(zip(proxy["x"], proxy["group"], strict=True)) == sorted(
        (x, f"supervision={g}")
        for x in ("eval/elbo", "eval/recon")
        for g in ("weak", "unsupervised")
    )
    assert (proxy["measured"] == proxy["yes_if"]).all()
    assert (np.sign(proxy["value"]) == np.where(proxy["x"] == "eval/elbo", 1, -1)).all()


def test_a_null_effect_is_inconclusive_and_a_reversed_one_is_no() -> None:
    null = _tables(planted_effects(40, weak_effect=0.0, noise_effect=0.0, seed=2))[0]
    weak = _only(null, WEAK_RAISES_DIS)
    assert weak["measured"] == "undetermined" and weak["ci_low"] < 0 < weak["ci_high"]
    noise = null[null["question"] == NOISE_OOD2]
    assert len(noise) == 4 and (noise["measured"] == "undetermined").all()
    assert ((noise["ci_low"] < 0) & (noise["ci_high"] > 0)).all()
    reversed_ = _tables(planted_effects(40, weak_effect=-0.3, seed=2))[0]
    weak = _only(reversed_, WEAK_RAISES_DIS)
    assert weak["measured"] == "< 0" and weak["ci_high"] < 0


def test_an_infinite_score_is_left_out_of_the_difference(planted: pd.DataFrame) -> None:
    frame = planted.copy()
    frame.loc[frame.index[-1], "metrics.dis/dci_d"] = np.inf  # a weak trial's
    weak = _only(_tables(frame)[0], WEAK_RAISES_DIS)
    dci = planted["metrics.dis/dci_d"]
    is_weak = planted["params.model.objective"] == "ada_gvae"
    assert weak["n_text"] == "39 + 40"
    assert weak["value"] == pytest.approx(dci[is_weak].iloc[:-1].mean() - dci[~is_weak].mean())


def test_every_rho_is_the_number_of_correlations_csv(
    planted_tables: tuple[pd.DataFrame, ...],
) -> None:
    findings, correlations, proxy = planted_tables
    rhos = findings[findings["statistic"] == "rho"]
    assert len(rhos) == len(findings) - 1
    for _, row in rhos.iterrows():
        source = proxy if row["question"] == PROXY_DIS else correlations
        keys = ["x", "y", "group"]
        cell = source[(source[keys] == row[keys].to_numpy()).all(axis=1)]
        assert len(cell) == 1
        got = row[["value", "ci_low", "ci_high", "n"]].to_numpy(dtype=float)
        want = cell.iloc[0][["rho", "ci_low", "ci_high", "n"]].to_numpy(dtype=float)
        assert np.array_equal(got, want)
        assert row["group"] == "all" or row["question"] == PROXY_DIS


def test_questions_the_table_cannot_answer_have_no_row(planted: pd.DataFrame) -> None:
    def questions(frame: pd.DataFrame, min_trials: int = 5) -> pd.DataFrame:
        return _tables(frame, min_trials)[0]

    unsupervised = planted[planted["params.model.objective"] == "beta_vae"]
    alone = questions(unsupervised)
    assert WEAK_RAISES_DIS not in set(alone["question"])
    assert not alone["group"].str.contains("weak").any() and DIS_OOD1 in set(alone["question"])
    # too few weak trials (4 < min_trials) is the same as none
    few = questions(pd.concat([unsupervised, planted.tail(4)]), min_trials=5)
    assert WEAK_RAISES_DIS not in set(few["question"])
    constant = questions(planted.assign(**{"params.train.input_noise": "True"}))
    assert NOISE_OOD2 not in set(constant["question"]) and WEAK_RAISES_DIS in set(
        constant["question"]
    )
    no_real = questions(planted.drop(columns=[c for c in planted if "/ood2_b/" in c]))
    assert not no_real["y"].str.contains("ood2_b").any()
    assert len(no_real[no_real["question"] == NOISE_OOD2]) == len(PROBES)  # ood2_a's stay
    # no disentanglement score at all: only the noise question can be answered
    scoreless = questions(planted.drop(columns=["metrics.dis/dci_d", "metrics.dis/mig"]))
    assert set(scoreless["question"]) == {NOISE_OOD2, NOISE_OOD1}


def test_without_dci_d_the_first_disentanglement_score_stands_in_and_is_named(
    planted: pd.DataFrame,
) -> None:
    findings = _tables(planted.drop(columns=["metrics.dis/dci_d"]))[0]
    weak = _only(findings, WEAK_RAISES_DIS)
    assert weak["y"] == "dis/mig" and "no dis/dci_d logged" in weak["text"]
    transfer = findings[findings["question"] == DIS_OOD1]
    assert (transfer["x"] == "dis/mig").all() and transfer["text"].str.contains("dis/mig").all()


def _sections(report: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", report)


def _report(findings: pd.DataFrame, analysis: Analysis) -> str:
    return render_report(
        ReportInputs(
            study="planted",
            status_counts=analysis.status_counts,
            planned_trials=24,
            unfinished=analysis.unfinished,
            nonfinite=analysis.nonfinite,
            correlations=analysis.correlations,
            proxy_correlations=analysis.proxy_correlations,
            selection=analysis.selection,
            figures=[],
            spec_text="",
            findings=findings,
            claims=analysis.claims,
        )
    )


def test_the_report_opens_with_the_findings_and_the_summary_shows_the_same_lines(
    tmp_path: Path,
) -> None:
    analysis = compute(planted_effects(12, seed=3), Settings(n_boot=50))
    lines = finding_lines(analysis.findings)
    assert len(lines) == len(analysis.findings) > 0
    report = _report(analysis.findings, analysis)
    # what the study was run to answer comes first: the papers' claims, then the Findings
    assert _sections(report)[:2] == ["The papers' claims", "Findings"]
    items = re.findall(r"<li>(.*?)</li>", report)
    assert [html.unescape(re.sub(r"</?b>", "", item)) for item in items] == lines
    said = format_summary(StudyAnalysis(analysis, tmp_path, [], None)).splitlines()
    assert said[0].startswith("Claims (claims.csv): ")
    at = said.index(next(s for s in said if s.startswith("Findings (findings.csv)")))
    assert at == 2 + int((analysis.claims["agreement"] != "not testable").sum())
    assert at + len(lines) < said.index(next(s for s in said if s.startswith("Runs: ")))
    assert [s.strip() for s in said[at + 1 : at + 1 + len(lines)]] == lines
    assert at < said.index(next(s for s in said if s.startswith("Spearman rho")))
    # a study that answers nothing says so in both places, rather than showing an empty list
    empty = Analysis(**{**analysis.__dict__, "findings": analysis.findings.iloc[:0]})
    assert NO_FINDINGS in format_summary(StudyAnalysis(empty, tmp_path, [], None))
    report = _report(empty.findings, analysis)
    assert "Findings" in _sections(report) and html.escape(NO_FINDINGS) in report
