"""Dittadi et al. (ICLR 2021, "On the Transfer of Disentangled Representations in Realistic
Settings"): the held-out hues of `dittadi_hues` (the paper's set, a per-seed draw, the old
fixed set that saved specs mean), the run param that records them, and the shipped study's
protocol values."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from mlflow.tracking import MlflowClient

from raystudy.analysis.core.cells import cells
from raystudy.analysis.stats.design import design_factors
from raystudy.checks import load_spec
from raystudy.data import get_dataset, get_split
from raystudy.data.sources.procedural.colour import hue_to_rgb
from raystudy.data.splits.papers.dittadi import (
    FIXED_HELD_OUT,
    HELD_OUT_HUES_PARAM,
    NUM_HELD_OUT,
    NUM_HUES,
    PAPER_HELD_OUT,
    per_seed_held_out,
)
from raystudy.data.splits.registry import SplitOptionError, split_params, split_uses_seed
from raystudy.models.params import model_params
from raystudy.scoring import build_split, split_run_params
from raystudy.spec import SpecError, TrialConfig
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter, run_trial

ROOT = Path(__file__).resolve().parents[1]
DITTADI = ROOT / "search_spaces" / "dittadi2021.yaml"
SMOKE = ROOT / "search_spaces" / "smoke.yaml"
SAVED = ROOT / "tests" / "data" / "saved_spec_before_objective_options.yaml"
PER_SEED = {"name": "dittadi_hues", "options": {"held_out": "per_seed"}}
PAPER = {"name": "dittadi_hues", "options": {"held_out": "paper"}}
# The 8 cube colours of the authors' released training data (`finger`), in RGB as the loader
# shipped with it lists them: red, rose, magenta, violet, azure, cyan, spring green, green.
AUTHORS_TRAINING_RGB = {
    (1.0, 0.0, 0.0),
    (1.0, 0.0, 0.5),
    (1.0, 0.0, 1.0),
    (0.5, 0.0, 1.0),
    (0.0, 0.5, 1.0),
    (0.0, 1.0, 1.0),
    (0.0, 1.0, 0.5),
    (0.0, 1.0, 0.0),
}


@pytest.fixture(scope="module")
def ds():
    return get_dataset("color_dsprites", resolution=32)


def held_out_of(split) -> set[int]:
    return set(split.scenarios["ood2_a"].test["hue"])


def hue_values(split, role: str, n: int = 20_000) -> set[int]:
    hue = split.dataset.factors.index("hue")
    return set(np.unique(split.sample(role, n, 0)[:, hue]).tolist())


# --- the held-out sets ------------------------------------------------------------------------


def test_the_paper_set_is_the_complement_of_the_authors_released_training_colours() -> None:
    train = [h for h in range(NUM_HUES) if h not in PAPER_HELD_OUT]
    rgb = hue_to_rgb(torch.tensor([h / NUM_HUES for h in train], dtype=torch.float64))
    assert {tuple(round(float(c), 6) for c in row) for row in rgb} == AUTHORS_TRAINING_RGB
    assert len(PAPER_HELD_OUT) == NUM_HELD_OUT == 4 and NUM_HUES == 12


def test_a_seed_draws_the_same_held_out_hues_every_time() -> None:
    for seed in range(20):
        first = per_seed_held_out(seed)
        assert per_seed_held_out(seed) == first
        assert len(first) == len(set(first)) == NUM_HELD_OUT
        assert list(first) == sorted(first) and all(0 <= h < NUM_HUES for h in first)
    # Pinned: a saved study's trials must keep their sets under any library version.
    assert [per_seed_held_out(s) for s in range(3)] == [(1, 2, 3, 7), (3, 4, 5, 11), (1, 6, 8, 9)]


def test_different_seeds_draw_different_sets_uniformly() -> None:
    sets = [per_seed_held_out(s) for s in range(3000)]
    assert len(set(sets[:10])) == 10
    assert len(set(sets)) == 495  # every 4 of 12 is drawn by some seed
    counts = Counter(h for s in sets for h in s)
    for hue in range(NUM_HUES):  # each hue held out by 1/3 of the seeds
        assert abs(counts[hue] / len(sets) - NUM_HELD_OUT / NUM_HUES) < 0.03


@pytest.mark.parametrize(
    ("options", "seed", "expected"),
    [
        ({}, None, FIXED_HELD_OUT),
        ({"held_out": "fixed"}, 5, FIXED_HELD_OUT),
        ({"held_out": "paper"}, 5, PAPER_HELD_OUT),
        ({"held_out": "per_seed"}, 5, per_seed_held_out(5)),
        ({"held_out": [11, 0, 5, 6]}, None, (0, 5, 6, 11)),
    ],
)
def test_held_out_option_chooses_the_sets_the_encoder_and_probes_see(
    ds, options, seed, expected
) -> None:
    split = get_split("dittadi_hues", ds, options, seed=seed)
    train = set(range(NUM_HUES)) - set(expected)
    assert held_out_of(split) == set(expected)
    assert hue_values(split, "encoder") == train
    assert hue_values(split, "ood2_a/test") == set(expected)
    assert hue_values(split, "ood2_a/train") == train
    ordered = sorted(train)
    assert split.scenarios["ood1_a"].train == {"hue": ordered[:1]}
    assert split.scenarios["ood1_b"].train == {"hue": ordered[4:]}
    assert split.scenarios["ood1_c"].test == {"hue": ordered[1::2]}


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_per_seed_train_and_test_sets_are_disjoint_on_the_held_out_hues(ds, seed: int) -> None:
    split = get_split("dittadi_hues", ds, {"held_out": "per_seed"}, seed=seed)
    held = per_seed_held_out(seed)
    hue = ds.factors.index("hue")
    grid = ds.factors.sample(50_000, np.random.default_rng(seed))
    encoder = split.mask("encoder", grid)
    assert not np.isin(grid[encoder, hue], held).any()
    assert np.array_equal(split.mask("ood2_a/test", grid), np.isin(grid[:, hue], held))
    assert not (split.mask("ood2_a/test", grid) & encoder).any()
    for scn in ("ood1_a", "ood1_b", "ood1_c"):  # OOD1: the probes stay inside the encoder set
        for part in ("train", "test"):
            assert not (split.mask(f"{scn}/{part}", grid) & ~encoder).any()


def test_the_paper_set_leaves_ood1_a_fitting_on_red(ds) -> None:
    split = get_split("dittadi_hues", ds, {"held_out": "paper"})
    assert split.scenarios["ood1_a"].train == {"hue": [0]}  # "trained on 1 color (red)"


@pytest.mark.parametrize(
    "held_out", ["random", [1, 2, 3], [1, 1, 2, 3], [1, 2, 3, 12], [True, 2, 3, 4], 4]
)
def test_a_held_out_option_that_is_not_4_of_the_12_hues_is_refused(ds, held_out) -> None:
    with pytest.raises(SplitOptionError, match="held_out") as info:
        get_split("dittadi_hues", ds, {"held_out": held_out}, seed=0)
    assert info.value.option == "held_out"


def test_per_seed_needs_a_seed_and_the_seed_is_no_option(ds) -> None:
    with pytest.raises(SplitOptionError, match="seed"):
        get_split("dittadi_hues", ds, {"held_out": "per_seed"})
    with pytest.raises(SplitOptionError, match="no option 'seed'"):
        get_split("dittadi_hues", ds, {"seed": 3})


def test_only_per_seed_lets_the_seed_decide_the_split() -> None:
    assert split_uses_seed(PER_SEED)
    assert not split_uses_seed("dittadi_hues")
    assert not split_uses_seed(PAPER)
    assert not split_uses_seed({"name": "dittadi_hues", "options": {"held_out": [1, 2, 3, 4]}})
    assert not split_uses_seed("iid")
    assert split_params("iid", 3) == {}
    assert split_params("dittadi_hues", 3) == {HELD_OUT_HUES_PARAM: "1,4,7,10"}
    assert split_params(PER_SEED, 2) == {HELD_OUT_HUES_PARAM: "1,6,8,9"}


# --- trials, saved specs, the shipped study -------------------------------------------------


def config(split, seed: int, **train) -> TrialConfig:
    return TrialConfig.model_validate(
        {
            "dataset": {"name": "color_dsprites", "options": {"resolution": 32}},
            "split": split,
            "model": {"latent_dim": 4},
            "train": {"steps": 2, "batch_size": 8, "report_every": 1, **train},
            "evaluation": {
                "metrics": ["mig"],
                "probes": [],
                "num_train": 100,
                "num_test": 50,
                "num_eval_images": 16,
            },
            "seed": seed,
        }
    )


def test_a_trial_builds_its_split_from_its_own_seed(ds) -> None:
    for seed in (0, 1, 2):
        trial = config(PER_SEED, seed)
        assert held_out_of(build_split(trial, ds)) == set(per_seed_held_out(seed))
        expected = ",".join(map(str, per_seed_held_out(seed)))
        assert split_run_params(trial) == {HELD_OUT_HUES_PARAM: expected}


def test_a_saved_spec_from_before_keeps_its_fixed_held_out_hues() -> None:
    """`split: dittadi_hues` in a spec saved before the option existed means 1, 4, 7, 10."""
    spec = load_spec(SAVED)
    assert spec.split == "dittadi_hues"
    for trial in spec.trials()[:3]:
        split = build_split(trial, get_dataset(trial.dataset.name, **trial.dataset.options))
        assert held_out_of(split) == set(FIXED_HELD_OUT)
        assert split_run_params(trial) == {HELD_OUT_HUES_PARAM: "1,4,7,10"}


def test_each_trials_run_records_its_held_out_hues(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("hues")
    for seed in (0, 1):
        ctx = TrialContext(uri, experiment, None, "hues", f"t{seed}", f"t{seed}", log_models=False)
        ctx = replace(ctx, log_artifacts=False)
        run_trial(config(PER_SEED, seed), ctx, LocalReporter())
    runs = {r.data.params["seed"]: r for r in client.search_runs([experiment])}
    digests = set()
    for seed in (0, 1):
        run = runs[str(seed)]
        assert run.info.status == "FINISHED"
        expected = ",".join(map(str, per_seed_held_out(seed)))
        assert run.data.params[HELD_OUT_HUES_PARAM] == expected
        assert run.data.params["split.options.held_out"] == "per_seed"
        digests |= {d.dataset.digest for d in run.inputs.dataset_inputs}
    assert len(digests) == 2  # different sets, different data inputs


def test_stacking_a_per_seed_split_is_refused_and_a_fixed_one_is_not() -> None:
    stack = ["execution.seeds_per_trial=2", "grid.seed=[0, 1]", "grid.model=[{beta: [1]}]"]
    per_seed = "split={name: dittadi_hues, options: {held_out: per_seed}}"
    with pytest.raises(SpecError, match="per_seed") as info:
        load_spec(SMOKE, [*stack, per_seed], check_data=False)
    assert info.value.problems[0][0] == "execution.seeds_per_trial"
    paper = "split={name: dittadi_hues, options: {held_out: paper}}"
    assert load_spec(SMOKE, [*stack, paper], check_data=False).execution.seeds_per_trial == 2


def test_a_bad_held_out_option_is_reported_at_its_field() -> None:
    bad = "split={name: dittadi_hues, options: {held_out: [1, 2]}}"
    with pytest.raises(SpecError) as info:
        load_spec(SMOKE, [bad])
    assert info.value.problems[0][0] == "split.options.held_out"


def test_the_held_out_hues_are_no_design_axis_of_the_analysis() -> None:
    """Drawn per seed, the set varies as the seed does: holding it fixed would hold the
    replicate fixed."""
    frame = pd.DataFrame(
        {
            "params.seed": ["0", "1", "2", "3"],
            f"params.{HELD_OUT_HUES_PARAM}": ["1,2,3,7", "3,4,5,11", "1,6,8,9", "0,2,6,11"],
            "params.model.beta": ["1", "1", "4", "4"],
        }
    )
    assert design_factors(frame) == ["params.model.beta"]


def test_per_seed_trials_of_one_split_are_one_cell_and_another_split_is_not() -> None:
    """The per-seed sets are draws of one split: their transfer scores compare as one
    cell; a split with other options is a cell of its own."""
    per_seed = {
        "params.split.name": ["dittadi_hues"] * 3,
        "params.split.options.held_out": ["per_seed"] * 3,
        f"params.{HELD_OUT_HUES_PARAM}": ["1,2,3,7", "3,4,5,11", "1,6,8,9"],
    }
    assert cells(pd.DataFrame(per_seed)) is None
    paper = {k: [*v, v[0]] for k, v in per_seed.items()}
    paper["params.split.options.held_out"][-1] = "paper"
    paper[f"params.{HELD_OUT_HUES_PARAM}"][-1] = "1,2,3,8"
    label = cells(pd.DataFrame(paper))
    assert label is not None and label.nunique() == 2 and label.iloc[0] == label.iloc[2]


def test_the_shipped_study_holds_out_the_papers_hues_with_its_input_noise() -> None:
    spec = load_spec(DITTADI, check_data=False)
    trials = spec.trials()
    assert len(trials) == 1080
    assert {repr(t.split) for t in trials} == {repr(PAPER)}
    assert {split_run_params(t)[HELD_OUT_HUES_PARAM] for t in trials} == {"1,2,3,8"}
    train = spec.train
    assert (train.input_noise_pixel_sd, train.input_noise_grey_sd) == (0.03, 0.15)
    assert (train.batch_size, train.steps, train.lr) == (64, 400_000, 1e-4)
    assert (train.lr_milestones, train.lr_decay) == ([150_000, 300_000], 0.5)
    models = [model_params(t.model) for t in trials]
    assert {m["beta"] for m in models} == {1.0, 2.0, 4.0}
    assert {m["latent_dim"] for m in models} == {10, 25, 50}
    assert {t.train.kl_warmup_steps for t in trials} == {0, 10_000, 50_000}
    weak = [m for m in models if m["objective"] == "ada_gvae"]
    assert len(weak) == 540 and {(m["k"], m["kl_mode"]) for m in weak} == {(1, "symmetric_kl")}
