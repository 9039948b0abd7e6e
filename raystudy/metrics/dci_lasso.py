"""DCI with Lasso importances, as Montero et al. (ICLR 2021, "The role of disentanglement in
generalisation") measure it, beside the GBT DCI of disentanglement_lib.

Eastwood & Williams (2018) regress each factor v_k on the codes z with a sparse linear model;
its absolute weights give column k of the importance matrix R (D codes x K factors), and D and
C are the same entropy scores as in :mod:`raystudy.metrics.dci`:

    R[j, k] = |w_jk|,   w_k = argmin_w 1/(2N) ||v_k - z w - b||^2 + alpha ||w||_1
    D = sum_j rho_j (1 - H_K(P[j, :])),   C = sum_k rho_k (1 - H_D(Q[:, k]))
    I = mean_k max(0, R^2) of the regression of v_k on the test points

Two registered variants, which differ in the targets' scale and the penalty:

``dci_lasso`` (the default) is what the authors' code computes (github.com/mmrl/disent-and-gen,
``src/analysis/metrics.py``, ``DCIMetrics``): codes centred but not scaled, each factor
z-scored (``(v - mean) / (std + 1e-12)``), and ``LassoCV(cv=5, selection='random',
alphas=[0.02])``. With a single alpha the cross-validation only scores that alpha; the weights
are those of the final refit, ``Lasso(alpha=0.02, selection='random')`` on all training points
(sklearn's LassoCV refits with its own ``selection``, ``max_iter``, ``tol`` and
``random_state``), which is what is fitted here with ``random_state=seed``. The factors' values
in their code are dSprites' and 3DShapes' latent values, which are linear in the factor
indices, so z-scoring the indices gives the same targets.

``dci_lasso_paper`` is the paper's text (Appendix A: "an alpha coefficient of 0.01"), with the
factors scaled to [0, 1] (index / (size - 1), size the largest index seen + 1), since the text
does not say how they are scaled. On [0, 1] targets the same alpha is a penalty several times
stronger than on z-scored ones: sparser importances, and D inflated on weakly informative codes.

Where both differ from the authors' code, and why: the fit uses the training points and R^2 is
scored on the test points (their code fits on one sample and leaves informativeness out); the
mean and standard deviation that centre and scale are the training points'; factors with a
single value are left out of R (their code keeps a zero column, which changes only the base
of D's logarithm), as in :func:`raystudy.metrics.dci.dci`. I is the mean test R^2, each
factor's clipped at 0 (a fit worse than the mean carries no information), so that I lies in
[0, 1] like every dis/* score.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso

from raystudy.metrics._checks import Sample, on_arrays
from raystudy.metrics.dci import completeness, disentanglement
from raystudy.metrics.registry import register_metric

#: The authors' code (DCIMetrics' LassoCV alphas).
ALPHA = 0.02
#: Montero et al. (2021), Appendix A.
PAPER_ALPHA = 0.01
#: The authors' code adds it to each factor's standard deviation.
EPS = 1e-12

Targets = Literal["zscore", "unit"]


@register_metric("dci_lasso", outputs=("dci_lasso_d", "dci_lasso_c", "dci_lasso_i"))
@on_arrays()
def dci_lasso(sample: Sample, *, seed: int, n_jobs: int, alpha: float = ALPHA) -> dict[str, float]:
    """D, C and I of the codes from Lasso importances, as the authors' code fits them.

    Args:
        codes_train, codes_test: (N, D) and (M, D) codes, not standardised.
        factors_train, factors_test: (N, K) and (M, K) factor indices.
        alpha: the L1 penalty on z-scored factors (the authors' code: 0.02).
        seed: the random coordinate order (``selection='random'``).
        n_jobs: unused.

    Returns:
        ``{"dci_lasso_d", "dci_lasso_c", "dci_lasso_i"}``; D = C = 0 and I = 1 if no factor
        varies, D = C = 0 if every weight is zero (alpha too large for the codes' scale).
    """
    del n_jobs
    scores = lasso_dci(sample, alpha=alpha, targets="zscore", seed=seed, name="dci_lasso")
    return {f"dci_lasso_{k}": v for k, v in scores.items()}


@register_metric(
    "dci_lasso_paper", outputs=("dci_lasso_paper_d", "dci_lasso_paper_c", "dci_lasso_paper_i")
)
@on_arrays()
def dci_lasso_paper(
    sample: Sample, *, seed: int, n_jobs: int, alpha: float = PAPER_ALPHA
) -> dict[str, float]:
    """D, C and I from ``Lasso(alpha=0.01)`` on factors scaled to [0, 1] (the paper's text).

    Args:
        codes_train, codes_test: (N, D) and (M, D) codes, not standardised.
        factors_train, factors_test: (N, K) and (M, K) factor indices.
        alpha: the L1 penalty on [0, 1] factors (Montero et al. 2021, App. A: 0.01).
        seed: unused (coordinate descent in cyclic order is deterministic).
        n_jobs: unused.

    Returns:
        ``{"dci_lasso_paper_d", "dci_lasso_paper_c", "dci_lasso_paper_i"}``.
    """
    del seed, n_jobs
    scores = lasso_dci(sample, alpha=alpha, targets="unit", seed=None, name="dci_lasso_paper")
    return {f"dci_lasso_paper_{k}": v for k, v in scores.items()}


def lasso_dci(
    sample: Sample, *, alpha: float, targets: Targets, seed: int | None, name: str
) -> dict[str, float]:
    """``{"d", "c", "i"}`` of the Lasso DCI (module doc).

    ``targets``: ``"zscore"`` (the authors' code) or ``"unit"`` (index / (size - 1)).
    ``seed``: ``None`` fits in cyclic coordinate order, an int in a random order drawn from it.
    """
    varies = sample.varying(name)
    if not varies.any():
        return {"d": 0.0, "c": 0.0, "i": 1.0}
    z_train, y_train, z_test, y_test = sample.factors(varies)
    v_train, v_test = _scaled_targets(y_train, y_test, targets)
    centre = z_train.mean(axis=0)
    z_train, z_test = z_train - centre, z_test - centre
    importance = np.zeros((z_train.shape[1], v_train.shape[1]))
    r2 = np.zeros(v_train.shape[1])
    for k in range(v_train.shape[1]):
        model = (
            Lasso(alpha=alpha)
            if seed is None
            else Lasso(alpha=alpha, selection="random", random_state=seed)
        )
        with warnings.catch_warnings():
            # A code dimension that barely varies converges slowly; the weights are still
            # the ones the reference fit would give, and R^2 says how good the fit is.
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(z_train, v_train[:, k])
        importance[:, k] = np.abs(model.coef_)
        r2[k] = max(0.0, _r2(v_test[:, k], model.predict(z_test)))
    return {
        "d": disentanglement(importance),
        "c": completeness(importance),
        "i": float(r2.mean()),
    }


def _scaled_targets(
    y_train: np.ndarray, y_test: np.ndarray, targets: Targets
) -> tuple[np.ndarray, np.ndarray]:
    if targets == "zscore":
        mean, std = y_train.mean(axis=0), y_train.std(axis=0) + EPS
        return (y_train - mean) / std, (y_test - mean) / std
    top = np.maximum(np.concatenate([y_train, y_test]).max(axis=0), 1)
    return y_train / top, y_test / top


def _r2(target: np.ndarray, predicted: np.ndarray) -> float:
    total = float(((target - target.mean()) ** 2).sum())
    if total == 0.0:
        return 1.0 if np.allclose(target, predicted) else 0.0
    return 1.0 - float(((target - predicted) ** 2).sum()) / total
