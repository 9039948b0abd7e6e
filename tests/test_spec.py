"""Study spec: grid expansion, overrides, and errors that name file, field and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import fresh_ray
from typer.testing import CliRunner

from raystudy.checks import load_spec, validate_spec
from raystudy.models.params import trial_params
from raystudy.spec import SpecError, StudySpec, TrialConfig, apply_overrides, expand_grid

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "search_spaces" / "smoke.yaml"


def write(tmp_path: Path, text: str, name: str = "study.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_smoke_spec_is_eight_trials_of_two_objectives_two_betas_noise_on_off() -> None:
    spec = load_spec(SMOKE)
    trials = spec.trials()
    assert len(trials) == 8
    combos = {(t.model.objective, t.model.beta, t.train.input_noise) for t in trials}
    assert combos == {
        (o, b, n) for o in ("beta_vae", "ada_gvae") for b in (1.0, 4.0) for n in (False, True)
    }
    assert {t.model.latent_dim for t in trials} == {10}
    # base values survive where the grid is silent
    assert all(t.split == "dittadi_hues" and t.train.steps == spec.train.steps for t in trials)


def test_grid_alternatives_axes_and_literal_lists() -> None:
    grid = {
        "model": [{"objective": "a", "beta": [1, 2]}, {"objective": "b"}],
        "seed": [0, 1],
        "evaluation": {"metrics": [["dci"], ["dci", "mig"]]},
    }
    points = expand_grid(grid)
    assert len(points) == (2 + 1) * 2 * 2
    assert {"model": {"objective": "b"}, "seed": 1, "evaluation": {"metrics": ["dci"]}} in points
    assert sum(p["model"] == {"objective": "a", "beta": 2} for p in points) == 4
    assert expand_grid({}) == [{}]


def test_grid_also_adds_blocks_with_some_axes_replaced_and_not_crossed(tmp_path: Path) -> None:
    spec = load_spec(
        write(
            tmp_path,
            "name: s\ndataset: {name: dsprites}\nmodel: {objective: beta_vae}\n"
            "grid:\n  dataset: [{name: dsprites}, {name: shapes3d}]\n"
            "  split: [montero2022_r2e, montero2022_extrp]\n  seed: [0, 1]\n"
            "  also:\n    - {dataset: [{name: mpi3d}],"
            " split: [montero2022_r2e, montero2022_objc_gt3]}\n"
            "    - {dataset: [{name: mpi3d}], split: [montero2022_extrp],"
            " model: [{objective: beta_vae, beta: [2]}]}\n",
        )
    )
    cells = [
        (t.dataset.name, t.split, t.model.options.get("beta", 1), t.seed) for t in spec.trials()
    ]
    assert len(cells) == spec.num_trials() == 8 + 4 + 2
    # The block's split is MPI3D's alone; the block's new key is an axis of that block only.
    assert {c[1] for c in cells if c[0] != "mpi3d"} == {"montero2022_r2e", "montero2022_extrp"}
    assert {(c[1], c[2]) for c in cells if c[0] == "mpi3d"} == {
        ("montero2022_r2e", 1.0),
        ("montero2022_objc_gt3", 1.0),
        ("montero2022_extrp", 2.0),
    }
    assert {c[3] for c in cells} == {0, 1}  # the grid's other axes cross each block
    # --set grid.also=[] leaves the grid's own product.
    spec_path = tmp_path / "study.yaml"
    assert load_spec(spec_path, ["grid.also=[]"]).num_trials() == 8
    # A block repeating a grid point trains nothing twice: refused, naming the grid.
    text = spec_path.read_text().replace(
        "{dataset: [{name: mpi3d}], split: [montero2022_r2e",
        "{dataset: [{name: dsprites}], split: [montero2022_r2e",
    )
    with pytest.raises(SpecError, match="grid"):
        load_spec(write(tmp_path, text, "repeat.yaml"))


@pytest.mark.parametrize(
    ("also", "message"),
    [
        ("also: {dataset: [{name: mpi3d}]}", "grid.also is a list of grid blocks"),
        ("also: [{}]", "grid.also is a list of grid blocks"),
        ("also: [{also: [{seed: [1]}]}]", r"grid.also\[0\] holds its own `also`"),
        ("also: [{modle: {objective: vae}}]", r"grid.also\[0\].modle"),
    ],
)
def test_grid_also_refuses_what_is_not_a_list_of_blocks(
    tmp_path: Path, also: str, message: str
) -> None:
    path = write(tmp_path, f"name: s\ngrid:\n  seed: [0]\n  {also}\n")
    with pytest.raises(SpecError, match=message) as info:
        load_spec(path)
    assert str(path) in str(info.value)


def test_a_models_own_learning_rate_is_the_one_its_trials_train_at(tmp_path: Path) -> None:
    spec = load_spec(
        write(
            tmp_path,
            "name: s\ntrain: {lr: 1.0e-4}\ngrid:\n  model:\n    - {objective: beta_vae}\n"
            "    - {objective: gt_decoder, architecture: mlp, lr: 1.0e-3}\n",
        )
    )
    rates = {t.model.objective: (t.train.lr, t.model.lr) for t in spec.trials()}
    assert rates == {"beta_vae": (1e-4, None), "gt_decoder": (1e-3, 1e-3)}
    gt = next(t for t in spec.trials() if t.model.objective == "gt_decoder")
    # a trial re-read from its saved config keeps its rate
    assert TrialConfig.model_validate(gt.model_dump()) == gt
    assert trial_params(gt)["train.lr"] == 1e-3
    with pytest.raises(SpecError) as info:
        load_spec(write(tmp_path, "name: s\ngrid: {model: [{objective: gt_decoder, lr: 0}]}\n"))
    assert "model.lr" in str(info.value) and "train.lr" not in str(info.value)


def test_overrides_parse_yaml_values_and_create_paths() -> None:
    raw = {"name": "x", "train": {"steps": 500}}
    out = apply_overrides(raw, ["train.steps=50", "grid.seed=[0, 1, 2]", "model.beta=4"], "f")
    assert out["train"]["steps"] == 50
    assert out["grid"]["seed"] == [0, 1, 2]
    assert out["model"]["beta"] == 4
    assert raw["train"]["steps"] == 500  # the input is not mutated
    spec = load_spec(SMOKE, ["train.steps=20", "grid.seed=[0,1]"])
    assert spec.train.steps == 20 and len(spec.trials()) == 16


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("name: s\ntrian: {steps: 1}\n", "trian", ["unknown field"]),
        ("name: s\ntrain: {steps: many}\n", "train.steps", ["integer", "many"]),
        ("name: s\ntrain: {steps: -1}\n", "train.steps", ["greater than or equal to 0"]),
        (
            "name: s\nmodel: {objective: beta_vea}\n",
            "model.objective",
            ["did you mean 'beta_vae'", "ada_gvae"],
        ),
        (
            "name: s\ndataset: {name: mnist}\n",
            "dataset.name",
            ["unknown dataset", "color_dsprites"],
        ),
        ("name: s\nsplit: ditadi_hues\n", "split", ["did you mean 'dittadi_hues'"]),
        (
            "name: s\nevaluation: {metrics: [dci, migg]}\n",
            "evaluation.metrics[1]",
            ["did you mean 'mig'"],
        ),
        ("name: s\nevaluation: {probes: [svm]}\n", "evaluation.probes[0]", ["unknown probe"]),
        ("name: 'bad name/x'\n", "name", ["pattern"]),
        ("train: {steps: 1}\n", "name", ["Field required"]),
        ("name: s\nresources: {cpu: 0}\n", "resources.cpu", ["greater than 0"]),
        ("name: s\ngrid: {model: {betta: [1, 2]}}\n", "grid.model.betta", ["did you mean 'beta'"]),
        ("name: s\ngrid: {seed: []}\n", "grid", ["no trial"]),
        (
            "name: s\ngrid: {model: [{objective: beta_vae, beta: [1, -2]}]}\n",
            "grid point 1",
            ["model.beta", "greater than or equal to 0"],
        ),
    ],
)
def test_spec_errors_name_file_field_and_allowed(
    tmp_path: Path, text: str, field: str, words: list[str]
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert f"{path}: {field}" in message, message
    for word in words:
        assert word in message, message


def test_malformed_yaml_and_missing_file(tmp_path: Path) -> None:
    bad = write(tmp_path, "name: s\ntrain: {steps: [1,\n")
    with pytest.raises(SpecError, match=rf"{bad}: not valid YAML"):
        load_spec(bad)
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "absent.yaml")
    with pytest.raises(SpecError, match="is a mapping"):
        load_spec(write(tmp_path, "- 1\n- 2\n", "list.yaml"))
    with pytest.raises(SpecError, match="--set"):
        apply_overrides({}, ["train.steps"], "x.yaml")


def test_spec_round_trips_through_yaml() -> None:
    spec = load_spec(SMOKE)
    again = validate_spec(yaml.safe_load(yaml.safe_dump(spec.model_dump(mode="json"))), "dump")
    assert again == spec and isinstance(again, StudySpec)


def test_cli_rejects_a_bad_spec_before_ray_starts(tmp_path: Path) -> None:
    import ray

    from raystudy.cli import app

    fresh_ray()  # the shared test cluster of an earlier module in this process
    path = write(tmp_path, "name: s\nmodel: {objective: nope}\n")
    result = CliRunner().invoke(app, ["run", str(path), "--output", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert f"{path}: model.objective" in result.output
    assert not ray.is_initialized()
    assert not (tmp_path / "out").exists()


def test_a_trials_params_hold_only_the_hyperparameters_its_objective_reads() -> None:
    # MLflow filters and analyze --by group on these: a factor_vae must not show a beta.
    def params(**model: object) -> dict[str, object]:
        flat = trial_params(TrialConfig.model_validate({"model": model}))
        return {k.removeprefix("model."): v for k, v in flat.items() if k.startswith("model.")}

    common = {"architecture": "conv", "latent_dim": 10}
    assert params(objective="factor_vae", beta=4) == {
        "objective": "factor_vae",
        **common,
        "gamma": 10.0,  # unset: the objective's default
    }
    assert params(objective="beta_vae", beta=4, gamma=30) == {
        "objective": "beta_vae",
        **common,
        "beta": 4.0,
    }
    assert params(objective="ada_gvae", k="random") == {
        "objective": "ada_gvae",
        **common,
        "beta": 1.0,
        "kl_mode": "kl",
        "k": "random",
    }
    assert params(objective="gt_decoder") == {"objective": "gt_decoder", **common}
    flat = trial_params(TrialConfig.model_validate({}))
    assert {"seed", "train.lr", "evaluation.num_train", "dataset.name"} <= set(flat)


def test_a_set_that_the_grid_or_search_space_replaces_is_refused() -> None:
    # smoke.yaml's grid sets model.objective, model.beta, train.input_noise and seed.
    with pytest.raises(SpecError) as refused:
        load_spec(SMOKE, ["model.beta=8", "seed=3"])
    said = str(refused.value)
    assert "--set model.beta: the grid sets model.beta in every trial" in said
    assert "--set seed: the grid sets seed in every trial" in said
    assert "--set 'grid.model=...'" in said
    space = ROOT / "search_spaces" / "optuna_transfer.yaml"
    with pytest.raises(SpecError, match=r"--set train.lr: the search.space sets train.lr"):
        load_spec(space, ["train.lr=1e-3"])
    with pytest.raises(SpecError, match=r"--set model: the grid sets model.objective in every"):
        load_spec(SMOKE, ["model={objective: factor_vae, latent_dim: 4}"])
    # What the grid leaves alone, and the grid itself, can be set; so can the base value of
    # the trials whose alternative does not set the field (here: the beta_vae ones).
    spec = load_spec(SMOKE, ["model.latent_dim=4", "grid.seed=[5]"])
    assert {t.model.latent_dim for t in spec.trials()} == {4}
    assert {t.seed for t in spec.trials()} == {5}
    partial = [
        "grid={}",
        "search.method=random",
        "search.space={model: [{objective: beta_vae}, {objective: ada_gvae, latent_dim: 6}]}",
        "model.latent_dim=4",
    ]
    trials = load_spec(SMOKE, partial).trials()
    assert {(t.model.objective, t.model.latent_dim) for t in trials} <= {
        ("beta_vae", 4),
        ("ada_gvae", 6),
    }
