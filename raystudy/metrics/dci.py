"""DCI: Disentanglement, Completeness, Informativeness (Eastwood & Williams 2018,
"A Framework for the Quantitative Evaluation of Disentangled Representations").

One gradient-boosted classifier per factor v_k predicts it from the codes z; its feature
importances give column k of the importance matrix R (D codes x K factors). With
P[j, k] = R[j, k] / sum_k' R[j, k'] and Q[j, k] = R[j, k] / sum_j' R[j', k]:

    D = sum_j rho_j (1 - H_K(P[j, :])),   rho_j = sum_k R[j, k] / sum R
    C = sum_k rho_k (1 - H_D(Q[:, k])),   rho_k = sum_j R[j, k] / sum R
    I = mean_k accuracy of the classifier for v_k (test; I_train on train)

H_b is the entropy in base b, so each term lies in [0, 1]. This follows disentanglement_lib
(Locatello et al. 2019, ``evaluation/metrics/dci.py``): sklearn ``GradientBoostingClassifier()``
with its defaults on 10,000 train / 5,000 test points, importances = ``feature_importances_``,
informativeness reported as ACCURACY although the reference names it "err".

Backends. ``backend="sklearn"`` is the reference itself (323 s on this project's two-core
machine for five dSprites factors, ten codes, 10,000 + 5,000 points). The two others run the
same algorithm — sklearn's trees with its exact split search, Newton leaf values, node-local
thresholds and impurity importances (see :mod:`raystudy.metrics._boosting`) — faster:
``backend="exact"`` (default) grows every tree of a boosting stage in one compiled pass
per level over columns sorted once (:mod:`raystudy.metrics._exact_trees`: node for node
sklearn's trees, checked in the tests); ``backend="xgboost"`` grows them with xgboost's
exact method, and is the one with a GPU path (``device="cuda"``) and a histogram option.
D, C, I and I_train of both agree with sklearn's up to the effect of tie-breaking and float
rounding, which sends long ensembles down different but equally good paths: on the conv VAE
codes of bench/metrics.py within 0.0006 (exact) and 0.0018 (xgboost); the tests check 0.02 on
synthetic code sets of up to 1,500 points. bench/RESULTS.md has the timings (exact: 16.9x
faster than sklearn, xgboost: 4.4x).

``max_bins=256`` (or any number; xgboost backend) trades that agreement for speed: split
candidates become 255 quantiles per dimension, searched by histogram. It changes nothing
while a code dimension has at most that many distinct values, but beyond, it is coarser
than sklearn: on the VAE codes I_train fell by 0.047 (sklearn's exact search lets late
trees isolate single training points, which only the training accuracy rewards), and on
noisy synthetic codes D and C by 0.02 (10,000 points; 256 to 2,048 bins) to 0.05 (1,000
points, 256 bins).

Differences from the reference, for inputs it never meets (each with a
:class:`~raystudy.metrics._checks.MetricWarning`):
- a factor with a single value in the training sample has nothing to learn: zero importance
  and a constant predictor (train accuracy 1);
- :func:`dci` leaves out factors that take a single value across train and test together
  (e.g. a colour factor fixed by the dataset), so they neither lower the entropy base K of D
  nor inflate I with a trivial accuracy of 1; if no factor varies, D = C = 0 and I = 1;
- a code dimension with NaN or infinite values is treated as dead (all zeros);
- with one factor (or one code) the entropy base is 1; D (or C) is then 1 by convention.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.ensemble import GradientBoostingClassifier

from raystudy.metrics._boosting import fit_boosted_trees
from raystudy.metrics._checks import Sample, on_arrays
from raystudy.metrics.registry import register_metric

Backend = Literal["exact", "xgboost", "sklearn"]
BACKENDS: tuple[str, ...] = ("exact", "xgboost", "sklearn")
#: Split candidates per code dimension for the xgboost backend: None, every threshold
#: between distinct values, as sklearn (see the module docstring).
MAX_BINS: int | None = None


@dataclass(frozen=True)
class FactorClassifiers:
    """What the per-factor boosted classifiers yield: R (D, K), train and test accuracy."""

    importance: NDArray[np.float64]
    train_acc: NDArray[np.float64]
    test_acc: NDArray[np.float64]


@dataclass(frozen=True)
class Boosting:
    """How the per-factor classifiers are fitted (see :func:`importance_matrix`)."""

    backend: Backend = "exact"
    seed: int = 0
    n_jobs: int = 1
    max_bins: int | None = MAX_BINS
    device: str = "cpu"


# The GBT10000 downstream score (raystudy.metrics.downstream) trains exactly these
# classifiers on exactly these points when it is given the same arrays, so recent fits are
# kept and reused instead of paying for them twice. Keyed on a digest of the inputs and
# every setting, so a hit is the result a fresh fit would give; the results are small.
_recent_fits: OrderedDict[tuple[str, Boosting], FactorClassifiers] = OrderedDict()
_MAX_RECENT_FITS = 8


def clear_fit_cache() -> None:
    """Forget the kept classifier fits (for timing a cold fit)."""
    _recent_fits.clear()


def importance_matrix(
    codes_train: ArrayLike,
    factors_train: ArrayLike,
    codes_test: ArrayLike,
    factors_test: ArrayLike,
    *,
    backend: Backend = "exact",
    seed: int = 0,
    n_jobs: int = 1,
    max_bins: int | None = MAX_BINS,
    device: str = "cpu",
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Fit one gradient-boosted classifier per factor; collect importances and accuracies.

    Labels are remapped to 0..n-1 over the classes seen in training; a test label never
    seen in training can only be predicted wrongly, which is what it costs.

    Args:
        codes_train: (N, D) float array of representation means (finite).
        factors_train: (N, K) int array of factor indices.
        codes_test: (M, D) float array.
        factors_test: (M, K) int array.
        backend: "exact" (sklearn's algorithm, compiled: fastest on CPU), "xgboost" (the
            same on xgboost's trees; GPU and histogram options) or "sklearn"
            (``GradientBoostingClassifier()`` defaults: the reference, slow).
        seed: random state of the classifiers.
        n_jobs: threads per xgboost model (the exact and sklearn backends use one).
        max_bins: split candidates per code dimension (xgboost backend): None, all of
            them (sklearn's search); a number, at most that many quantile bins (faster).
        device: xgboost device, "cpu" or "cuda" (xgboost backend).

    Returns:
        R (D, K) with each non-zero column summing to 1, train accuracy (K,), test
        accuracy (K,).
    """
    boosting = Boosting(backend, seed, n_jobs, max_bins, device)
    fits = fit_factor_classifiers(codes_train, factors_train, codes_test, factors_test, boosting)
    return fits.importance, fits.train_acc, fits.test_acc


