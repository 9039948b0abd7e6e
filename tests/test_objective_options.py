"""Each objective's options in one home (its `Params` model): what a spec may write for it,
what it refuses naming the objective, and that specs saved before keep loading."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from raystudy.checks import load_spec
from raystudy.models import build_model
from raystudy.models.objectives import OBJECTIVES, Batch, get_objective, objective_from_config
from raystudy.models.params import model_params
from raystudy.models.vae import VAE
from raystudy.spec import SpecError
from tests.tiny import SMOKE, tiny

ROOT = Path(__file__).resolve().parents[1]
SAVED = ROOT / "tests" / "data" / "saved_spec_before_objective_options.yaml"


def refused(*sets: str) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(SMOKE, tiny("options", *sets), check_data=False)
    return str(info.value)


def test_every_objective_declares_its_options_once_with_defaults() -> None:
    for name, cls in OBJECTIVES.items():
        objective = cls()
        fields = cls.Params.model_fields
        assert cls.hyperparameters == tuple(fields), name
        for option, field in fields.items():
            assert getattr(objective, option) == field.default, (name, option)
            assert field.description, (name, option)


def test_shipped_specs_and_a_spec_saved_before_load() -> None:
    for path in sorted((ROOT / "search_spaces").glob("*.yaml")):
        assert load_spec(path, check_data=False).num_trials() > 0, path
    saved = load_spec(SAVED, check_data=False)
    trials = saved.trials()
    assert len(trials) == 24
    # every objective reads its own options only, at the values the old spec gave them
    by_objective = {t.model.objective: model_params(t.model) for t in trials}
    assert set(by_objective["beta_vae"]) == {"objective", "architecture", "latent_dim", "beta"}
    assert set(by_objective["ada_gvae"]) >= {"beta", "kl_mode", "k"}
    assert "gamma" not in by_objective["ada_gvae"]


def test_a_misspelt_option_is_refused_naming_the_objective() -> None:
    message = refused("model.bta=4")
    assert "model.bta: no objective has this option" in message
    assert "objective 'beta_vae' reads beta" in message and "did you mean 'beta'" in message
    message = refused("grid={model: [{objective: factor_vae, gama: [10]}]}")
    assert "grid.model[0].gama" in message and "'gamma'" in message


def test_an_option_written_for_an_objective_that_does_not_read_it_is_refused() -> None:
    message = refused("grid={model: [{objective: factor_vae, beta: [1, 4]}]}")
    assert "grid point 0" in message and "model.beta" in message
    assert "objective 'factor_vae' does not read beta (it reads: gamma)" in message
    # in the base section, for the base objective the trials keep
    message = refused("model.k=2", "grid={seed: [0, 1]}")
    assert "model.k: objective 'beta_vae' does not read k (it reads: beta)" in message


def test_a_base_option_is_a_shared_default_for_the_objectives_that_read_it() -> None:
    grid = "grid={model: [{objective: ada_gvae}, {objective: factor_vae}], seed: [0]}"
    spec = load_spec(SMOKE, tiny("options", "model.k=2", "model.gamma=20", grid), check_data=False)
    objectives = {t.model.objective: objective_from_config(t.model) for t in spec.trials()}
    assert objectives["ada_gvae"].k == 2 and objectives["factor_vae"].gamma == 20.0
    assert "k" not in model_params(spec.trials()[1].model)


def test_an_option_out_of_its_objectives_range_is_refused_with_the_objective() -> None:
    message = refused("grid={model: [{objective: ada_gvae, k: 0}]}")
    assert "model.k: Input should be greater than or equal to 1 (got 0)" in message
    assert "(objective 'ada_gvae')" in message
    message = refused("model.objective=cascade_vae", "model.categories=1", "grid={seed: [0]}")
    assert "model.categories" in message and "one category is no code" in message
    with pytest.raises(ValueError, match="FactorVAE has no option beta; it reads: gamma"):
        OBJECTIVES.get("factor_vae")(beta=2.0)


def test_null_is_the_objectives_default() -> None:
    spec = load_spec(
        SMOKE,
        tiny(
            "options",
            "model.objective=factor_vae",
            "model.beta=null",  # the smoke spec's beta, which factor_vae does not read
            "model.gamma=null",
            "grid={seed: [0]}",
        ),
        check_data=False,
    )
    assert objective_from_config(spec.trials()[0].model).gamma == 10.0


# -- a new objective is one file: info_vae.py ------------------------------------------------


def _loss(objective_name: str, **options: float) -> torch.Tensor:
    torch.manual_seed(0)
    model: VAE = build_model("conv", 1, 4, 32)
    batch = Batch(inputs=torch.rand(8, 1, 32, 32), targets=torch.rand(8, 1, 32, 32).round())
    torch.manual_seed(1)
    return get_objective(objective_name, **options)(model, batch).loss


def test_info_vae_is_the_vae_at_alpha_0_lambda_1_and_adds_its_mmd_otherwise() -> None:
    assert "info_vae" in OBJECTIVES
    vae = _loss("beta_vae", beta=1.0)
    assert torch.allclose(_loss("info_vae", alpha=0.0, lambda_info=1.0), vae)
    assert not torch.allclose(_loss("info_vae", alpha=0.0, lambda_info=1000.0), vae)
    # alpha 1, lambda 0: no regulariser at all, the reconstruction alone
    torch.manual_seed(0)
    model: VAE = build_model("conv", 1, 4, 32)
    batch = Batch(inputs=torch.rand(8, 1, 32, 32), targets=torch.rand(8, 1, 32, 32).round())
    torch.manual_seed(1)
    terms = get_objective("info_vae", alpha=1.0, lambda_info=0.0)(model, batch)
    assert torch.allclose(terms.loss, terms.recon) and "mmd" in terms.extras


def test_info_vae_options_are_checked_and_reported_from_its_file_alone() -> None:
    grid = "grid={model: [{objective: info_vae, lambda_info: [10, 100]}], seed: [0]}"
    spec = load_spec(SMOKE, tiny("info", grid))  # data checked: its train/* keys predicted
    assert [model_params(t.model)["lambda_info"] for t in spec.trials()] == [10.0, 100.0]
    message = refused("grid={model: [{objective: info_vae, alpha: 2}]}")
    assert "model.alpha: Input should be less than or equal to 1" in message
    assert "(objective 'info_vae')" in message
