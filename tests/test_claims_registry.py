"""The papers' claims (`raystudy/analysis/claims/claims.yaml`): every record loads and is
complete, its preset is a shipped study that validates, a bad record is refused naming its
field, and `raystudy claims` lists them all, as a table and as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from fresh_imports import loaded_after
from pydantic import ValidationError

from raystudy.analysis.claims.registry import PAPERS, Claim, all_claims, claim, read_claims
from raystudy.checks import load_spec

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = all_claims()
PRESETS = sorted({c.preset for c in CLAIMS if c.preset is not None})
#: A complete record, that each refusal below spoils in one field.
GOOD = {
    "id": "schott2022.example",
    "paper": "schott2022",
    "quote": "all of them struggle to learn the underlying mechanism",
    "source": "abstract",
    "where": "abstract",
    "quantity": "R^2(random) - R^2(composition)",
    "test": "Welch's t-test",
    "expects": "effect",
    "direction": "> 0",
    "paper_answer": "R^2 falls on the composition split",
    "tier": "primary",
    "needs": "schott_random and schott_composition trials",
}


def registry_text(*records: dict[str, object]) -> str:
    return yaml.safe_dump({"claims": list(records)}, sort_keys=False)


def test_every_claim_loads_with_a_unique_id_prefixed_by_its_paper() -> None:
    raw = yaml.safe_load((ROOT / "raystudy/analysis/claims/claims.yaml").read_text())["claims"]
    assert len(CLAIMS) == len(raw) > 0
    ids = [c.id for c in CLAIMS]
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    for found in CLAIMS:
        assert found.id.startswith(found.paper + "."), found.id
        assert claim(found.id) is found
    # Listed in the papers' order.
    assert [PAPERS.index(c.paper) for c in CLAIMS] == sorted(PAPERS.index(c.paper) for c in CLAIMS)


def test_each_claim_says_what_it_expects_in_full() -> None:
    for found in CLAIMS:
        if found.expects == "none":
            assert found.margin is not None and found.margin > 0, found.id
            assert found.margin_why and len(found.margin_why) > 20, found.id
        else:
            assert found.direction in ("> 0", "< 0"), found.id
            assert found.margin is None, found.id
        # Never a bare yes or no; read after the claim's words as "<answer> (<cite>, <where>)".
        assert found.paper_answer.strip().lower() not in ("yes", "no"), found.id
        assert not found.paper_answer.endswith("."), found.id
        assert found.quote.strip() == found.quote and len(found.quote.split()) >= 8, found.id
        if found.preset is None:
            assert "preset" in found.test, f"{found.id}: say in `test` why no preset tests it"


def test_each_paper_has_a_primary_claim() -> None:
    primary = {c.paper for c in CLAIMS if c.tier == "primary"}
    assert primary == set(PAPERS)


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_is_a_shipped_study_that_validates(preset: str) -> None:
    path = ROOT / preset
    assert path.parent == ROOT / "search_spaces" and path.is_file(), preset
    assert load_spec(path).name == path.stem


def test_a_claim_of_no_effect_without_a_margin_is_refused_naming_the_field(
    tmp_path: Path,
) -> None:
    bad = {**GOOD, "expects": "none", "direction": None}
    path = tmp_path / "claims.yaml"
    path.write_text(registry_text(bad))
    with pytest.raises(ValidationError, match="a claim of no effect needs margin and margin_why"):
        read_claims(path.read_text(), str(path))
    # With its margin (and why) it loads.
    fixed = {**bad, "margin": 0.1, "margin_why": "a tenth of the training NLL"}
    assert read_claims(registry_text(fixed))[0].margin == 0.1


@pytest.mark.parametrize(
    ("spoiled", "said"),
    [
        ({"direction": None}, "an effect claim needs a direction"),
        ({"id": "dittadi2021.example"}, r"its id must start with 'schott2022\.'"),
        ({"id": "Schott2022 example"}, r"claims\.0\.id"),
        ({"tier": "tertiary"}, r"claims\.0\.tier"),
        ({"source": "blog"}, r"claims\.0\.source"),
        ({"quotation": "a field the model does not have"}, r"claims\.0\.quotation"),
    ],
)
def test_a_bad_record_is_refused_naming_its_field(
    tmp_path: Path, spoiled: dict[str, object], said: str
) -> None:
    path = tmp_path / "claims.yaml"
    path.write_text(registry_text({**GOOD, **spoiled}))
    with pytest.raises(ValidationError, match=said):
        read_claims(path.read_text(), str(path))


def test_a_missing_field_and_a_duplicated_id_are_refused(tmp_path: Path) -> None:
    missing = {k: v for k, v in GOOD.items() if k != "needs"}
    with pytest.raises(ValidationError, match=r"claims\.0\.needs"):
        read_claims(registry_text(missing))
    path = tmp_path / "claims.yaml"
    path.write_text(registry_text(GOOD, {**GOOD, "tier": "secondary"}))
    with pytest.raises(ValueError, match=r"claims\.yaml: duplicated claim id schott2022\.example"):
        read_claims(path.read_text(), str(path))


def run_claims(*args: str) -> subprocess.CompletedProcess[str]:
    """`raystudy claims` as a shell runs it, in a terminal 80 columns wide."""
    return subprocess.run(
        [sys.executable, "-m", "raystudy.cli", "claims", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "COLUMNS": "80"},
        cwd=ROOT,
    )


def test_the_command_prints_every_claim_as_json_and_as_a_table() -> None:
    done = run_claims("--json")
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [c["id"] for c in listed] == [c.id for c in CLAIMS]
    assert all(set(c) == set(Claim.model_fields) for c in listed)
    assert listed[0]["quote"] == CLAIMS[0].quote and listed[0]["preset"] == CLAIMS[0].preset

    table = run_claims()
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, "the table is wider than the terminal"
    rows = {line.split()[0] for line in lines if line.startswith("  ") and line.split()}
    assert {c.id for c in CLAIMS} <= rows
    for paper in PAPERS:
        assert f"({paper}):" in table.stdout


def test_the_command_filters_by_paper_and_names_the_papers_it_knows() -> None:
    done = run_claims("--paper", "montero2022", "--json")
    assert done.returncode == 0, done.stderr
    ids = [c["id"] for c in json.loads(done.stdout)]
    assert ids and all(i.startswith("montero2022.") for i in ids)
    bad = run_claims("--paper", "montero2023")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "no paper 'montero2023'; allowed: " + ", ".join(PAPERS) in bad.stderr


def test_the_claims_load_without_the_analysis_stack() -> None:
    """`raystudy claims` starts in about a second: reading the claims imports none of what the
    analysis draws and fits with, and the analysis' public names still resolve on first use."""
    code = "import raystudy.analysis.claims.registry as r; r.all_claims()"
    heavy = ("torch", "matplotlib", "mlflow", "scipy", "ray")
    assert loaded_after(code, heavy) == []
    import raystudy.analysis as analysis

    for name in analysis.__all__:
        assert callable(getattr(analysis, name)), name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        analysis.nothing  # noqa: B018
