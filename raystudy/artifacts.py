"""What a trial shows in the MLflow UI, beside its numbers: why a model scores as it does.

- `reconstructions.png`: inputs of the encoder's training distribution (top row) over their
  reconstructions (bottom row);
- `heldout_reconstructions.png` (`heldout_reconstructions_<set>.png` when a split has several
  held-out sets, `raystudy.data.splits.heldout`): inputs the encoder never trained on, their
  reconstructions, and the nearest combination it did train on, rendered in `sim` (Montero et
  al. 2021, Figs. 2a/9/12; Dittadi et al. 2021, Figs. 7/16/17);
- `traversals.png`: one latent dimension varied per row, the others held at one image's code
  (Higgins et al. 2017, Fig. 7; disentanglement_lib's "fixed interval" traversal over [-2, 2]
  of the prior, or [0, 1] for the ground-truth code of gt_decoder);
- `traversals.gif`: the same traversal animated, one frame per value, each frame every code
  dimension side by side (the convention of disentanglement_lib and disentangling-vae);
- `dci_importance.png`: the DCI importance matrix R (codes x factors) as a Hinton diagram
  (Eastwood & Williams 2018, Fig. 2): a disentangled code has one large square per row;
- `latent_projection.png` (splits with a held-out set): training and held-out codes on the
  dimensions tied to the excluded factors (Montero et al. 2022, `raystudy.latent_projection`);
- `composition_trials.png` (composition models): reference, transform, target and the
  model's output for training triples and triples with a held-out target, each column
  labelled with its action (Montero et al. 2021, Fig. 6a).

The importance matrix is the logged `dis/dci_*`'s own when the trial's scoring hands over the
sample it scored and the metric's fit is still kept (`metrics.dci.logged_importance`: no
second fit, and the figure's D and C are the logged ones); otherwise it is refitted on a
capped subsample (`DCI_TRAIN` + `DCI_TEST` points), so drawing it costs a few seconds
whatever `evaluation.num_train` is, and its D and C may differ slightly from the logged ones.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from matplotlib.figure import Figure
from numpy.typing import NDArray

from raystudy.data import GroundTruthDataset, Split
from raystudy.data.splits.composition import HELDOUT_ROLES, TRAIN_ROLES, Triples, sample_triples
from raystudy.data.splits.heldout import (
    TRAIN_DOMAIN,
    HeldoutSet,
    differences,
    draw_unseen,
    heldout_sets,
    nearest_seen,
)
from raystudy.latent_projection import projected_factors, projection_figure, tied_dimensions
from raystudy.metrics.composition import triple_batch
from raystudy.metrics.dci import (
    completeness,
    disentanglement,
    importance_matrix,
    logged_importance,
)
from raystudy.models import VAE
from raystudy.models.objectives.composition import compose
from raystudy.models.vae import reconstruction_logits
from raystudy.scoring import FixedSample, encode_means
from raystudy.spec import TrialConfig

DCI_TRAIN, DCI_TEST = 500, 250
TRAVERSAL_STEPS = 7
HELDOUT_IMAGES = 8
#: Encoder-set draws the nearest seen combination may come from (see `nearest_seen`).
NEAREST_POOL = 2048
#: Draws of each set the latent projection plots.
PROJECTION_DRAWS = 300
#: Triples of each kind (training, held-out target) `composition_trials.png` shows.
COMPOSITION_TRIALS = 6
#: The animated traversal's cells per row, and the height of its caption strip.
GIF_COLUMNS, CAPTION_PX = 5, 14


def image_grid(images: NDArray[np.floating]) -> NDArray[np.floating]:
    """(rows, cols, C, H, W) in [0, 1] -> one (rows*H, cols*W, C) image, 1 px white gaps."""
    rows, cols, c, h, w = images.shape
    grid = np.ones((rows * (h + 1) - 1, cols * (w + 1) - 1, c), dtype=np.float32)
    for i in range(rows):
        for j in range(cols):
            grid[i * (h + 1) : i * (h + 1) + h, j * (w + 1) : j * (w + 1) + w] = np.moveaxis(
                images[i, j], 0, -1
            )
    return grid


def grid_figure(
    images: NDArray[np.floating],
    row_labels: list[str],
    col_labels: list[str],
    title: str,
    xlabel: str = "",
) -> Figure:
    """(rows, cols, C, H, W) images in [0, 1] as one labelled figure."""
    rows, cols, _, h, w = images.shape
    grid = np.clip(image_grid(images), 0.0, 1.0)
    fig = Figure(figsize=(1.0 + 0.95 * cols, 0.6 + 0.95 * rows), layout="constrained")
    ax = fig.subplots()
    ax.imshow(grid.squeeze(-1) if grid.shape[-1] == 1 else grid, cmap="gray", vmin=0, vmax=1)
    ax.set_xticks([j * (w + 1) + w / 2 for j in range(cols)])
    ax.set_xticklabels(col_labels, fontsize=8)
    ax.set_yticks([i * (h + 1) + h / 2 for i in range(rows)])
    ax.set_yticklabels(row_labels, fontsize=8)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_title(title, fontsize=9)
    return fig


def traversal_codes(code: NDArray[np.floating], values: NDArray[np.floating]) -> NDArray:
    """(D * S, D): `code` repeated, dimension d set to each of the S `values` in block d."""
    d, s = code.shape[0], values.shape[0]
    codes = np.tile(code, (d * s, 1))
    for dim in range(d):
        codes[dim * s : (dim + 1) * s, dim] = values
    return codes


@torch.no_grad()
def decode_images(model: torch.nn.Module, codes: NDArray, device: torch.device) -> NDArray:
    """Bernoulli means (sigmoid of the decoder's logits) of `codes`, as numpy (N, C, H, W)."""
    z = torch.as_tensor(codes, dtype=torch.float32, device=device)
    return torch.sigmoid(model.decode(z)).cpu().numpy()


@torch.no_grad()
def reconstruct(
    model: VAE, dataset: GroundTruthDataset, idx: np.ndarray, device: torch.device, domain: str
) -> tuple[NDArray, NDArray]:
    """The images of `idx` rendered in `domain` and the decoder means of the code scoring
    uses (the posterior means, or gt_decoder's true factors), as numpy (N, C, H, W)."""
    x = dataset.render(torch.from_numpy(idx).to(device), domain=domain)
    code = torch.from_numpy(encode_means(model, dataset, idx, device, domain)).to(x)
    recon = torch.sigmoid(reconstruction_logits(model, code, x))
    return x.cpu().numpy(), recon.cpu().numpy()


@torch.no_grad()
def composed(
    model: VAE, dataset: GroundTruthDataset, triples: Triples, device: torch.device
) -> NDArray:
    """Images (4, N, C, H, W): each triple's reference, transform and target, and the
    model's output (the decoder mean of the composed posterior means)."""
    batch = triple_batch(dataset, triples, device)
    logits, _, _ = compose(model, batch, noise=False)
    assert batch.inputs2 is not None
    shown = [batch.inputs, batch.inputs2, batch.targets, torch.sigmoid(logits)]
    return torch.stack(shown).cpu().numpy()


def draw_composition_trials(
    folder: Path,
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    seed: int,
    device: torch.device,
) -> Path | None:
    """`composition_trials.png` (module doc); None for a model that does not compose."""
    if model.transform is None:
        return None
    kinds = [("train", TRAIN_ROLES)]
    if "heldout" in split.roles:
        kinds.append(("test", HELDOUT_ROLES))
    grids, labels = [], []
    for i, (kind, roles) in enumerate(kinds):
        rng = np.random.default_rng([seed, 10, i])
        triples = sample_triples(split, COMPOSITION_TRIALS, rng, roles)
        grids.append(composed(model, dataset, triples, device))
        labels += [f"{kind}: {dataset.factors.names[a]}" for a in triples.action]
    path = folder / "composition_trials.png"
    grid_figure(
        np.concatenate(grids, axis=1),
        ["reference", "transform", "target", "output"],
        labels,
        f"{split.name}: composition trials (training, then held-out targets)",
        xlabel="which trials, and the factor the action takes from the transform",
    ).savefig(path, dpi=110)
    return path


def heldout_file(held: HeldoutSet, several: bool) -> str:
    return f"heldout_reconstructions_{held.name}.png" if several else "heldout_reconstructions.png"


def draw_heldout_reconstructions(
    folder: Path,
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    seed: int,
    device: torch.device,
) -> list[Path]:
    """One figure per held-out set of `split` (none for a split without one): rows are the
    unseen inputs, their reconstructions and the nearest seen combination; the draws are
    fixed by `seed` (`evaluation.seed`), so every model of a study shows the same inputs."""
    sets = heldout_sets(split)
    paths = []
    for i, held in enumerate(sets):
        rng = np.random.default_rng([seed, 6, i])
        idx = draw_unseen(split, held, HELDOUT_IMAGES, rng)
        pool = split.sample("encoder", NEAREST_POOL, rng)
        seen = nearest_seen(idx, dataset.factors.sizes, lambda c: split.mask("encoder", c), pool)
        x, recon = reconstruct(model, dataset, idx, device, held.domain)
        seen_x = dataset.render(torch.from_numpy(seen).to(device)).cpu().numpy()
        labels = [differences(q, s, dataset.factors.names) for q, s in zip(idx, seen, strict=True)]
        if held.shifts_domain:
            labels = [f"{held.domain}→{TRAIN_DOMAIN}\n{label}".strip() for label in labels]
        what = f"{held.domain} domain" if held.shifts_domain else "held-out combinations"
        path = folder / heldout_file(held, len(sets) > 1)
        grid_figure(
            np.stack([x, recon, seen_x]),
            ["unseen input", "reconstruction", f"nearest seen ({TRAIN_DOMAIN})"],
            labels,
            f"{split.name} / {held.name}: {what} the encoder never trained on",
            xlabel="how the nearest seen combination differs",
        ).savefig(path, dpi=110)
        paths.append(path)
    return paths


def hinton_figure(
    importance: NDArray[np.floating], factor_names: list[str], title: str = ""
) -> Figure:
    """Squares with area proportional to each R[j, k] (codes down, factors across)."""
    codes, factors = importance.shape
    fig = Figure(figsize=(1.0 + 0.7 * factors, 1.0 + 0.45 * codes), layout="constrained")
    ax = fig.subplots()
    ax.set_facecolor("#f0f0f0")
    peak = float(importance.max()) or 1.0
    for (j, k), value in np.ndenumerate(importance):
        side = np.sqrt(max(value, 0.0) / peak) * 0.9
        ax.add_patch(
            _square(k - side / 2, j - side / 2, side, "#2b5d9b" if value > 0 else "#f0f0f0")
        )
    ax.set_xlim(-0.5, factors - 0.5)
    ax.set_ylim(codes - 0.5, -0.5)
    ax.set_aspect("equal")
    ax.set_xticks(range(factors))
    ax.set_xticklabels(factor_names, rotation=45, ha="right")
    ax.set_yticks(range(codes))
    ax.set_yticklabels([f"z{j}" for j in range(codes)])
    ax.set_xlabel("factor")
    ax.set_ylabel("code dimension")
    ax.set_title(title, fontsize=9)
    return fig


def _square(x: float, y: float, side: float, colour: str) -> object:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), side, side, facecolor=colour, edgecolor="none")


