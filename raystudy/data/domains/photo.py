"""The ``photo`` domain: a procedural scene composited onto real photographs, seen by a camera.

The ``real`` domain (:mod:`raystudy.data.domains.real`) shifts a rendering mostly by what a
camera adds (blur, sensor noise, a fixed value-noise texture), which input-noise training
(Dittadi et al. 2021, "On the Transfer of Disentangled Representations in Realistic
Settings", Sec. 5) imitates by design. This domain changes the scene's *content* with natural
images, as cut-and-paste sim-to-real data do (Dwibedi et al. 2017, "Cut, Paste and Learn"),
with domain randomisation's per-image textures and light (Tobin et al. 2017): each image gets
its own crop of a photograph behind the objects, a photographed texture on them and a lighting
field taken from a photograph, then the camera effects of ``real``. The factors (hence the labels)
are those of the sim image; only the image formation differs.

The photographs ship inside installed packages (no download): scikit-learn's sample images
(``china``, ``flower``) and scikit-image's ``astronaut``, ``chelsea``, ``coffee``, ``rocket``,
``motorcycle`` (left view) and ``camera`` as scenes, and its ``brick``, ``grass`` and
``gravel`` as textures. Pixel coordinates ``p`` are grid_sample's, in [-1, 1] across the frame.

1. geometry jitter and lens, as in ``real``: the sim image ``x`` and the objects' coverage
   ``m`` are read at ``A D(p) + t`` (``A = s R(phi)`` per image; ``D`` the Brown-Conrady
   barrel map, Brown 1966);
2. photographs, each read through the same lens map ``D``: a square crop of a scene ``P``
   (photo, centre, size, mirror per image), a crop of a texture's luminance ``T`` and a
   lighting field ``L = 1 + a_l (2 Q - 1)`` with ``Q`` the luminance of a third crop read at a
   4x4 grid from an 8x12 downsampling of a scene and upsampled bilinearly (a smooth field,
   like the light falling on a real scene);
3. composition: the objects keep their colour under the texture, the background becomes the
   photograph: ``y = m x (1 + a_o (2 T - 1)) + (1 - m) ((1 - alpha) x + alpha P)``. A sim
   background that carries factors (3D Shapes' floor and wall hues, MPI3D's backdrop) keeps
   ``1 - alpha`` of its colour, so no factor is hidden;
4. light and exposure: ``y *= L e w V``, ``e`` a per-image exposure in [0.8, 1.2], ``w`` a
   per-image white balance (each channel within +-``white_balance``), ``V(p) = g0 - v |p -
   1/2|^2`` (``p`` in [0, 1]) the vignette of ``real``;
5. optical blur (binomial ``[1, 2, 1] / 4`` passes, variance ``n / 2``; Burt & Adelson 1983),
   sensor noise (a sum of three of 64 fixed Gaussian fields picked by a hash of the image)
   plus a black level, clipping to [0, 1], and JPEG at a per-image quality in 30..50
   (:mod:`raystudy.data.domains.jpeg`; Wallace 1992), as in ``real``.

Every constant is drawn once from ``numpy.random.default_rng([seed, 0xF070])`` and every
per-image draw (crops, pose, exposure, quality, noise) is a hash of the image's row-major grid
position salted by the seed, so a factor combination always gives the same image.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from raystudy.data.domains.camera import (
    BLUR_SIGMA_AT_64,
    JPEG_QUALITY,
    CameraShift,
    barrel_grid,
    blur_passes,
    mix32,
    noise_bank,
    uniforms,
)
from raystudy.data.domains.jpeg import JpegCodec
from raystudy.registry import unknown_name_message

#: Photographs behind the objects and for the lighting, in the order the default uses.
SCENES = ("china", "flower", "astronaut", "chelsea", "coffee", "rocket", "motorcycle", "camera")
#: Photographed surfaces laid on the objects.
TEXTURES = ("brick", "grass", "gravel")
PHOTO_ASPECT = (2, 3)  # every photograph is cropped to height:width 2:3, then resized
CROP_SIZE = (0.4, 0.9)  # a scene crop's side, as a fraction of the photograph's height
TEXTURE_CROP = 0.5  # a texture crop's side, as a fraction of the texture's height
LIGHT_SIZE = (8, 12)  # the scene downsampling the lighting field is read from
LIGHT_GRID = 4  # the lighting field's resolution before it is upsampled
EXPOSURE = (0.8, 1.2)
# Per-image uniforms, by column: pose 0-3, JPEG quality 4, scene 5-9 (photograph, side, x, y,
# mirror), texture 10-13 (texture, x, y, mirror), light 14-17 (photograph, x, y, mirror),
# exposure 18, white balance 19-21.
_DRAWS = 22


def _sklearn_photo(name: str) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        from sklearn.datasets import load_sample_image

        return load_sample_image(f"{name}.jpg")

    return load


def _skimage_photo(name: str) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        import skimage.data

        if name == "motorcycle":  # a stereo pair and its disparity: the left view
            return skimage.data.stereo_motorcycle()[0]
        return getattr(skimage.data, name)()

    return load


#: Every photograph this domain may use; each loads from files inside its package.
PHOTOGRAPHS: dict[str, Callable[[], np.ndarray]] = {
    "china": _sklearn_photo("china"),
    "flower": _sklearn_photo("flower"),
    **{n: _skimage_photo(n) for n in ("astronaut", "chelsea", "coffee", "rocket")},
    **{n: _skimage_photo(n) for n in ("motorcycle", "camera", "brick", "grass", "gravel")},
}


@functools.cache
def photograph(name: str) -> np.ndarray:
    """The photograph ``name`` as float32 ``[3, H, W]`` in [0, 1] (grey ones repeated)."""
    image = np.asarray(PHOTOGRAPHS[name](), dtype=np.float32) / 255.0
    if image.ndim == 2:
        image = np.repeat(image[..., None], 3, axis=2)
    return np.ascontiguousarray(image[..., :3].transpose(2, 0, 1))


def photo_bank(names: Sequence[str], channels: int, height: int) -> torch.Tensor:
    """The photographs ``names`` as an atlas ``[1, C, N * height, width]``, stacked down the
    rows: each centre-cropped to height:width 2:3 and resized (antialiased bilinear) to
    ``height x 3 height / 2``; for one channel, the luminance ``0.299 R + 0.587 G + 0.114 B``
    (ITU-R BT.601)."""
    width = height * PHOTO_ASPECT[1] // PHOTO_ASPECT[0]
    tiles = []
    for name in names:
        image = torch.from_numpy(photograph(name))
        h, w = image.shape[1:]
        ch, cw = min(h, w * 2 // 3), min(w, h * 3 // 2)
        top, left = (h - ch) // 2, (w - cw) // 2
        crop = image[None, :, top : top + ch, left : left + cw]
        tiles.append(F.interpolate(crop, size=(height, width), mode="bilinear", antialias=True)[0])
    bank = torch.cat(tiles, dim=1).clamp_(0.0, 1.0)
    if channels == 1:
        weights = torch.tensor([0.299, 0.587, 0.114]).view(3, 1, 1)
        bank = (bank * weights).sum(0, keepdim=True)
    return bank.unsqueeze(0)


def crop_grid(
    points: torch.Tensor,
    photo: torch.Tensor,
    draws: torch.Tensor,
    side: torch.Tensor,
    bank_shape: tuple[int, int, int],
) -> torch.Tensor:
    """``[1, B * H, W, 2]``: where each output point ``points`` ``[H, W, 2]`` (in [-1, 1])
    reads an atlas of ``bank_shape = (N, h, w)`` photographs: photograph ``photo[b]``, a square
    window of ``side[b]`` photo pixels placed by ``draws[:, :2]`` (uniforms; the window stays
    inside the photograph, shrunk if the points reach past [-1, 1]), mirrored when
    ``draws[:, 2] < 1/2``."""
    count, h, w = bank_shape
    # A barrel lens reads a little past the frame's corners (|D(p)| > 1): the window shrinks
    # until the farthest point, and its bilinear neighbours, stay inside the photograph.
    reach = float(points.abs().max())
    half = (side / 2.0).clamp(max=(h / 2.0 - 0.5) / reach)
    span = half * reach + 0.5
    centre_x = span + draws[:, 0] * (w - 2.0 * span)
    centre_y = span + draws[:, 1] * (h - 2.0 * span) + photo.to(side.dtype) * h
    mirror = torch.where(draws[:, 2] < 0.5, -1.0, 1.0)
    u = centre_x.view(-1, 1, 1) + (half * mirror).view(-1, 1, 1) * points[..., 0]
    v = centre_y.view(-1, 1, 1) + half.view(-1, 1, 1) * points[..., 1]
    # align_corners=False: the atlas's edges are at -1 and 1.
    grid = torch.stack([u * (2.0 / w) - 1.0, v * (2.0 / (count * h)) - 1.0], dim=-1)
    return grid.reshape(1, -1, points.shape[1], 2)


def read_crops(bank: torch.Tensor, grid: torch.Tensor, batch: int) -> torch.Tensor:
    """The crops ``[B, C, H, W]`` of ``bank`` ``[1, C, ., .]`` at ``grid`` (:func:`crop_grid`):
    one bilinear resampling of the whole batch."""
    out = F.grid_sample(bank, grid, "bilinear", "border", align_corners=False)
    c, rows, w = out.shape[1:]
    return out.view(c, batch, rows // batch, w).transpose(0, 1)


@dataclass(frozen=True)
class PhotoShiftParameters:
    """The seeded constants of one ``photo`` domain."""

    background_weight: float  # alpha: how much of the background is the photograph
    texture_amplitude: float  # a_o
    light_amplitude: float  # a_l
    white_balance: float
    gain: float
    vignette: float
    black_level: float
    noise_std: float
    rotation_max: float  # radians
    scale_max: float
    shift_max: float
    lens_k1: float

    @classmethod
    def draw(cls, seed: int) -> PhotoShiftParameters:
        rng = np.random.default_rng([seed, 0xF070])
        return cls(
            background_weight=float(rng.uniform(0.6, 0.75)),
            texture_amplitude=float(rng.uniform(0.3, 0.45)),
            light_amplitude=float(rng.uniform(0.25, 0.35)),
            white_balance=float(rng.uniform(0.05, 0.08)),
            gain=float(rng.uniform(0.92, 1.0)),
            vignette=float(rng.uniform(0.35, 0.5)),
            black_level=float(rng.uniform(0.03, 0.06)),
            noise_std=float(rng.uniform(0.025, 0.035)),
            rotation_max=math.radians(float(rng.uniform(2.0, 4.0))),
            scale_max=float(rng.uniform(0.06, 0.10)),
            shift_max=float(rng.uniform(0.02, 0.04)),
            lens_k1=float(rng.uniform(0.04, 0.10)),
        )


@dataclass(frozen=True)
class _Tables:
    scenes: torch.Tensor  # [1, C, S * h, w]
    textures: torch.Tensor  # [1, 1, T * h, w]: luminance
    light: torch.Tensor  # [1, 1, S * 8, 12]: the scenes' luminance, downsampled
    lens: torch.Tensor  # [R, R, 2]: D(p) at each pixel centre
    light_points: torch.Tensor  # [4, 4, 2]: D(p) at the lighting grid's points
    vignette: torch.Tensor  # [1, 1, R, R], times the gain
    noise: torch.Tensor  # [NOISE_BANK, R * R], scaled so that a sum of three has noise_std
    blur_passes: int
    jpeg: JpegCodec


class PhotoShift(CameraShift):
    """The ``photo`` rendering of one dataset: ``apply(sim, background, flat) -> photo``."""

    def __init__(
        self,
        channels: int,
        resolution: int,
        seed: int = 0,
        scenes: Sequence[str] = SCENES,
        textures: Sequence[str] = TEXTURES,
    ) -> None:
        if channels not in (1, 3):
            raise ValueError(f"the photo domain renders 1 or 3 channels, got {channels}")
        if resolution < 8:
            raise ValueError(f"the photo domain needs a resolution of 8 or more, got {resolution}")
        if not 0 <= seed < 2**32:
            raise ValueError(f"the photo domain's seed must be in 0..{2**32 - 1}, got {seed}")
        for role, names in (("scenes", scenes), ("textures", textures)):
            if isinstance(names, str) or not names:
                raise ValueError(f"the photo domain's {role} must be a non-empty list of names")
            for name in names:
                if name not in PHOTOGRAPHS:
                    raise ValueError(
                        f"the photo domain's {role}: "
                        + unknown_name_message("photograph", name, list(PHOTOGRAPHS))
                    )
        super().__init__(channels, resolution, seed)
        self.scenes, self.textures = tuple(scenes), tuple(textures)
        self.params = PhotoShiftParameters.draw(seed)
        # Salts every per-image hash, so another seed is another set of crops and poses.
        self._salt = int(np.random.default_rng([seed, 0xF071]).integers(2**31))

    def apply(
        self, images: torch.Tensor, background: torch.Tensor, flat: torch.Tensor
    ) -> torch.Tensor:
        t = self._device_tables(images.device)
        p, b, c = self.params, images.shape[0], images.shape[1]
        draws = uniforms(flat ^ self._salt, _DRAWS)
        x, cover = self.posed(images, background, draws, t)
        scene, texture, light = self._photographs(draws, t)
        # Step 3: y = x (m (1 + a_o (2 T - 1)) + (1 - m)(1 - alpha)) + (1 - m) alpha P.
        surface = texture.mul_(2.0 * p.texture_amplitude).add_(1.0 - p.texture_amplitude)
        weight = surface.sub_(1.0 - p.background_weight).mul_(cover)
        weight.add_(1.0 - p.background_weight)
        y = x.mul_(weight).addcmul_(cover.neg_().add_(1.0), scene, value=p.background_weight)
        # Step 4: lighting, exposure, white balance and vignette, one gain per pixel.
        exposure = EXPOSURE[0] + draws[:, 18] * (EXPOSURE[1] - EXPOSURE[0])
        balance = 1.0 + (draws[:, 19 : 19 + c] * 2.0 - 1.0) * p.white_balance if c == 3 else 1.0
        y.mul_(light).mul_(t.vignette).mul_((exposure.view(b, 1) * balance).view(b, -1, 1, 1))
        # Step 5: the camera's blur, noise, clipping and JPEG, as in ``real``.
        self.blur_(y, t.blur_passes)
        return self.expose(y, mix32(flat ^ self._salt), t, t.jpeg, draws[:, 4])

    def coverage(self, background: torch.Tensor, flat: torch.Tensor) -> torch.Tensor:
        """``[B, 1, H, W]``: the objects' coverage where :meth:`apply` draws them (after the
        pose and the lens), for the same ``background`` and ``flat``."""
        t = self._device_tables(background.device)
        draws = uniforms(flat ^ self._salt, _DRAWS)
        empty = torch.zeros_like(background).expand(-1, self.channels, -1, -1)
        return self.posed(empty, background, draws, t)[1]

    def _photographs(
        self, draws: torch.Tensor, t: _Tables
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Step 2: per image a scene crop ``[B, C, R, R]``, a texture's luminance
        ``[B, 1, R, R]`` in [0, 1] and the lighting field ``[B, 1, R, R]``."""
        b, res, p = draws.shape[0], self.resolution, self.params
        n_scenes, n_textures = len(self.scenes), len(self.textures)
        h = t.scenes.shape[2] // n_scenes
        bank = (n_scenes, h, t.scenes.shape[3])
        scene_id = (draws[:, 5] * n_scenes).long().clamp_(max=n_scenes - 1)
        side = h * (CROP_SIZE[0] + draws[:, 6] * (CROP_SIZE[1] - CROP_SIZE[0]))
        grid = crop_grid(t.lens, scene_id, draws[:, 7:10], side, bank)
        scene = read_crops(t.scenes, grid, b)
        texture_id = (draws[:, 10] * n_textures).long().clamp_(max=n_textures - 1)
        side = torch.full_like(side, h * TEXTURE_CROP)
        grid = crop_grid(t.lens, texture_id, draws[:, 11:14], side, (n_textures, *bank[1:]))
        texture = read_crops(t.textures, grid, b)
        light_id = (draws[:, 14] * n_scenes).long().clamp_(max=n_scenes - 1)
        lh, lw = LIGHT_SIZE
        side = torch.full_like(side, float(lh))
        # The window spans the whole height of the small scene: only its column moves.
        grid = crop_grid(t.light_points, light_id, draws[:, 15:18], side, (n_scenes, lh, lw))
        coarse = read_crops(t.light, grid, b)
        light = F.interpolate(coarse, size=(res, res), mode="bilinear", align_corners=False)
        light.mul_(2.0 * p.light_amplitude).add_(1.0 - p.light_amplitude)
        return scene, texture, light

    def _build_tables(self, device: torch.device) -> _Tables:
        p, res, ch = self.params, self.resolution, self.channels
        # A scene crop spans 0.4-0.9 of a bank 2R rows high, 0.8R-1.8R bank pixels read by R
        # output pixels: bilinear reading magnifies by at most 1.25 and skips few pixels.
        height = 2 * res
        lens = barrel_grid(res, p.lens_k1)[0]
        light_points = barrel_grid(LIGHT_GRID, p.lens_k1)[0]
        pixel = (torch.arange(res, dtype=torch.float32) + 0.5) / res - 0.5
        ys, xs = torch.meshgrid(pixel, pixel, indexing="ij")
        vignette = (p.gain - p.vignette * (xs**2 + ys**2)).view(1, 1, res, res)
        # Everything random comes from one CPU generator: every device gets the same domain.
        seed = int(np.random.default_rng([self.seed, 0xF072]).integers(2**62))
        gen = torch.Generator().manual_seed(seed)
        noise = noise_bank(res, p.noise_std, gen)
        scenes = photo_bank(self.scenes, 3, height)
        grey = photo_bank(self.scenes, 1, height)
        light = torch.cat(
            [
                F.interpolate(tile, size=LIGHT_SIZE, mode="bilinear", antialias=True)
                for tile in grey.split(height, dim=2)
            ],
            dim=2,
        )
        return _Tables(
            scenes=(scenes if ch == 3 else grey).to(device),
            textures=photo_bank(self.textures, 1, height).to(device),
            light=light.to(device),
            lens=lens.to(device),
            light_points=light_points.to(device),
            vignette=vignette.to(device),
            noise=noise.to(device),
            blur_passes=blur_passes(BLUR_SIGMA_AT_64, res),
            jpeg=JpegCodec(*JPEG_QUALITY, device),
        )
