"""Bad study specs: each is refused before anything starts, naming file, field and what is
allowed. tests/test_spec.py covers the common cases; these are the ones it does not."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import fresh_ray
from typer.testing import CliRunner

from raystudy.checks import load_spec
from raystudy.cli import app
from raystudy.spec import MAX_DEPTH, MAX_TRIALS, SpecError, parse_yaml

# A custom split on colour-dSprites (hue has 12 values, pos_x 32): its sets are selectors.
SPLIT = "split: {{encoder: {encoder}, scenarios: {{s: {{train: {train}, test: {test}{extra}}}}}}}"


def custom_split(
    encoder: str = "{hue: [0, 2, 3, 5, 6, 8, 9, 11]}",
    train: str = "{hue: [0, 2]}",
    test: str = "{hue: [1, 4]}",
    extra: str = "",
) -> str:
    return "dataset: {name: color_dsprites}\n" + SPLIT.format(
        encoder=encoder, train=train, test=test, extra=extra
    )


def spec_error(tmp_path: Path, text: str, field: str = "", words: tuple[str, ...] = ()) -> str:
    """The SpecError message of `text` (given a name if it has none), which must name the
    file, then `field` (when given), and contain every one of `words`."""
    path = tmp_path / "study.yaml"
    path.write_text(text if text.startswith("name:") else "name: s\n" + text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert f"{path}: {field}{': ' if field else ''}" in message, message
    for word in words:
        assert word in message, message
    return message


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        # unknown keys, below the top level, say what is allowed
        ("train: {stesp: 1}\n", "train.stesp", ["allowed: batch_size", "did you mean 'steps'"]),
        (
            "execution: {max_failure: 2}\n",
            "execution.max_failure",
            ["did you mean 'max_failures'"],
        ),
        ("search: {metod: grid}\n", "search.metod", ["did you mean 'method'"]),
        (
            "search: {method: random, space: {model: {beta: {uniform: [1, 2]}}}, "
            "asha: {grace_periods: 1}}\n",
            "search.asha.grace_periods",
            ["did you mean 'grace_period'"],
        ),
        # wrong types
        ("evaluation: {metrics: dci}\n", "evaluation.metrics", ["valid list", "'dci'"]),
        ("model: {latent_dim: 3.5}\n", "model.latent_dim", ["integer", "3.5"]),
        ("model: {objective: ada_gvae, k: true}\n", "model.k", ["integer", "ada_gvae"]),
        ("train: {lr: fast}\n", "train.lr", ["number", "fast"]),
        ("resources: 2\n", "resources", ["dictionary"]),
        ("grid: {seed: '0,1'}\n", "grid point 0 (seed=0,1) -> seed", ["integer"]),
        ("1: one\n", "1", ["Keys should be strings"]),
        # unknown names, with the allowed ones and a suggestion
        ("model: {architecture: convv}\n", "model.architecture", ["allowed:", "'conv'"]),
        ("dataset: {name: dsprite}\n", "dataset.name", ["did you mean 'dsprites'"]),
        (
            "model: {objective: ada_gvae, kl_mode: symmetric}\n",
            "model.kl_mode",
            ["'kl' or 'symmetric_kl'"],
        ),
        # an option of another objective, named with what this one reads
        ("model: {k: 2}\n", "model.k", ["objective 'beta_vae' does not read k", "beta"]),
        ("search: {method: bayes}\n", "search.method", ["'grid', 'random' or 'optuna'"]),
        (
            "grid: {model: [{objective: betavae}]}\n",
            "grid point 0 (model.objective=betavae) -> model.objective",
            ["did you mean 'beta_vae'"],
        ),
        (
            "grid: {split: [iid, dittadi_hue]}\n",
            "grid point 1 (split=dittadi_hue) -> split",
            ["did you mean 'dittadi_hues'"],
        ),
        # grids and searches that hold no trial
        ("grid: {model: {beta: []}}\n", "grid", ["no trial"]),
        ("grid: {model: [{objective: beta_vae, beta: []}]}\n", "grid", ["no trial"]),
        ("search: {method: random}\n", "search", ["space", "empty"]),
        # resources
        ("resources: {cpu: -1}\n", "resources.cpu", ["greater than 0", "-1"]),
        ("resources: {cpu: two}\n", "resources.cpu", ["number", "two"]),
        ("resources: {gpu: -0.5}\n", "resources.gpu", ["greater than or equal to 0"]),
        (
            "execution: {max_concurrent_trials: 0}\n",
            "execution.max_concurrent_trials",
            ["greater than or equal to 1"],
        ),
        ("execution: {system_metrics: sometimes}\n", "execution.system_metrics", ["boolean"]),
        # a block that only a validator of the whole block can judge
        (
            "train: {report_every: 2, checkpoint_every: 3}\n",
            "train",
            ["checkpoint_every (3) must be a multiple of report_every (2)"],
        ),
        (
            "grid: {}\nsearch: {method: random, space: {model: {beta: {uniform: [1]}}}}\n",
            "search.space.model.beta.uniform",
            ["needs [low, high]"],
        ),
        # a readout no model of the study can be scored by
        (
            "evaluation: {probes: [gbt, own]}\n",
            "evaluation.probes",
            ["'own'", "one code dimension per factor", "supervised"],
        ),
    ],
)
def test_field_errors_name_the_file_the_field_and_what_is_allowed(
    tmp_path: Path, text: str, field: str, words: list[str]
) -> None:
    message = spec_error(tmp_path, text, field, tuple(words))
    # A model validator's input is the whole block: noise, left out of the message.
    assert "(got {" not in message, message


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name: s\ntrain: {steps: 1}\ntrain: {lr: 0.1}\n", ["duplicate key 'train'", "line 2"]),
        ("name: s\nmodel: {beta: 1, beta: 2}\n", ["duplicate key 'beta'"]),
        ("name: s\n\ttrain: {}\n", ["not valid YAML", "'\\t'"]),
        ("name: 's\n", ["not valid YAML", "quoted scalar"]),
        # well-formed YAML that PyYAML's constructors cannot convert (they raise plain errors)
        ("name: s\nseed: " + "9" * 5000 + "\n", ["not valid YAML", "cannot read int value"]),
        ("name: s\nseed: !!int 12a\n", ["not valid YAML", "cannot read int value", "line 2"]),
        ("name: s\ngrid: {seed: [2001-13-45]}\n", ["cannot read timestamp value", "month"]),
        ("name: s\nmodel: {beta: !!float abc}\n", ["cannot read float value"]),
        ("name: s\n" + "x: " + "[" * 200 + "]" * 200 + "\n", ["nested too deeply"]),
        ("name: s\ngrid: {seed: &s [1, *s]}\n", ["grid.seed[1]", "nested too deeply"]),
        (
            "name: s\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{b}: &{b} [{', '.join([f'*{a}'] * 10)}]\n"
                for a, b in zip("abcd", "bcde", strict=True)
            ),
            ["more than 100000 values"],
        ),
    ],
)
def test_malformed_yaml_is_a_spec_error(tmp_path: Path, text: str, words: list[str]) -> None:
    spec_error(tmp_path, text, words=tuple(words))


def test_merge_key_bomb_is_refused_or_stays_small() -> None:
    """Merge keys repeating each other tenfold per level (10**11 entries at the last): PyYAML
    before 6.0.4 copied every entry and hung, and the spec loader's cap refuses it there;
    PyYAML 6.0.4 merges each key once. Either way reading it ends with a bounded document."""
    text = "name: s\na0: &a0 {k: 1}\n" + "".join(
        f"a{i}: &a{i} {{<<: [{', '.join([f'*a{i - 1}'] * 10)}], k{i}: 1}}\n" for i in range(1, 12)
    )
    try:
        doc = parse_yaml(text)
    except ValueError as exc:
        assert "not valid YAML" in str(exc) and "more than 100000 values" in str(exc), exc
        assert "merge keys" in str(exc)
    else:
        # a_i holds k and k1..ki once each: i + 1 entries, not 10**i.
        assert {k: len(v) for k, v in doc.items() if k != "name"} == {
            f"a{i}": i + 1 for i in range(12)
        }


@pytest.mark.parametrize("value", ["9" * 5000, "!!timestamp x", "[" * 5000 + "]" * 5000])
def test_set_values_and_dataset_options_are_read_like_the_file(tmp_path: Path, value: str) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("name: s\n")
    with pytest.raises(SpecError, match=r"--set seed: value is not valid YAML: "):
        load_spec(path, [f"seed={value}"])
    shown = CliRunner().invoke(
        app,
        [
            "datasets",
            "show",
            "dsprites",
            "--out",
            str(tmp_path / "x.png"),
            "-O",
            f"real_seed={value}",
        ],
    )
    assert shown.exit_code == 2, shown.output  # a message, not a traceback
    assert "--option real_seed: value is not valid YAML: " in shown.output, shown.output


def test_yaml_merge_keys_still_override(tmp_path: Path) -> None:
    # `<<: {...}` then a key of its own is how YAML overrides: not a duplicate key.
    path = tmp_path / "merge.yaml"
    path.write_text("name: s\ntrain:\n  <<: {steps: 5, lr: 0.01}\n  steps: 7\n")
    spec = load_spec(path)
    assert spec.train.steps == 7 and spec.train.lr == 0.01


def test_a_file_that_is_not_utf8_text_is_a_spec_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"name: s\n\xff\xfe\x00garbage")
    with pytest.raises(SpecError, match=rf"{path}: cannot read the file as UTF-8 text"):
        load_spec(path)


def test_deep_specs_are_refused_before_anything_recurses(tmp_path: Path) -> None:
    selector = "{not: " * MAX_DEPTH + "{}" + "}" * MAX_DEPTH
    message = spec_error(tmp_path, f"dataset: {{name: dsprites}}\nsplit: {{encoder: {selector}}}\n")
    assert "split.encoder.not.not" in message and "nested too deeply" in message


def test_too_many_trials_is_refused_without_expanding_the_grid(tmp_path: Path) -> None:
    axis = "[" + ", ".join(str(i) for i in range(100)) + "]"
    text = f"grid: {{seed: {axis}, model: {{beta: {axis}, latent_dim: {axis}}}}}\n"
    message = spec_error(tmp_path, text)  # 10^6 points: refused at once, not enumerated
    assert "grid: 1000000 trials" in message and str(MAX_TRIALS) in message
    message = spec_error(
        tmp_path,
        "search: {method: random, num_samples: 200000, space: {seed: {int: [0, 9]}}}\n",
    )
    assert "search.num_samples: 200000 trials" in message


# --- datasets and splits: checked before Ray starts, by building them once -------------------


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        (
            "dataset: {name: dsprites}\nsplit: dittadi_hues\n",
            "split",
            ["needs factor 'hue'", "datasets with 'hue': color_dsprites, finger"],
        ),
        (
            "dataset: {name: color_dsprites}\nsplit: montero_range\n",
            "split",
            ["defined on the grids of dsprites, shapes3d"],
        ),
        (
            "dataset: {name: dsprites, options: {resolutoin: 32}}\nsplit: iid\n",
            "dataset.options.resolutoin",
            ["unknown option", "did you mean 'resolution'"],
        ),
        (
            "dataset: {name: dsprites, options: {resolution: large}}\nsplit: iid\n",
            "dataset.options.resolution",
            ["must be an integer, got 'large'"],
        ),
        (
            "dataset: {name: dsprites, options: {resolution: 4}}\nsplit: iid\n",
            "dataset.options",
            ["resolution must be in 8..1024 pixels, got 4"],
        ),
        (
            "dataset: {name: shapes3d, options: {resolution: 64000}}\nsplit: iid\n",
            "dataset.options",
            ["resolution must be in 16..1024 pixels, got 64000"],
        ),
        # a model that cannot be built on the data: found before Ray, not in every trial
        (
            "dataset: {name: dsprites, options: {resolution: 128}}\nsplit: iid\n",
            "model.architecture",
            ["conv architecture is for 32x32 or 64x64 images, got 128", "resnet 64 or 128 px"],
        ),
        (
            "dataset: {name: dsprites, options: {resolution: 1024}}\nsplit: iid\n"
            "model: {architecture: mlp}\n",
            "model.architecture",
            [
                "mlp at resolution 1024 has 2,5",
                "parameters, more than 2,147,483,648",
                "lower dataset",
            ],
        ),
        (
            "dataset: {name: dsprites, options: {resolution: 128}}\nsplit: iid\n"
            "model: {architecture: resnet}\ngrid: {model: {architecture: [resnet, conv]}}\n",
            "grid point 1 (model.architecture=conv) -> model.architecture",
            ["conv architecture is for 32x32 or 64x64 images, got 128"],
        ),
        (
            "dataset: {name: mpi3d_file}\nsplit: iid\n",
            "dataset.options.path",
            ["needs option(s) path", "options: {path: ...}"],
        ),
        (
            "dataset: {name: dsprites_file, options: {path: /nonexistent/d.npz}}\nsplit: iid\n",
            "dataset.options.path",
            ["'/nonexistent/d.npz' not found", "expected the dSprites .npz"],
        ),
        # custom splits: selectors naming unknown factors, indices out of range, nothing
        (
            custom_split(train="{hues: [0]}"),
            "split.scenarios.s.train.hues",
            ["unknown factor 'hues'", "did you mean 'hue'"],
        ),
        (
            custom_split(test="{hue: [4, 12]}"),
            "split.scenarios.s.test.hue[1]",
            ["index 12 is out of range for factor 'hue' (allowed 0..11)"],
        ),
        (
            custom_split(encoder="{all: [{hue: [0]}, {hue: [1]}]}"),
            "split.encoder",
            ["selects nothing"],
        ),
        (
            custom_split(test="{pos_x: {ge: 20, le: 10}}"),
            "split.scenarios.s.test",
            ["selects nothing", "pos_x"],
        ),
        (
            custom_split(extra=", ood_factors: [hue], domain: cartoon"),
            "split.scenarios.s.domain",
            ["'cartoon'", "allowed: sim, real, photo"],
        ),
        (
            custom_split(extra=", oodfactors: [hue]"),
            "split.scenarios.s",
            ["unknown field 'oodfactors'", "did you mean 'ood_factors'"],
        ),
        # an OOD scenario whose probe-test set shares combinations with its probe-train set
        (
            custom_split(train="{hue: [0, 2]}", test="{hue: [2, 4]}", extra=", ood_factors: [hue]"),
            "split.scenarios.s.test",
            ["overlaps the scenario's train set", "'hue': 2", "OOD in ['hue']"],
        ),
        (
            custom_split(
                train="{pos_x: {le: 15}}", test="{random: {p: 0.5}}", extra=", ood_factors: [pos_x]"
            ),
            "split.scenarios.s.test",
            ["overlaps the scenario's train set"],
        ),
        (
            custom_split().replace("encoder:", "heldout: {hue: [0, 1]}, encoder:"),
            "split.heldout",
            ["overlaps the encoder set", "'hue': 0"],
        ),
    ],
)
def test_dataset_and_split_errors_are_found_before_any_trial(
    tmp_path: Path, text: str, field: str, words: list[str]
) -> None:
    spec_error(tmp_path, text, field, tuple(words))


def test_ood_scenarios_that_are_disjoint_or_shift_the_domain_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    disjoint = custom_split(
        train="{hue: [0, 2]}", test="{hue: [1, 4]}", extra=", ood_factors: [hue]"
    )
    path.write_text("name: s\n" + disjoint)
    assert load_spec(path).split["scenarios"]["s"]["ood_factors"] == ["hue"]
    # The same set fitted on sim and tested on real is a domain shift (Dittadi's OOD2-B).
    shift = ", ood_factors: [hue], train_domain: sim, domain: real"
    path.write_text("name: s\n" + custom_split(train="{hue: [0]}", test="{hue: [0]}", extra=shift))
    assert load_spec(path).split["scenarios"]["s"]["domain"] == "real"


def test_a_problem_only_one_grid_point_has_is_reported_at_that_point(tmp_path: Path) -> None:
    text = (
        "dataset: {name: color_dsprites}\nsplit: dittadi_hues\n"
        "grid: {dataset: [{name: color_dsprites}, {name: shapes3d}], seed: [0, 1]}\n"
    )
    message = spec_error(tmp_path, text)
    assert "grid point 2 (dataset.name=shapes3d, seed=0) -> split: " in message, message
    assert "needs factor 'hue'" in message
    assert message.count("needs factor 'hue'") == 1  # once, not once per seed


# --- nothing starts: the command line stops before Ray and before the study folder ------------


@pytest.mark.parametrize("command", ["run", "optimize", "plan"])
def test_cli_refuses_a_bad_dataset_before_ray_or_the_study_folder(
    tmp_path: Path, command: str
) -> None:
    import ray

    bad = tmp_path / "bad.yaml"
    bad.write_text(custom_split(test="{hue: [40]}").join(["name: bad\n", "\n"]))
    args = [command, str(bad), "--output", str(tmp_path / "out")]
    if command == "plan":
        args = [command, str(bad), "--no-calibrate"]
    fresh_ray()  # a shared test cluster of an earlier module in this process
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert f"{bad}: split.scenarios.s.test.hue[0]: index 40 is out of range" in result.output
    assert "Study 'bad'" not in result.output  # the line printed once a study starts
    assert not (tmp_path / "out").exists()
    assert not ray.is_initialized()


SPACE = "space: {model: {beta: {uniform: [1, 2]}}}"


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        # YAML booleans where a number belongs (yes/on read as true, then as 1)
        ("train: {steps: yes}\n", "train.steps", ["not the boolean true", "yes/no/on/off"]),
        (
            "grid: {model: {beta: [1, no]}}\n",
            "grid point 1 (model.beta=False) -> model.beta",
            ["not the boolean false"],
        ),
        ("model: {beta: .inf}\n", "model.beta", ["finite number"]),
        ("resources: {cpu: .nan}\n", "resources.cpu", ["finite number"]),
        # seeds every generator (numpy, torch, the search samplers) takes
        ("seed: -1\n", "seed", ["greater than or equal to 0"]),
        ("evaluation: {seed: 4294967296}\n", "evaluation.seed", ["less than 4294967296"]),
        (f"search: {{method: random, seed: -1, {SPACE}}}\n", "search.seed", ["greater than"]),
        ("name: " + "a" * 101 + "\n", "name", ["at most 100 characters"]),
        ("evaluation: {probe_train: 10}\n", "evaluation.probe_train", ["greater than or equal"]),
        (
            f"search: {{method: random, {SPACE}, asha: {{grace_period: 50, max_t: 10}}}}\n",
            "search.asha",
            ["grace_period (50) must be at most max_t (10)"],
        ),
        # ASHA would cut every surviving trial off at max_t, before its results report
        (
            "train: {steps: 40, report_every: 10}\n"
            f"search: {{method: random, {SPACE}, asha: {{grace_period: 1, max_t: 4}}}}\n",
            "search.asha.max_t",
            ["4 is fewer than the 5 reports", "train.steps 40 / report_every 10"],
        ),
        (
            "train: {report_every: 10}\n"
            "search: {method: random, space: {train: {steps: {int: [10, 50]}}}, "
            "asha: {grace_period: 1, max_t: 5}}\n",
            "search.asha.max_t",
            ["fewer than the 6 reports", "at least 6"],
        ),
        # stores every trial process can reach
        ("tracking: {uri: 'bogus://x'}\n", "tracking.uri", ["unknown tracking store", "sqlite://"]),
        ("tracking: {uri: 'sqlite://'}\n", "tracking.uri", ["names no database file"]),
        (
            "tracking: {uri: 'postgres://u@h/db'}\n",
            "tracking.uri",
            ["does not know the scheme 'postgres://'", "postgresql://u@h/db"],
        ),
        (
            "tracking: {uri: 'postgresql+asyncpg://u@h/db'}\n",
            "tracking.uri",
            ["unknown PostgreSQL driver 'asyncpg'", "psycopg2, psycopg, pg8000"],
        ),
        (
            "tracking: {uri: 'file:///tmp/mlruns'}\n",
            "tracking.uri",
            ["file store", "MLFLOW_ALLOW_FILE_STORE=true", "sqlite:///"],
        ),
        (
            f"search: {{method: optuna, metric: dis/mig, mode: max, storage: notaurl, {SPACE}}}\n",
            "search.storage",
            ["not a database URL"],
        ),
        # a password written in a store URL would be copied to every file the study writes
        (
            "tracking: {uri: 'postgresql://me:hunter2@h/db'}\n",
            "tracking.uri",
            ["'postgresql://me:***@h/db' holds a password", "postgresql://me:${MY_DB_PASSWORD}@h"],
        ),
        ("tracking: {uri: 'sqlite:///${HOME}/m.db'}\n", "tracking.uri", ["takes no ${VAR}"]),
        (
            "search: {method: optuna, metric: dis/mig, mode: max, "
            f"storage: 'postgresql://me:${{PW}}@h/db', {SPACE}}}\n",
            "search.storage",
            ["neither a password nor a ${VAR}", "PGPASSWORD"],
        ),
        # settings the chosen method never reads
        ("search: {method: grid, num_samples: 5}\n", "search", ["num_samples has no effect"]),
        (
            f"search: {{method: random, metric: dis/mig, sampler: nsga2, {SPACE}}}\n",
            "search",
            ["metric, sampler have no effect with method random", "asha.metric"],
        ),
        (
            f"search: {{method: optuna, metric: [], mode: [], {SPACE}}}\n",
            "search",
            ["needs `metric`"],
        ),
        # two equal trials would be one model trained twice under one name
        ("grid: {seed: [0, 1, 0]}\n", "grid", ["grid point 2 (seed=0) is the same trial as"]),
    ],
)
def test_values_that_would_fail_or_mislead_later_are_refused_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, field: str, words: list[str]
) -> None:
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    spec_error(tmp_path, text, field, tuple(words))


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        # weak supervision whose pairs the split cannot give
        (
            "dataset: {name: dsprites}\nmodel: {objective: ada_gvae, k: 6}\n",
            "model.k",
            ["k=6: pairs cannot differ in more factors than vary", "(5)", "allowed"],
        ),
        (
            "dataset: {name: color_dsprites}\nsplit: {encoder: {hue: [0], shape: [0], "
            "scale: [0], orientation: [0], pos_x: [0]}, scenarios: {}}\n"
            "model: {objective: ml_vae, k: random}\n",
            "model.k",
            ["k='random' needs at least 2 factors", "it has 1"],
        ),
        # scenario names become metric keys, which MLflow and the analysis parse
        (
            custom_split().replace("scenarios: {s:", "scenarios: {'a/b':"),
            "split.scenarios",
            ["'a/b' is not allowed", "letters, digits"],
        ),
        (
            "dataset: {name: dsprites, options: {real_seed: -1}}\n",
            "dataset.options.real_seed",
            ["real_seed must be in 0..4294967295"],
        ),
        # what a search optimises or stops on must be something the trials report
        (
            "evaluation: {metrics: [mig]}\n"
            f"search: {{method: optuna, metric: dis/mig_typo, mode: max, {SPACE}}}\n",
            "search.metric",
            ["'dis/mig_typo' is not reported", "they report: dis/mig"],
        ),
        (
            f"search: {{method: optuna, metric: transfer/ood2_a/gbt/mae, mode: min, {SPACE}}}\n",
            "search.metric",
            ["split iid", "transfer/iid/gbt/mae"],
        ),
        (
            "evaluation: {metrics: [mig]}\n"
            "search: {method: optuna, metric: [dis/mig, dis/dci_d], mode: [max, max], "
            f"{SPACE}}}\n",
            "search.metric[1]",
            ["'dis/dci_d' is not reported"],
        ),
        (
            f"search: {{method: random, {SPACE}, asha: {{metric: dis/mig, mode: max}}}}\n",
            "search.asha.metric",
            ["not reported while training", "train/*"],
        ),
        (
            f"search: {{method: random, {SPACE}, asha: {{metric: train/los}}}}\n",
            "search.asha.metric",
            ["'train/los' is not reported", "train/loss"],
        ),
    ],
)
def test_what_only_the_data_or_the_trials_reports_can_judge_is_refused_at_load(
    tmp_path: Path, text: str, field: str, words: list[str]
) -> None:
    spec_error(tmp_path, text, field, tuple(words))


def test_relative_stores_are_made_absolute_and_an_objectives_own_terms_are_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each trial runs in a working folder of its own: a relative path would name another file.
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nmodel: {objective: beta_tcvae}\ntracking: {uri: 'sqlite:///rel.db'}\n"
        f"search: {{method: random, {SPACE}, asha: {{metric: train/tc}}}}\n"
    )
    spec = load_spec(path)
    assert spec.tracking.uri == f"sqlite:///{tmp_path / 'rel.db'}"
    assert spec.search.asha is not None and spec.search.asha.metric == "train/tc"


@pytest.mark.parametrize(
    ("uri", "stored"),
    [
        # Which driver a bare postgresql:// loads depends on SQLAlchemy's release (psycopg 3
        # from 2.1 on); the `postgres` extra installs psycopg2.
        ("postgresql://u@h:5432/db", "postgresql+psycopg2://u@h:5432/db"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
        ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
    ],
)
def test_a_postgres_store_names_its_driver(tmp_path: Path, uri: str, stored: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\ntracking: {{uri: '{uri}'}}\n")
    assert load_spec(path).tracking.uri == stored


def test_a_bad_corner_of_a_search_space_is_found_even_when_no_draw_reaches_it(
    tmp_path: Path,
) -> None:
    # The one draw (seed 0) takes report_every 2, which divides checkpoint_every; the option 5
    # does not, and a trial drawing it later would fail its config there.
    space = "{train: {report_every: {choice: [1, 2, 3, 4, 6, 12, 5]}}}"
    spec_error(
        tmp_path,
        "train: {checkpoint_every: 12, report_every: 2}\n"
        f"search: {{method: random, num_samples: 1, seed: 0, space: {space}}}\n",
        "search.space corner 6 (train.report_every=5) -> train",
        ("checkpoint_every (12) must be a multiple of report_every (5)",),
    )