def traversal_images(
    model: VAE, dataset: GroundTruthDataset, idx: np.ndarray, device: torch.device
) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
    """(D, S, C, H, W) images, code dimension d set to each of the S values, the rest at the
    code of the first image of `idx`; and the S values."""
    code = encode_means(model, dataset, idx[:1], device)[0]
    # A ground-truth code lives in [0, 1] (normalised factors); a VAE code under its prior.
    low, high = (0.0, 1.0) if model.code_is_ground_truth else (-2.0, 2.0)
    values = np.linspace(low, high, TRAVERSAL_STEPS)
    images = decode_images(model, traversal_codes(code, values), device)
    return images.reshape(code.shape[0], values.size, *images.shape[1:]), values


def draw_traversals(
    folder: Path, model: VAE, dataset: GroundTruthDataset, idx: np.ndarray, device: torch.device
) -> Path:
    """One row per code dimension, traversed from the code of the first image of `idx`."""
    grid, values = traversal_images(model, dataset, idx, device)
    path = folder / "traversals.png"
    grid_figure(
        grid,
        [f"z{j}" for j in range(grid.shape[0])],
        [f"{v:+.2f}" for v in values],
        "latent traversals: row j sets z_j to each value, the rest at one image's code",
        xlabel="value of z_j",
    ).savefig(path, dpi=110)
    return path


