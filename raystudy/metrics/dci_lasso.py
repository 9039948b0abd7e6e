"""DCI with Lasso importances, as Montero et al. (ICLR 2021, "The role of disentanglement in
generalisation", Appendix A) measure it, beside the GBT DCI of disentanglement_lib.

Eastwood & Williams (2018) regress each factor v_k on the codes z with a sparse linear model;
its absolute weights give column k of the importance matrix R (D codes x K factors), and D and
C are the same entropy scores as in :mod:`raystudy.metrics.dci`:

    R[j, k] = |w_jk|,   w_k = argmin_w 1/(2N) ||v_k - z w - b||^2 + alpha ||w||_1
    D = sum_j rho_j (1 - H_K(P[j, :])),   C = sum_k rho_k (1 - H_D(Q[:, k]))
    I = mean_k max(0, R^2) of the regression of v_k on the test points

Montero et al. fit sklearn's ``LassoCV`` "with an alpha coefficient of 0.01 and 5
cross-validation partitions" and, unlike the original, do not standardise the codes (it gave
dead units, which keep a trace of information from before they were switched off, large
weights). With a single alpha the cross-validation only scores that alpha and the final fit is
the plain ``Lasso(alpha=0.01)`` on all training points, which is what is fitted here.

Targets: each factor's indices scaled to [0, 1] (index / (size - 1), size taken as the
largest index seen + 1), so that one alpha means the same penalty for every factor whatever
its number of values; the paper does not say how it scaled them. I is the mean test R^2
(1 - residual / total sum of squares), the regression counterpart of the GBT DCI's accuracy,
each factor's clipped at 0 (a fit worse than the mean carries no information), so that I lies
in [0, 1] like every dis/* score. Factors with a single value across train and test are left
out, as in :func:`raystudy.metrics.dci.dci`.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso

from raystudy.metrics._checks import prepare, varying_factors, warn_single_valued
from raystudy.metrics.dci import completeness, disentanglement
from raystudy.metrics.registry import register_metric

#: Montero et al. (2021), Appendix A.
ALPHA = 0.01


@register_metric("dci_lasso", outputs=("dci_lasso_d", "dci_lasso_c", "dci_lasso_i"))
def dci_lasso(
    codes_train: ArrayLike,
    factors_train: ArrayLike,
    codes_test: ArrayLike,
    factors_test: ArrayLike,
    *,
    alpha: float = ALPHA,
    seed: int = 0,
    n_jobs: int = 1,
) -> dict[str, float]:
    """D, C and I of the codes from Lasso importances (see module doc).

    Args:
        codes_train, codes_test: (N, D) and (M, D) codes, not standardised.
        factors_train, factors_test: (N, K) and (M, K) factor indices.
        alpha: the L1 penalty (Montero et al.: 0.01).
        seed: unused (coordinate descent in cyclic order is deterministic); accepted like
            the other metrics' seed.
        n_jobs: unused.

    Returns:
        ``{"dci_lasso_d", "dci_lasso_c", "dci_lasso_i"}``; D = C = 0 and I = 1 if no factor
        varies, D = C = 0 if every weight is zero (alpha too large for the codes' scale).
    """
    del seed, n_jobs
    z_train, y_train, z_test, y_test = prepare(codes_train, factors_train, codes_test, factors_test)
    varies = varying_factors(y_train, y_test)
    warn_single_valued(varies, "dci_lasso")
    if not varies.any():
        return {"dci_lasso_d": 0.0, "dci_lasso_c": 0.0, "dci_lasso_i": 1.0}
    top = np.maximum(np.concatenate([y_train, y_test]).max(axis=0), 1)[varies]
    v_train = y_train[:, varies] / top
    v_test = y_test[:, varies] / top
    importance = np.zeros((z_train.shape[1], v_train.shape[1]))
    r2 = np.zeros(v_train.shape[1])
    for k in range(v_train.shape[1]):
        model = Lasso(alpha=alpha)
        with warnings.catch_warnings():
            # A code dimension that barely varies converges slowly; the weights are still
            # the ones the paper's fit would give, and R^2 says how good the fit is.
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(z_train, v_train[:, k])
        importance[:, k] = np.abs(model.coef_)
        r2[k] = max(0.0, _r2(v_test[:, k], model.predict(z_test)))
    return {
        "dci_lasso_d": disentanglement(importance),
        "dci_lasso_c": completeness(importance),
        "dci_lasso_i": float(r2.mean()),
    }


def _r2(target: np.ndarray, predicted: np.ndarray) -> float:
    total = float(((target - target.mean()) ** 2).sum())
    if total == 0.0:
        return 1.0 if np.allclose(target, predicted) else 0.0
    return 1.0 - float(((target - predicted) ** 2).sum()) / total
