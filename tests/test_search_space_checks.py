"""`search.space` is judged whole before anything starts: each distribution's arguments, every
value it can produce against the field it sets, and alternatives that share their constants
are each drawn. No Ray, no training: specs are only loaded."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import optuna
import pytest

from raystudy.checks import load_spec
from raystudy.spec import SpecError, TrialConfig
from raystudy.spec import search_space as search

OPTUNA = "search: {{method: optuna, metric: dis/mig, mode: max, num_samples: 4, space: {space}}}"
RANDOM = "search: {{method: random, num_samples: {n}, space: {space}}}"


def write(tmp_path: Path, block: str) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(f"name: s\n{block}\n")
    return path


def refused(path: Path, field: str, words: tuple[str, ...]) -> str:
    """The SpecError message for `path`: one problem, naming the file and `field`, holding
    every one of `words`."""
    with pytest.raises(SpecError) as info:
        load_spec(path, check_data=False)
    message = str(info.value)
    assert message.count(str(path)) == 1 and f"{path}: {field}: " in message, message
    for word in words:
        assert word in message, message
    return message


# -- 1. distribution arguments ---------------------------------------------------------------

BAD_ARGUMENTS = [
    # int: step zero, negative, fractional (each crashed in Optuna: `step > 0` must hold)
    ("{model: {latent_dim: {int: [2, 10, 0]}}}", "model.latent_dim.int", ["step >= 1"]),
    ("{model: {latent_dim: {int: [2, 10, -1]}}}", "model.latent_dim.int", ["step >= 1"]),
    ("{model: {latent_dim: {int: [2, 10, 0.5]}}}", "model.latent_dim.int", ["whole numbers"]),
    # int: bounds that are not whole numbers were truncated silently
    ("{model: {latent_dim: {int: [1.5, 1.9]}}}", "model.latent_dim.int", ["whole numbers"]),
    ("{model: {latent_dim: {int: [2, 10, 1, 1]}}}", "model.latent_dim.int", ["[low, high, step]"]),
    ("{model: {latent_dim: {int: [10, 10]}}}", "model.latent_dim.int", ["low < high"]),
    # Optuna would lower high to 9 quietly
    ("{model: {latent_dim: {int: [1, 10, 2]}}}", "model.latent_dim.int", ["[1, 9, 2]"]),
    ("{seed: {int: [0, 100000000000000000000000]}}", "seed.int", ["2**53"]),
    # uniform: infinite / nan bounds crashed in numpy (Range exceeds valid bounds)
    ("{model: {beta: {uniform: [0, .inf]}}}", "model.beta.uniform", ["two finite numbers"]),
    ("{model: {beta: {uniform: [.nan, 1]}}}", "model.beta.uniform", ["two finite numbers"]),
    ("{model: {beta: {uniform: [-1.0e+308, 1.0e+308]}}}", "model.beta.uniform", ["finite"]),
    # numbers past float's range (Optuna samples through floats): no OverflowError
    ("{seed: {int: [0, 1" + "0" * 400 + "]}}", "seed.int", ["2**53"]),
    ("{model: {beta: {uniform: [0, 1" + "0" * 400 + "]}}}", "model.beta.uniform", ["finite"]),
    ("{model: {beta: {loguniform: [1, 1" + "0" * 400 + "]}}}", "model.beta.loguniform", ["finite"]),
    # uniform: a third value was ignored silently
    ("{model: {beta: {uniform: [1, 2, 3]}}}", "model.beta.uniform", ["needs [low, high]"]),
    ("{model: {beta: {uniform: [2, 1]}}}", "model.beta.uniform", ["low < high"]),
    ("{model: {beta: {uniform: [1, true]}}}", "model.beta.uniform", ["needs [low, high]"]),
    ("{model: {beta: {loguniform: [1, 2, 3]}}}", "model.beta.loguniform", ["needs [low, high]"]),
    ("{model: {beta: {loguniform: [1, .inf]}}}", "model.beta.loguniform", ["finite"]),
    ("{model: {beta: {loguniform: [0, 2]}}}", "model.beta.loguniform", ["0 < low < high"]),
    ("{model: {beta: {choice: []}}}", "model.beta.choice", ["non-empty list"]),
]


@pytest.mark.parametrize(
    ("space", "field", "words"),
    BAD_ARGUMENTS,
    ids=[f"{field.rsplit('.', 1)[-1]}-{i}" for i, (_, field, _) in enumerate(BAD_ARGUMENTS)],
)
@pytest.mark.parametrize("method", ["random", "optuna"])
def test_bad_distribution_arguments_are_refused_with_what_is_allowed(
    tmp_path: Path, method: str, space: str, field: str, words: list[str]
) -> None:
    block = OPTUNA.format(space=space) if method == "optuna" else RANDOM.format(n=2, space=space)
    refused(write(tmp_path, block), f"search.space.{field}", ("needs ", *words))


@pytest.mark.parametrize(
    "space",
    [
        "{model: {latent_dim: {int: [2, 10, 2]}}}",
        "{model: {latent_dim: {int: [2.0, 10.0]}}}",
        "{model: {beta: {uniform: [0, 1.0e+300]}}}",
        "{model: {beta: {loguniform: [1.0e-3, 1]}}}",
    ],
)
def test_sound_distributions_still_load(tmp_path: Path, space: str) -> None:
    spec = load_spec(write(tmp_path, RANDOM.format(n=8, space=space)), check_data=False)
    assert len(spec.points()) == 8


# -- 2. the whole range of each distribution, checked against its field -----------------------


@pytest.mark.parametrize(
    ("space", "field", "words"),
    [
        # 64 random draws of 1..1025 almost never hit 1025, which a trial would refuse
        (
            "{model: {latent_dim: {int: [1, 1025]}}}",
            "search.space.model.latent_dim",
            ["high bound 1025", "less than or equal to 1024"],
        ),
        (
            "{model: {latent_dim: {int: [0, 8]}}}",
            "search.space.model.latent_dim",
            ["low bound 0", "greater than or equal to 1"],
        ),
        (
            "{train: {lr: {uniform: [0, 1.0e-3]}}}",
            "search.space.train.lr",
            ["low bound 0", "greater than 0"],
        ),
        # the one bad option of 400: drawn by the 64-draw sample with probability ~15%
        (
            "{model: {latent_dim: {choice: [" + ", ".join(map(str, range(1, 400))) + ", 2000]}}}",
            "search.space.model.latent_dim",
            ["option #399 2000", "less than or equal to 1024"],
        ),
        (
            "{evaluation: {metrics: {choice: [[dci], [mig], [nosuch]]}}}",
            "search.space.evaluation.metrics",
            ["option #2 ['nosuch']", "unknown metric 'nosuch'", "allowed: "],
        ),
        (
            "{model: [{objective: beta_vae, beta: {uniform: [0, 4]}},"
            " {objective: ada_gvae, beta: {loguniform: [1, 16]}, k: {choice: [1, 0]}}]}",
            "search.space.model[1].k",
            ["option #1 0", "greater than or equal to 1"],
        ),
    ],
    ids=["int-high", "int-low", "uniform-low", "choice-rare", "choice-list", "alternative"],
)
def test_optuna_space_is_checked_over_its_whole_range(
    tmp_path: Path, space: str, field: str, words: tuple[str, ...]
) -> None:
    refused(write(tmp_path, OPTUNA.format(space=space)), field, words)


def test_random_space_is_checked_over_its_whole_range_not_just_its_draws(tmp_path: Path) -> None:
    space = "{model: {latent_dim: {int: [1, 1025]}}}"
    path = write(tmp_path, RANDOM.format(n=2, space=space))
    refused(path, "search.space.model.latent_dim", ("high bound 1025", "1024"))


def test_a_rule_of_the_whole_block_is_left_to_the_spec_values() -> None:
    # checkpoint_every must be a multiple of report_every: a field on its own cannot say,
    # so the range check leaves it to the validation of each point with the spec's values.
    space = {"train": {"checkpoint_every": {"choice": [75, 150]}}}
    assert search.check_space(space, TrialConfig) == []


def test_check_space_is_fast_for_many_distributions() -> None:
    space: dict[str, Any] = {
        "model": [
            {
                "objective": "beta_vae",
                "architecture": {"choice": ["conv", "mlp"]},
                "beta": {"uniform": [0.5 + i, 1.5 + i]},
                "latent_dim": {"int": [1, 64]},
                "c_max": {"loguniform": [1, 50]},
            }
            for i in range(100)
        ],
        "train": {"lr": {"loguniform": [1e-5, 1e-3]}, "batch_size": {"int": [8, 256, 8]}},
    }
    start = time.perf_counter()
    assert search.check_space(space, TrialConfig) == []
    assert time.perf_counter() - start < 0.5  # measured ~0.01 s


def test_bound_points_reach_every_bound_option_and_alternative() -> None:
    space = {
        "model": [
            {"objective": "beta_vae", "beta": {"loguniform": [1, 16]}},
            {"objective": "ada_gvae", "latent_dim": {"int": [3, 9, 2]}},
        ],
        "train": {"input_noise": {"choice": [False, True]}, "lr": {"uniform": [1e-4, 1e-3]}},
        "seed": 3,
    }
    points = search.bound_points(space)
    assert len({repr(p) for p in points}) == len(points)
    models = [p["model"] for p in points]
    assert {m.get("beta") for m in models if m["objective"] == "beta_vae"} == {1, 16}
    assert {m.get("latent_dim") for m in models if m["objective"] == "ada_gvae"} == {3, 9}
    assert {p["train"]["input_noise"] for p in points} == {False, True}
    assert {p["train"]["lr"] for p in points} == {1e-4, 1e-3}
    assert all(p["seed"] == 3 for p in points)
    assert search.bound_points(space) == points  # deterministic


# -- 3. alternatives that share their constants ---------------------------------------------

DUPLICATES = (
    "{model: [{objective: beta_vae, beta: {uniform: [1, 2]}},"
    " {objective: beta_vae, beta: {uniform: [3, 4]}}]}"
)


def test_alternatives_with_the_same_constants_are_all_drawn(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, RANDOM.format(n=40, space=DUPLICATES)), check_data=False)
    betas = [p["model"]["beta"] for p in spec.points()]
    assert any(1 <= b <= 2 for b in betas) and any(3 <= b <= 4 for b in betas), betas
    assert all(1 <= b <= 2 or 3 <= b <= 4 for b in betas), betas


def test_optuna_draws_each_alternative_under_its_own_parameter_names() -> None:
    space = {
        "model": [
            {"objective": "beta_vae", "beta": {"uniform": [1, 2]}},
            {"objective": "beta_vae", "beta": {"uniform": [3, 4]}},
        ]
    }
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    betas = []
    for _ in range(30):
        trial = study.ask()
        betas.append(search.define_by_run(trial, space)["override"]["model"]["beta"])
        study.tell(trial, 0.0)
    assert any(b < 2.5 for b in betas) and any(b > 2.5 for b in betas), betas
    names = {name for t in study.trials for name in t.params}
    assert names == {
        "model",
        "model[objective=beta_vae#0].beta",
        "model[objective=beta_vae#1].beta",
    }


def test_distinct_labels_are_kept_so_existing_optuna_studies_keep_their_names() -> None:
    alternatives: list[dict[str, Any]] = [
        {"objective": "beta_vae", "beta": {"uniform": [1, 2]}},
        {"objective": "factor_vae"},
        {"objective": "beta_vae", "beta": {"uniform": [3, 4]}},
        {"beta": {"uniform": [1, 2]}},
    ]
    assert search.alternative_labels(alternatives) == [
        "objective=beta_vae#0",
        "objective=factor_vae",
        "objective=beta_vae#2",
        "3",
    ]
    assert search.alternative_labels(alternatives[1:2]) == ["objective=factor_vae"]


def test_random_points_of_a_space_without_duplicates_are_unchanged() -> None:
    # The labels of distinct alternatives are what they were: the same seed, the same draws.
    space = {
        "model": [
            {"objective": "beta_vae", "beta": {"loguniform": [1, 16]}},
            {"objective": "ada_gvae", "latent_dim": {"int": [3, 6]}},
        ]
    }
    assert search.random_points(space, 3, seed=0) == [  # as drawn before labels could repeat
        {"model": {"objective": "ada_gvae", "latent_dim": 5}},
        {"model": {"objective": "beta_vae", "beta": 5.994238354681728}},
        {"model": {"objective": "ada_gvae", "latent_dim": 6}},
    ]