def draw_traversal_gif(
    folder: Path, model: VAE, dataset: GroundTruthDataset, idx: np.ndarray, device: torch.device
) -> Path:
    """`traversals.png` as an animation: frame s shows every code dimension at once, each
    cell with its own dimension set to the s-th value (disentanglement_lib's
    `visualize_model` animations), so a disentangled code moves one factor per cell."""
    grid, values = traversal_images(model, dataset, idx, device)
    path = folder / "traversals.gif"
    save_gif(np.moveaxis(grid, 1, 0), path, [f"cell j: z_j = {v:+.2f}" for v in values])
    return path


def save_gif(
    frames: NDArray[np.floating], path: Path, captions: list[str], frame_ms: int = 400
) -> None:
    """(S, D, C, H, W) images in [0, 1] -> an endless GIF of S frames, each the D images in
    rows of at most `GIF_COLUMNS` cells, under its caption."""
    from PIL import Image, ImageDraw

    steps, cells = frames.shape[:2]
    cols = min(cells, GIF_COLUMNS)
    rows = -(-cells // cols)
    pad = np.ones((steps, rows * cols - cells, *frames.shape[2:]), dtype=frames.dtype)
    tiles = np.concatenate([frames, pad], axis=1)
    images = []
    for s in range(steps):
        sheet = image_grid(tiles[s].reshape(rows, cols, *frames.shape[2:]))
        pixels = (np.clip(sheet, 0.0, 1.0) * 255).round().astype(np.uint8)
        # Small renders are hard to see at 1:1 in a browser: at least 256 px wide.
        scale = -(-256 // pixels.shape[1])
        pixels = pixels.repeat(scale, axis=0).repeat(scale, axis=1)
        if pixels.shape[-1] == 1:
            pixels = np.repeat(pixels, 3, axis=-1)
        frame = Image.new("RGB", (pixels.shape[1], pixels.shape[0] + CAPTION_PX), "white")
        frame.paste(Image.fromarray(pixels), (0, CAPTION_PX))
        ImageDraw.Draw(frame).text((4, 2), captions[s], fill="black")
        images.append(frame)
    # disposal=1 and no optimisation: Pillow would otherwise merge frames that look alike.
    images[0].save(
        path,
        save_all=True,
        append_images=images[1:],
        duration=frame_ms,
        loop=0,
        optimize=False,
        disposal=1,
    )


def draw_dci_importance(
    folder: Path,
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrialConfig,
    device: torch.device,
    fixed: FixedSample | None = None,
) -> Path | None:
    """DCI's importance matrix: the logged metric's own, when `fixed` (the sample it scored)
    is given and its fit is still kept; else refitted on a capped sample (module doc)."""
    if fixed is not None:
        n = fixed.num_train
        logged = logged_importance(
            fixed.codes[:n],
            fixed.points[:n],
            fixed.codes[n:],
            fixed.points[n:],
            seed=config.evaluation.seed,
            n_jobs=fixed.n_jobs,
        )
        if logged is not None:
            importance, varies = logged
            title = (
                f"DCI importance of the logged dis/dci_* ({n} points): "
                f"D={disentanglement(importance):.2f}, C={completeness(importance):.2f}"
            )
            return _hinton_file(folder, importance, dataset, varies, title)
    ev = config.evaluation
    n_train = min(ev.num_train, DCI_TRAIN) or DCI_TRAIN
    n_test = min(ev.num_test, DCI_TEST) or DCI_TEST
    points = split.sample("encoder", n_train + n_test, np.random.default_rng([ev.seed, 5]))
    varies = np.array([np.unique(points[:, k]).size > 1 for k in range(points.shape[1])])
    if not varies.any():
        return None
    codes = encode_means(model, dataset, points, device)
    importance, _, _ = importance_matrix(
        codes[:n_train],
        points[:n_train, varies],
        codes[n_train:],
        points[n_train:, varies],
        seed=ev.seed,
        # One thread: on a busy node, multi-threaded xgboost slowed ~20x here (each boosting
        # round syncs its threads), and this small refit gains little from more.
        n_jobs=1,
    )
    title = (
        f"DCI importance, refitted on {n_train} points: "
        f"D={disentanglement(importance):.2f}, C={completeness(importance):.2f}"
    )
    return _hinton_file(folder, importance, dataset, varies, title)


def _hinton_file(
    folder: Path,
    importance: NDArray[np.floating],
    dataset: GroundTruthDataset,
    varies: NDArray[np.bool_],
    title: str,
) -> Path:
    names = [n for n, v in zip(dataset.factors.names, varies, strict=True) if v]
    path = folder / "dci_importance.png"
    hinton_figure(importance, names, title).savefig(path, dpi=110)
    return path


def draw_latent_projection(
    folder: Path,
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    seed: int,
    device: torch.device,
) -> Path | None:
    """Training and held-out codes (posterior means) on the code dimensions tied to the
    factors the held-out set excludes; None for a split without a held-out set."""
    if "heldout" not in split.roles:
        return None
    rng = np.random.default_rng([seed, 7])
    train = split.sample("encoder", PROJECTION_DRAWS, rng)
    held = split.sample("heldout", PROJECTION_DRAWS, rng)
    factors = projected_factors(held, dataset.factors.sizes)
    if not factors:
        return None
    train_codes = encode_means(model, dataset, train, device)
    held_codes = encode_means(model, dataset, held, device)
    dims = tied_dimensions(train_codes, train, factors)
    names = dataset.factors.names
    labels = [f"z{d} (tied to {names[k]})" for d, k in zip(dims, factors, strict=True)]
    path = folder / "latent_projection.png"
    projection_figure(
        train_codes, held_codes, dims, labels, f"{split.name}: codes of seen and held-out inputs"
    ).savefig(path, dpi=110)
    return path