def fit_factor_classifiers(
    codes_train: ArrayLike,
    factors_train: ArrayLike,
    codes_test: ArrayLike,
    factors_test: ArrayLike,
    boosting: Boosting,
) -> FactorClassifiers:
    """:func:`importance_matrix` as a :class:`FactorClassifiers`, reusing the last fit."""
    backend = boosting.backend
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "exact" and (boosting.max_bins is not None or boosting.device != "cpu"):
        raise ValueError(
            f"backend='exact' searches every threshold on the CPU; "
            f"max_bins={boosting.max_bins!r} and device={boosting.device!r} are options of "
            "backend='xgboost'"
        )
    x_train, y_train = _as_pair(codes_train, factors_train)
    x_test, y_test = _as_pair(codes_test, factors_test)
    if x_train.shape[1] != x_test.shape[1] or y_train.shape[1] != y_test.shape[1]:
        raise ValueError(
            f"train and test disagree on D or K: {x_train.shape}/{y_train.shape} "
            f"vs {x_test.shape}/{y_test.shape}"
        )
    key = (_digest(x_train, y_train, x_test, y_test), boosting)
    if key in _recent_fits:
        _recent_fits.move_to_end(key)
        return _recent_fits[key]
    num_codes, num_factors = x_train.shape[1], y_train.shape[1]
    importance = np.zeros((num_codes, num_factors), dtype=np.float64)
    train_acc = np.ones(num_factors, dtype=np.float64)
    test_acc = np.ones(num_factors, dtype=np.float64)
    for k in range(num_factors):
        classes, labels = np.unique(y_train[:, k], return_inverse=True)
        if classes.size == 1:
            # A constant predictor is exact on train; nothing in the codes was used.
            test_acc[k] = np.mean(y_test[:, k] == classes[0]) if len(y_test) else 1.0
            continue
        if backend == "sklearn":
            model = GradientBoostingClassifier(random_state=boosting.seed).fit(x_train, labels)
            pred_train = model.predict(x_train)
            pred_test = model.predict(x_test) if len(x_test) else np.zeros(0, np.int64)
            importance[:, k] = np.abs(np.asarray(model.feature_importances_, np.float64))
        else:
            trees = fit_boosted_trees(
                x_train,
                labels,
                [x_test],
                num_classes=classes.size,
                max_bins=boosting.max_bins,
                seed=boosting.seed,
                n_jobs=boosting.n_jobs,
                device=boosting.device,
                grower="exact" if backend == "exact" else "xgboost",
            )
            pred_train, pred_test = trees.pred_train, trees.pred_eval[0]
            importance[:, k] = trees.importance
        train_acc[k] = np.mean(classes[pred_train] == y_train[:, k])
        test_acc[k] = np.mean(classes[pred_test] == y_test[:, k]) if len(y_test) else np.nan
    fits = FactorClassifiers(importance, train_acc, test_acc)
    _recent_fits[key] = fits
    if len(_recent_fits) > _MAX_RECENT_FITS:
        _recent_fits.popitem(last=False)
    return fits


def disentanglement(importance: ArrayLike) -> float:
    """D = sum_j rho_j (1 - H_K(R[j, :] / sum_k R[j, k])), rho_j = R[j, :].sum() / R.sum().

    Args:
        importance: (D, K) importance matrix R (its absolute value is used).

    Returns:
        D in [0, 1]; 0 when R is all zero.
    """
    return _concentration(_as_importance(importance))


