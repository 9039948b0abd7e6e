"""Images laid out for a person to read: a labelled grid of images as a figure, and a
traversal's frames as an animated GIF."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from numpy.typing import NDArray

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
