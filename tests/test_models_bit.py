"""BiT's ResNet-v2 (Schott et al.'s ImageNet-21k networks): its layout, weight standardisation
against a computation written out here, and BiT's release files (written by the test in their
format: TensorFlow names, height-width-in-out kernels) loaded tensor by tensor, trained from,
and refused when they are another network's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tiny import SMOKE, tiny

from raystudy.checks import load_spec
from raystudy.data import get_dataset, get_split
from raystudy.models import build, build_model, get_objective, num_parameters
from raystudy.models.bit_resnet import BiTBackbone, StdConv2d
from raystudy.models.imagenet_nets import load_imagenet_weights
from raystudy.spec import TrainConfig
from raystudy.training.loop import train

CPU = torch.device("cpu")
R50 = (3, 4, 6, 3)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def bit_release(path: Path, units: tuple[int, ...] = R50, extra: dict | None = None) -> dict:
    """A file as BiT publishes BiT-M-R50x1.npz: every tensor under resnet/, kernels HWIO,
    a 21,843-way head; random values (seeded)."""
    rng = np.random.default_rng(3)
    arrays: dict[str, np.ndarray] = {}

    def conv(name: str, k: int, c_in: int, c_out: int) -> None:
        arrays[f"{name}/standardized_conv2d/kernel"] = rng.normal(size=(k, k, c_in, c_out))

    def norm(name: str, c: int) -> None:
        arrays[f"{name}/group_norm/gamma"] = rng.normal(1, 0.1, size=c)
        arrays[f"{name}/group_norm/beta"] = rng.normal(0, 0.1, size=c)

    conv("resnet/root_block", 7, 3, 64)
    c_in = 64
    for b, (n, mid) in enumerate(zip(units, (64, 128, 256, 512), strict=True), start=1):
        for u in range(1, n + 1):
            unit = f"resnet/block{b}/unit{u:02d}"
            norm(f"{unit}/a", c_in)
            conv(f"{unit}/a", 1, c_in, mid)
            norm(f"{unit}/b", mid)
            conv(f"{unit}/b", 3, mid, mid)
            norm(f"{unit}/c", mid)
            conv(f"{unit}/c", 1, mid, 4 * mid)
            if u == 1:
                conv(f"{unit}/a/proj", 1, c_in, 4 * mid)
            c_in = 4 * mid
    norm("resnet", c_in)
    arrays["resnet/head/conv2d/kernel"] = rng.normal(size=(1, 1, c_in, 8))  # 21,843 in theirs
    arrays["resnet/head/conv2d/bias"] = np.zeros(8)
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    arrays.update(extra or {})
    np.savez(path, **arrays)
    return arrays


def test_the_bit_networks_have_bit_m_r50x1_and_r101x1_counts() -> None:
    # BiT-M-R50x1 with a 1000-way head has 25,549,352 parameters, R101x1 44,541,480; less the
    # head (2048 x 1000 + 1000):
    assert num_parameters(BiTBackbone(R50)) == 25_549_352 - 2_049_000
    with torch.device("meta"):
        assert num_parameters(BiTBackbone((3, 4, 23, 3))) == 44_541_480 - 2_049_000
    model = build_model("bit_resnet50", 1, 6, 64)  # grey images: the stem keeps RGB's shape
    assert model.encoder.backbone.stem.weight.shape == (64, 3, 7, 7)
    mu, logvar = model.encode(torch.rand(2, 1, 64, 64))
    assert mu.shape == logvar.shape == (2, 6)


def test_weight_standardisation_against_a_direct_computation() -> None:
    torch.manual_seed(0)
    conv = StdConv2d(4, 5, 3, stride=2, padding=1, bias=False)
    with torch.no_grad():
        conv.weight.mul_(7).add_(3)  # far from standardised
    x = torch.randn(2, 4, 9, 9)
    w = conv.weight.detach().numpy().astype(np.float64)
    flat = w.reshape(5, -1)
    standard = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-10)
    expected = torch.nn.functional.conv2d(
        x.double(), torch.from_numpy(standard.reshape(w.shape)), stride=2, padding=1
    )
    torch.testing.assert_close(conv(x).double(), expected, atol=1e-4, rtol=1e-4)
    # ... so scaling a filter leaves the output as it was.
    with torch.no_grad():
        before = conv(x)
        conv.weight[2].mul_(10)
        torch.testing.assert_close(conv(x), before, atol=1e-4, rtol=1e-4)


def test_a_bit_release_file_loads_tensor_by_tensor_and_training_starts_from_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "BiT-M-R50x1.npz"
    arrays = bit_release(path)
    spec = load_spec(
        SMOKE,
        tiny(
            "bit",
            "grid={seed: [0]}",
            "model.beta=null",
            "model.objective=supervised_pretrained",
            "model.architecture=bit_resnet50",
            f"model.weights={path}",
        ),
        check_data=False,
    )
    config = spec.trials()[0].model
    dataset = get_dataset("color_dsprites")
    model, objective = build(config, 3, dataset.resolution, dataset.factors.num_factors)
    x = torch.rand(2, 3, 64, 64)
    before = model.encode(x)[0].detach()
    objective.setup(model, CPU)
    net = model.encoder.backbone
    kernel = arrays["resnet/root_block/standardized_conv2d/kernel"]
    assert torch.equal(net.stem.weight, torch.from_numpy(kernel.transpose(3, 2, 0, 1)))
    unit = net.stages[2]["unit01"]
    proj = arrays["resnet/block3/unit01/a/proj/standardized_conv2d/kernel"]
    assert torch.equal(unit.downsample.weight[:, :, 0, 0], torch.from_numpy(proj[0, 0].T))
    assert torch.equal(
        unit.gn2.bias, torch.from_numpy(arrays["resnet/block3/unit01/b/group_norm/beta"])
    )
    assert torch.equal(net.norm.weight, torch.from_numpy(arrays["resnet/group_norm/gamma"]))
    assert net.stages[0]["unit02"].downsample is None  # no projection where shapes agree
    assert not torch.allclose(model.encode(x)[0], before)
    # The training loop loads it before the first step, then trains from there.
    torch.manual_seed(1)
    model, objective = build(config, 3, dataset.resolution, dataset.factors.num_factors)
    split = get_split("iid", dataset)
    config_train = TrainConfig(steps=1, batch_size=4, lr=1e-4)
    train(model, objective, dataset, split, config_train, seed=0, device=CPU)
    stem = model.encoder.backbone.stem.weight.detach()
    moved = stem - torch.from_numpy(kernel.transpose(3, 2, 0, 1))
    assert 0 < float(moved.abs().max()) < 0.01


def test_another_networks_file_is_refused_naming_it(tmp_path: Path) -> None:
    model = build_model("bit_resnet50", 3, 4, 64)
    deeper = tmp_path / "deeper.npz"
    extra = np.zeros((1, 1, 1024, 256), np.float32)
    bit_release(deeper, extra={"resnet/block3/unit07/a/standardized_conv2d/kernel": extra})
    with pytest.raises(ValueError, match=r"deeper\.npz is not a BiT file.*1 unexpected.*unit07"):
        get_objective("supervised_pretrained", weights=str(deeper)).setup(model, CPU)
    torch.save({"conv1.weight": torch.zeros(64, 3, 7, 7)}, tmp_path / "torchvision.pt")
    with pytest.raises(ValueError, match=r"torchvision\.pt: not a BiT \.npz file"):
        load_imagenet_weights(model.encoder, tmp_path / "torchvision.pt")
    # BiT's file given to torchvision's ResNet-50 says which network takes it.
    bit_file = tmp_path / "BiT-M-R50x1.npz"
    bit_release(bit_file)
    with pytest.raises(ValueError, match=r"not a file torch.save wrote.*bit_resnet50"):
        load_imagenet_weights(build_model("resnet50", 3, 4, 64).encoder, bit_file)
    wrong = dict(np.load(bit_file))
    wrong["resnet/group_norm/gamma"] = np.ones(1024, np.float32)
    np.savez(tmp_path / "narrow.npz", **wrong)
    with pytest.raises(ValueError, match=r"resnet/group_norm/gamma has shape \(1024,\)"):
        load_imagenet_weights(model.encoder, tmp_path / "narrow.npz")


def test_the_spec_takes_bit_architectures_and_refuses_a_missing_file(tmp_path: Any) -> None:
    missing = tmp_path / "BiT-M-R101x1.npz"
    sets = ["grid={seed: [0]}", "model.beta=null", "model.objective=supervised_pretrained"]
    sets += ["model.architecture=bit_resnet101", f"model.weights={missing}"]
    with pytest.raises(Exception, match=r"model\.weights.*BiT's \.npz"):
        load_spec(SMOKE, tiny("bit", *sets), check_data=False)