def completeness(importance: ArrayLike) -> float:
    """C = sum_k rho_k (1 - H_D(R[:, k] / sum_j R[j, k])), rho_k = R[:, k].sum() / R.sum(): the
    D of the transposed R, in [0, 1] (0 when R is all zero)."""
    return _concentration(_as_importance(importance).T)


@register_metric("dci", outputs=("dci_d", "dci_c", "dci_i", "dci_i_train"))
@on_arrays()
def dci(
    sample: Sample,
    *,
    seed: int,
    n_jobs: int,
    backend: Backend = "exact",
    max_bins: int | None = MAX_BINS,
    device: str = "cpu",
) -> dict[str, float]:
    """Disentanglement, completeness and informativeness of the codes (see module doc).

    Factors that take a single value across train and test are left out.

    Returns:
        ``{"dci_d", "dci_c", "dci_i", "dci_i_train"}``, all in [0, 1]; I is mean test
        accuracy, I_train mean train accuracy. D = C = 0, I = I_train = 1 if no factor
        varies.
    """
    varies = sample.varying("dci")
    if not varies.any():
        return {"dci_d": 0.0, "dci_c": 0.0, "dci_i": 1.0, "dci_i_train": 1.0}
    boosting = Boosting(backend, seed, n_jobs, max_bins, device)
    fits = fit_factor_classifiers(*sample.factors(varies), boosting)
    return {
        "dci_d": disentanglement(fits.importance),
        "dci_c": completeness(fits.importance),
        "dci_i": float(fits.test_acc.mean()),
        "dci_i_train": float(fits.train_acc.mean()),
    }


@on_arrays()
def logged_importance(
    sample: Sample, *, seed: int, n_jobs: int
) -> tuple[NDArray[np.float64], NDArray[np.bool_]] | None:
    """The importance matrix R that :func:`dci` (default backend) computed from exactly these
    arguments (the arrays and ``seed``, ``n_jobs``), and which factors it kept, while its fit
    is still among the recent ones; None when it is not (nothing is fitted here). A figure of
    the logged D and C draws this R."""
    varies = sample.varying()
    if not varies.any():
        return None
    z_train, y_train, z_test, y_test = sample.factors(varies)
    x_train, y_train = _as_pair(z_train, y_train)
    x_test, y_test = _as_pair(z_test, y_test)
    key = (_digest(x_train, y_train, x_test, y_test), Boosting(seed=seed, n_jobs=n_jobs))
    fits = _recent_fits.get(key)
    return None if fits is None else (fits.importance, varies)


def _digest(*arrays: NDArray) -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        h.update(str((a.shape, a.dtype.str)).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _normalised_entropy(weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """Entropy of each row of ``weights`` (normalised to sum 1), in base = number of columns.

    Rows of zeros get entropy 1 (no information, like the reference's epsilon); they carry
    no weight in D or C unless everything is zero. One column: entropy 0 by convention.
    """
    num_cols = weights.shape[1]
    if num_cols == 1:
        return np.zeros(weights.shape[0])
    totals = weights.sum(axis=1, keepdims=True)
    probs = np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0)
    logs = np.log(probs, out=np.zeros_like(probs), where=probs > 0)
    entropy = -(probs * logs).sum(axis=1) / np.log(num_cols)
    return np.where(totals[:, 0] > 0, entropy, 1.0)


def _concentration(weights: NDArray[np.float64]) -> float:
    """sum_i rho_i (1 - H(weights[i, :])), rho_i = weights[i, :].sum() / weights.sum(): how
    much of each row's weight one column holds, averaged by the rows' weights (Eastwood &
    Williams 2018)."""
    return _weighted_by_mass(1.0 - _normalised_entropy(weights), weights.sum(axis=1))


def _weighted_by_mass(scores: NDArray[np.float64], mass: NDArray[np.float64]) -> float:
    total = mass.sum()
    if total <= 0:
        return 0.0
    # The clip removes float rounding only (an entropy of 1 + 1e-16 for uniform rows).
    return float(np.clip(np.dot(scores, mass / total), 0.0, 1.0))


def _as_importance(importance: ArrayLike) -> NDArray[np.float64]:
    importance = np.asarray(importance, dtype=np.float64)
    if importance.ndim != 2 or importance.size == 0:
        raise ValueError(f"importance must be a non-empty (D, K) matrix, got {importance.shape}")
    if not np.all(np.isfinite(importance)):
        raise ValueError("importance must be finite")
    # Impurity importances can come out at -1e-18 from rounding; the reference takes |R| too.
    return np.abs(importance)


def _as_pair(codes: ArrayLike, factors: ArrayLike) -> tuple[NDArray, NDArray]:
    codes = np.asarray(codes, dtype=np.float64)
    factors = np.asarray(factors)
    if codes.ndim != 2 or factors.ndim != 2 or codes.shape[0] != factors.shape[0]:
        raise ValueError(
            f"expected codes (N, D) and factors (N, K), got {codes.shape} and {factors.shape}"
        )
    return codes, factors
