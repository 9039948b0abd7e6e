"""Transfer of downstream probes out of distribution (Dittadi et al. 2021, "On the Transfer of
Disentangled Representations in Realistic Settings", ICLR).

A probe (see :mod:`raystudy.metrics.probes`) is fitted on the representation of one set of
images to regress every ground-truth factor, then scored on another set drawn from a
different factor distribution. Each factor k of size S_k is normalised to
t_k = index / (S_k - 1) in [0, 1] so errors are comparable across factors, and

    MAE_k = 1/M sum_i |f_k(z_i) - t_{ik}|,        mae = mean_{k not OOD} MAE_k
    R2_k  = 1 - sum_i (f_k(z_i) - t_ik)^2 / sum_i (t_ik - mean(t_k))^2,   r2 likewise

``r2_variance="grid"`` replaces the denominator by M times the variance of t_k over the
factor's full uniform grid, Var_{i=0..S_k-1}(i / (S_k - 1)) = (S_k + 1) / (12 (S_k - 1)),
the convention of Schott et al. 2022 ("Visual Representation Learning Does Not Generalize
Strongly Within the Same Domain", ICLR): a test set that covers only part of a factor's
range (as OOD test sets do) then does not shrink the denominator, and R2 means the same
thing on every split. The default, ``"sample"``, uses the test set's own variance
(sklearn's ``r2_score``).

The OOD factor (the one whose values differ between the probe's train and test sets, e.g.
hue) is regressed and reported per factor but left out of the means, because its test
values lie outside anything the probe saw and no representation can fix that.

Chance level: for a target uniform on [0, 1], the best constant predictor (0.5) has
MAE = E|t - 1/2| = 0.25 and R2 = 0; a coarse factor is a bit above (a 3-valued factor
{0, 1/2, 1}: 1/3). R2 of a factor that is constant on the test set is 0 for an imperfect
prediction (sklearn's convention).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.metrics import r2_score

from raystudy.metrics.probes import get_probe


def normalise_factors(factors: ArrayLike, sizes: Sequence[int]) -> NDArray[np.float64]:
    """Factor indices (N, K) -> targets idx / (size - 1) in [0, 1]; needs every size > 1."""
    factors = np.asarray(factors)
    sizes_arr = np.asarray(sizes)
    if np.any(sizes_arr < 2):
        raise ValueError(f"every size must be > 1 to normalise, got {list(sizes)}")
    if np.any(factors < 0) or np.any(factors >= sizes_arr):
        raise ValueError(f"factor indices out of range for sizes {list(sizes)}")
    return factors / (sizes_arr - 1.0)


#: The aggregate keys `transfer` returns, each also per factor as `<key>/<factor>`: what a spec
#: may name (search.metric) under transfer/<scenario>/<probe>/.
TRANSFER_OUTPUTS = ("mae", "r2")


def transfer(
    z_train: ArrayLike,
    y_train: ArrayLike,
    z_test: ArrayLike,
    y_test: ArrayLike,
    sizes: Sequence[int],
    names: Sequence[str],
    ood_factors: Sequence[str] = (),
    probe: str = "gbt",
    seed: int = 0,
    n_jobs: int = 1,
    r2_variance: Literal["sample", "grid"] = "sample",
    device: str = "cpu",
) -> dict[str, float]:
    """Fit ``probe`` on (z_train, y_train); score MAE and R2 per factor on (z_test, y_test).

    Args:
        z_train: (N, D) representation means the probe is fitted on.
        y_train: (N, K) int factor indices of those points.
        z_test: (M, D) representation means the probe is scored on.
        y_test: (M, K) int factor indices.
        sizes: number of values of each of the K factors; factors of size 1 are dropped.
        names: name of each of the K factors (used in the keys).
        ood_factors: names of factors left out of ``mae`` and ``r2`` (still reported alone).
        probe: a name registered in :data:`raystudy.metrics.probes.PROBES`.
        seed: the probe's random state.
        n_jobs: threads the probe may use.
        r2_variance: R2's denominator: the test set's variance ("sample") or the factor's
            uniform-grid variance ("grid", Schott et al. 2022).
        device: where the probe fits ("cpu", "cuda"), for a probe that can run on a GPU.

    Returns:
        ``mae``, ``r2`` (means over regressed non-OOD factors; NaN if there are none) and
        ``mae/<name>``, ``r2/<name>`` for every regressed factor.
    """
    names = list(names)
    sizes = [int(s) for s in sizes]
    y_train = np.asarray(y_train)
    y_test = np.asarray(y_test)
    if len(sizes) != len(names):
        raise ValueError(f"{len(sizes)} sizes but {len(names)} names")
    num_factors = len(names)
    if not (
        y_train.ndim == y_test.ndim == 2 and y_train.shape[1] == y_test.shape[1] == num_factors
    ):
        raise ValueError(
            f"y_train {y_train.shape} and y_test {y_test.shape} must be (N, {num_factors})"
        )
    if r2_variance not in ("sample", "grid"):
        raise ValueError(f"r2_variance must be 'sample' or 'grid', got {r2_variance!r}")
    unknown = sorted(set(ood_factors) - set(names))
    if unknown:
        raise ValueError(f"ood_factors {unknown} are not among the factors {names}")

    keep = [k for k, size in enumerate(sizes) if size > 1]
    kept_sizes = [sizes[k] for k in keep]
    t_train = normalise_factors(y_train[:, keep], kept_sizes)
    t_test = normalise_factors(y_test[:, keep], kept_sizes)

    readout = get_probe(probe, seed=seed, n_jobs=n_jobs, device=device)
    if getattr(readout, "reads_factor_code", False):  # the code's column k is factor k
        z_train, z_test = (
            _factor_columns(z, num_factors, probe)[:, keep] for z in (z_train, z_test)
        )
    model = readout.fit(z_train, t_train)
    pred = np.asarray(model.predict(z_test), dtype=np.float64).reshape(t_test.shape)

    out: dict[str, float] = {}
    mae_in, r2_in = [], []
    for col, k in enumerate(keep):
        mae_k = float(np.mean(np.abs(pred[:, col] - t_test[:, col])))
        if r2_variance == "grid":
            size = sizes[k]
            grid_var = (size + 1) / (12.0 * (size - 1))
            r2_k = float(1.0 - np.mean((pred[:, col] - t_test[:, col]) ** 2) / grid_var)
        else:
            r2_k = float(r2_score(t_test[:, col], pred[:, col]))
        out[f"mae/{names[k]}"] = mae_k
        out[f"r2/{names[k]}"] = r2_k
        if names[k] not in ood_factors:
            mae_in.append(mae_k)
            r2_in.append(r2_k)
    out["mae"] = float(np.mean(mae_in)) if mae_in else float("nan")
    out["r2"] = float(np.mean(r2_in)) if r2_in else float("nan")
    return out


def _factor_columns(z: ArrayLike, num_factors: int, probe: str) -> NDArray[np.float64]:
    codes = np.asarray(z, dtype=np.float64)
    if codes.ndim != 2 or codes.shape[1] != num_factors:
        raise ValueError(
            f"probe {probe!r} reads the code as the factors: it needs (N, {num_factors}) codes, "
            f"got {codes.shape}"
        )
    return codes
