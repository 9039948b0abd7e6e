"""Held-out reconstructions: which inputs of a split its encoder never saw (and the nearest it
did), and the figures a trial logs of them, into a real MLflow store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread
from mlflow.tracking import MlflowClient

from raystudy.data import GroundTruthDataset, get_dataset, get_split
from raystudy.data.splits.heldout import differences, draw_unseen, heldout_sets, nearest_seen
from raystudy.data.splits.papers.dittadi import DITTADI_HELD_OUT_HUES
from raystudy.spec import TrialConfig
from raystudy.tags import ARTIFACT_ERROR_TAG
from raystudy.trials.common import TrialContext
from raystudy.trials.single import LocalReporter, run_trial


def test_nearest_seen_is_the_closest_combination_of_the_set() -> None:
    sizes = (4, 5, 3)
    in_set = lambda idx: idx[:, 0] < 2  # noqa: E731 - the set: factor 0 below 2
    queries = np.array([[3, 2, 1], [2, 4, 0], [1, 1, 1]])
    pool = np.array([[0, 0, 0], [1, 4, 2]])
    seen = nearest_seen(queries, sizes, in_set, pool)
    assert in_set(seen).all()
    # one step back into the set along factor 0, the rest kept; a member is its own nearest
    assert seen[:, 1:].tolist() == queries[:, 1:].tolist()
    assert seen[:, 0].tolist() == [1, 1, 1]
    # no one-factor neighbour in the set: the closest pool row
    two_steps = lambda i: (i[:, 0] + i[:, 1] == 5) & (i[:, 2] == 2)  # noqa: E731
    far = nearest_seen(np.array([[3, 0, 0]]), sizes, two_steps, pool)
    assert far.tolist() == [[1, 4, 2]]
    assert differences(queries[0], seen[0], ["a", "b", "c"]) == "a 3→1"
    assert differences(np.array([3, 0, 0]), far[0], ["a", "b", "c"]) == "a 3→1\n+2 more"
    with pytest.raises(ValueError, match="no combination of the set"):
        nearest_seen(queries, sizes, lambda i: np.zeros(len(i), bool), pool)


@pytest.fixture(scope="module")
def datasets() -> dict[str, GroundTruthDataset]:
    return {
        "dsprites": get_dataset("dsprites", orientation_grid="closed"),
        "color_dsprites": get_dataset("color_dsprites"),
    }


@pytest.mark.parametrize(
    ("dataset", "split", "expected"),
    [
        ("dsprites", "montero_element", [("heldout", "heldout", "sim")]),
        # its scenario tests on the held-out set itself: shown once
        ("dsprites", "montero_extrapolation", [("heldout", "heldout", "sim")]),
        ("dsprites", "schott_composition", [("heldout", "heldout", "sim")]),
        # OOD1 scenarios test inside the encoder's hues: not held out
        (
            "color_dsprites",
            "dittadi_hues",
            [("ood2_a", "ood2_a/test", "sim"), ("ood2_b", "ood2_b/test", "real")],
        ),
        ("dsprites", "iid", []),
    ],
)
def test_the_held_out_sets_of_each_split(
    datasets: dict[str, GroundTruthDataset],
    dataset: str,
    split: str,
    expected: list[tuple[str, str, str]],
) -> None:
    ds = datasets[dataset]
    built = get_split(split, ds)
    sets = heldout_sets(built)
    assert [(h.name, h.role, h.domain) for h in sets] == expected
    hue = ds.factors.index("hue") if "hue" in ds.factors.names else None
    for i, held in enumerate(sets):
        idx = draw_unseen(built, held, 8, np.random.default_rng([0, i]))
        assert len(idx) == 8 and built.mask(held.role, idx).all()
        if held.shifts_domain:
            continue
        # never trained on; the nearest seen combination was
        assert not built.mask("encoder", idx).any()
        pool = built.sample("encoder", 256, np.random.default_rng(1))
        seen = nearest_seen(idx, ds.factors.sizes, lambda c: built.mask("encoder", c), pool)
        assert built.mask("encoder", seen).all()
        if hue is not None:
            # Dittadi's unseen hues: the nearest seen image differs in hue alone, by one step
            assert set(idx[:, hue].tolist()) <= set(DITTADI_HELD_OUT_HUES)
            assert np.array_equal(np.delete(seen, hue, 1), np.delete(idx, hue, 1))
            assert (np.abs(seen[:, hue] - idx[:, hue]) == 1).all()


def run(tmp_path: Path, dataset: dict, split: str) -> tuple[set[str], dict[str, str], str]:
    """A two-step trial on `split`: its logged artifacts, its tags, and its run id."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment(split)
    config = TrialConfig.model_validate(
        {
            "dataset": dataset,
            "split": split,
            "model": {"objective": "beta_vae", "latent_dim": 4},
            "train": {"steps": 2, "batch_size": 8, "report_every": 2},
            "evaluation": {
                "metrics": [],
                "probes": ["linear"],
                "num_eval_images": 8,
                "probe_train": 40,
                "probe_test": 20,
            },
        }
    )
    run_trial(config, TrialContext(uri, experiment, None, split, split, split), LocalReporter())
    found = client.search_runs([experiment])[0]
    paths = {a.path for a in client.list_artifacts(found.info.run_id)}
    return paths, found.data.tags, found.info.run_id


def test_a_dittadi_trial_logs_unseen_hues_and_the_real_domain(tmp_path: Path) -> None:
    paths, tags, run_id = run(tmp_path, {"name": "color_dsprites"}, "dittadi_hues")
    assert ARTIFACT_ERROR_TAG not in tags
    heldout = {p for p in paths if p.startswith("heldout_reconstructions")}
    assert heldout == {"heldout_reconstructions_ood2_a.png", "heldout_reconstructions_ood2_b.png"}
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    image = imread(client.download_artifacts(run_id, "heldout_reconstructions_ood2_b.png"))
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 300
