"""Training loop: every objective learns through it, it reports on schedule, and it resumes
exactly (bit-for-bit on CPU) from a checkpoint, the objectives' own networks included."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest
import torch

from raystudy.data import DATASETS, get_dataset, get_split
from raystudy.models import OBJECTIVES, VAE, Objective, build, get_objective
from raystudy.spec import ModelConfig, TrainConfig
from raystudy.training.loop import (
    BatchSampler,
    TrainingDiverged,
    kl_warmup,
    preferred_memory_format,
    train,
)

CPU = torch.device("cpu")
ALL = OBJECTIVES.names()


# One torch thread (conftest.py): small batches on shared cores.
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def setup(objective: str = "beta_vae", dataset: str = "color_dsprites", **hyper: Any):
    ds = get_dataset(dataset)
    split = get_split("dittadi_hues" if dataset == "color_dsprites" else "iid", ds)
    torch.manual_seed(0)  # same initial weights for every call
    config = ModelConfig(objective=objective, latent_dim=4, **hyper)
    model, obj = build(config, ds.channels, ds.resolution, ds.factors.num_factors)
    return ds, split, model, obj


def test_kl_warmup_is_linear() -> None:
    assert [kl_warmup(s, 4) for s in (0, 2, 4, 9)] == [0.0, 0.5, 1.0, 1.0]
    assert kl_warmup(0, 0) == 1.0


@pytest.mark.parametrize("objective", ["beta_vae", "ada_gvae"])
def test_training_reports_on_schedule_and_lowers_the_loss(objective: str) -> None:
    ds, split, model, obj = setup(objective)
    cfg = TrainConfig(steps=40, batch_size=16, lr=1e-3, report_every=10, checkpoint_every=20)
    events: list[tuple[int, bool, bool]] = []
    history = train(
        model,
        obj,
        ds,
        split,
        cfg,
        seed=0,
        device=CPU,
        on_progress=lambda step, row, state: events.append(
            (step, row is not None, state is not None)
        ),
    )
    assert events == [(10, True, False), (20, True, True), (30, True, False), (40, True, True)]
    assert [h["step"] for h in history] == [10, 20, 30, 40]
    assert history[-1]["train/recon"] < history[0]["train/recon"]
    assert not model.training


def _datasets() -> list[str]:
    """color_dsprites, and shapes3d once the data layer registers it."""
    return ["color_dsprites"] + (["shapes3d"] if "shapes3d" in DATASETS else [])


@pytest.mark.parametrize("dataset", _datasets())
@pytest.mark.parametrize("objective", ALL)
def test_every_objective_trains_through_the_same_loop(objective: str, dataset: str) -> None:
    ds, split, model, obj = setup(objective, dataset, k="random")
    # The loss on one fixed batch (and fixed posterior noise) before and after: a batch-to-batch
    # comparison would be noise on shapes3d, whose Bernoulli loss has a high floor.
    fixed = BatchSampler(
        ds, split, 32, obj.pair_k, False, CPU, np.random.default_rng(123), triples=obj.triples
    )()

    def fixed_loss() -> float:
        torch.manual_seed(0)
        with torch.no_grad():
            return float(obj(model, fixed).loss)

    obj.setup(model, CPU)
    before = fixed_loss()
    cfg = TrainConfig(steps=16, batch_size=8, lr=2e-3, report_every=8, checkpoint_every=16)
    history = train(model, obj, ds, split, cfg, seed=1, device=CPU)
    assert all(math.isfinite(v) for h in history for v in h.values())
    assert {"train/loss", "train/recon", "train/kl"} <= set(history[0])
    assert fixed_loss() < before


def _equal_states(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal_states(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_equal_states(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _resume_equals_uninterrupted(objective: str, **hyper: Any) -> list[dict[str, float]]:
    """Train 6 steps; train 3, checkpoint, resume in fresh objects to 6: the same history and
    state, bit for bit. Returns the history."""
    cfg = TrainConfig(
        steps=6, batch_size=4, lr=1e-3, report_every=1, checkpoint_every=3, input_noise=True
    )
    ds, split, full, obj_full = setup(objective, k="random", **hyper)
    full_history = train(full, obj_full, ds, split, cfg, seed=3, device=CPU)

    states: list[dict[str, Any]] = []

    def keep(step: int, row: Any, state: dict[str, Any] | None) -> None:
        if state is not None and step == 3:
            states.append(copy.deepcopy(state))

    ds, split, first, obj = setup(objective, k="random", **hyper)
    train(first, obj, ds, split, cfg, seed=3, device=CPU, on_progress=keep)
    _, _, resumed, obj_resumed = setup(objective, k="random", **hyper)  # a fresh process
    history = train(resumed, obj_resumed, ds, split, cfg, seed=3, device=CPU, resume_from=states[0])
    assert history == full_history
    assert _equal_states(full.state_dict(), resumed.state_dict())
    # FactorVAE: the discriminator and its optimiser's moments too
    assert _equal_states(obj_full.state_dict(), obj_resumed.state_dict())
    if objective == "factor_vae":
        assert obj_resumed.state_dict()["optimizer"]["state"]
    return full_history


@pytest.mark.parametrize("objective", ALL)
def test_resume_from_checkpoint_equals_an_uninterrupted_run(objective: str) -> None:
    _resume_equals_uninterrupted(objective)


def test_resume_is_exact_through_cascades_discrete_code() -> None:
    history = _resume_equals_uninterrupted("cascade_vae", discrete_from=2)
    shares = [[h[f"train/category_{k}"] for k in range(3)] for h in history]
    assert shares[:2] == [[0.0, 0.0, 0.0]] * 2  # c = 0 before discrete_from
    assert all(sum(row) == pytest.approx(1.0) for row in shares[2:])


def test_resume_is_exact_through_slow_vaes_laplace_pairs() -> None:
    _resume_equals_uninterrupted("slow_vae", data_distribution="laplace", rate_data="random")


def test_resume_is_exact_through_lie_group_vaes_decoder_coin() -> None:
    history = _resume_equals_uninterrupted("lie_group_vae", encoder_features_prob=0.5)
    coins = [h["train/encoder_features"] for h in history]
    assert 0.0 in coins[3:] and 1.0 in coins[3:]  # both decoder inputs after the resume


def test_the_learning_rate_steps_down_at_each_milestone_and_survives_a_resume() -> None:
    cfg = TrainConfig(
        steps=6, batch_size=4, lr=1e-3, report_every=1, lr_milestones=[2, 4], lr_decay=0.5
    )
    ds, split, model, obj = setup("beta_vae")
    lrs: dict[int, float] = {}
    states: dict[int, dict[str, Any]] = {}

    def keep(step: int, row: Any, state: dict[str, Any] | None) -> None:
        if state is not None:
            lrs[step] = state["optimizer"]["param_groups"][0]["lr"]
            states[step] = copy.deepcopy(state)

    train(model, obj, ds, split, cfg, seed=0, device=CPU, on_progress=keep)
    # the update that ends step s ran at learning_rate(s - 1): 1e-3 for 2, then halved twice
    assert lrs == pytest.approx({1: 1e-3, 2: 1e-3, 3: 5e-4, 4: 5e-4, 5: 2.5e-4, 6: 2.5e-4})
    _, _, resumed, obj2 = setup("beta_vae")
    train(resumed, obj2, ds, split, cfg, seed=0, device=CPU, resume_from=states[3])
    assert _equal_states(model.state_dict(), resumed.state_dict())
    with pytest.raises(ValueError, match="increasing order"):
        TrainConfig(lr_milestones=[4, 2])


def test_batches_carry_normalised_factors_and_pairs_differ_in_k() -> None:
    ds = get_dataset("dsprites")
    split = get_split("iid", ds)
    sizes = np.array(ds.factors.sizes)

    def indices(batch_factors: torch.Tensor) -> np.ndarray:
        return np.rint(batch_factors.numpy() * (sizes - 1)).astype(int)

    sampler = BatchSampler(ds, split, 256, None, False, CPU, np.random.default_rng(0))
    batch = sampler()
    assert batch.factors is not None and batch.inputs2 is None
    idx = split.sample("encoder", 256, np.random.default_rng(0))  # the same draw
    assert np.allclose(batch.factors.numpy(), ds.factors.normalise(idx))
    assert torch.equal(batch.inputs, ds.render(idx))

    for k, allowed in [(2, {2}), ("random", {1, 2, 3, 4})]:
        sampler = BatchSampler(ds, split, 400, k, False, CPU, np.random.default_rng(1))
        batch = sampler()
        assert batch.factors is not None and batch.factors2 is not None
        changed = (indices(batch.factors) != indices(batch.factors2)).sum(axis=1)
        assert set(changed.tolist()) == allowed  # random: uniform in 1..K-1, K = 5
        if k == "random":
            counts = np.bincount(changed, minlength=5)[1:]
            assert counts.min() > 60  # ~100 each


def test_pairs_cannot_differ_in_more_factors_than_vary() -> None:
    ds = get_dataset("dsprites")
    split = get_split("iid", ds)
    with pytest.raises(ValueError, match="k=6"):
        BatchSampler(ds, split, 4, 6, False, CPU, np.random.default_rng(0))


def test_divergence_is_detected_with_its_step() -> None:
    ds, split, model, obj = setup()
    cfg = TrainConfig(steps=20, batch_size=4, lr=1e9, report_every=2)
    with pytest.raises(TrainingDiverged) as info:
        train(model, obj, ds, split, cfg, seed=0, device=CPU)
    assert info.value.step % 2 == 0 and info.value.step <= 20


def test_objectives_without_own_networks_have_no_state() -> None:
    _, _, model, obj = setup("beta_vae")
    assert obj.state_dict() == {}
    with pytest.raises(ValueError, match="no state"):
        obj.load_state_dict({"discriminator": {}})
    assert isinstance(obj, Objective) and isinstance(model, VAE)
    assert get_objective("vae").pair_k is None and get_objective("ml_vae", k=2).pair_k == 2


def test_training_layout_changes_speed_not_results() -> None:
    """`train.channels_last` lays conv models out channels-last on CPU (faster there); the
    numbers equal NCHW training up to float rounding, and the model comes back NCHW."""
    _, _, conv, _ = setup()
    _, _, mlp, _ = setup(architecture="mlp")
    assert preferred_memory_format(conv, CPU) == torch.channels_last
    assert preferred_memory_format(mlp, CPU) == torch.contiguous_format  # nothing to gain
    assert preferred_memory_format(conv, torch.device("cuda")) == torch.contiguous_format

    runs = []
    for channels_last in (False, True):
        cfg = TrainConfig(
            steps=6,
            batch_size=8,
            lr=1e-3,
            report_every=2,
            input_noise=True,
            channels_last=channels_last,
        )
        layout = torch.channels_last if channels_last else torch.contiguous_format
        ds, split, model, obj = setup()
        start = {k: v.clone() for k, v in model.state_dict().items()}
        seen: list[bool] = []  # whether the conv weights were in `layout` during training

        def look(step: int, row: Any, state: Any, layout=layout, seen=seen) -> None:
            weights = [w for w in (state or {}).get("model", {}).values() if w.dim() == 4]
            seen.extend(w.is_contiguous(memory_format=layout) for w in weights)

        history = train(model, obj, ds, split, cfg, seed=1, device=CPU, on_progress=look)
        assert seen and all(seen)
        assert all(p.is_contiguous() for p in model.parameters())
        runs.append((history, model.state_dict(), start))
    (nchw, nchw_state, start), (nhwc, nhwc_state, other_start) = runs
    assert all(torch.equal(start[k], other_start[k]) for k in start)
    for row, other in zip(nchw, nhwc, strict=True):
        assert other == pytest.approx(row, rel=1e-5)
    # Adam divides each gradient by its own running scale, so a rounding-level difference in
    # a near-zero gradient can move that weight by up to lr per step: the layouts' weights
    # agree to a small fraction of how far training moved them (measured 9e-5 of 6e-3 here,
    # 2026-11-25; a wrong layout moves them apart by as much as training does).
    moved = max((nchw_state[k] - start[k]).abs().max().item() for k in start)
    apart = max((nchw_state[k] - nhwc_state[k]).abs().max().item() for k in nchw_state)
    assert moved > 1e-3
    assert apart < 0.05 * moved


@pytest.mark.heavy  # compiling takes 20-80 s on this CPU
def test_compiled_training_equals_eager_and_hands_back_a_plain_model() -> None:
    cfg = TrainConfig(steps=4, batch_size=8, lr=1e-3, report_every=2)
    ds, split, eager, obj = setup()
    eager_history = train(eager, obj, ds, split, cfg, seed=1, device=CPU)
    ds, split, model, obj = setup()
    compiled = cfg.model_copy(update={"compile": True})
    during: list[bool] = []

    def look(step: int, row: Any, state: Any) -> None:
        during.append(model.encoder._compiled_call_impl is not None)

    history = train(model, obj, ds, split, compiled, seed=1, device=CPU, on_progress=look)
    assert during and all(during)
    # Evaluation after training must run eagerly: a compiled module would compile anew for
    # each batch size it meets.
    assert model.encoder._compiled_call_impl is None
    assert model.decoder._compiled_call_impl is None
    for row, other in zip(eager_history, history, strict=True):
        assert other == pytest.approx(row, rel=1e-4)
    a, b = eager.state_dict(), model.state_dict()
    assert a.keys() == b.keys()  # compiling in place leaves the checkpoint keys alone
    assert max((a[k] - b[k]).abs().max().item() for k in a) < 1e-4
