"""Montero et al. (NeurIPS 2022)'s decoder test of a trained model, as a trial runs it: each arm
of `evaluation.decoder_test_arms` trained (`raystudy.training.decoder_retrain`) and scored on
the eval/* images, so its NLLs stand beside the end-to-end model's.

The part an arm re-initialises restarts from the weights the model started training from (the
trial's seed), so the only difference from the model's own start is the frozen trained part.
"""

from __future__ import annotations

import torch

from raystudy.data import GroundTruthDataset, Split
from raystudy.keys import DECODER_TEST_ARMS, eval_key
from raystudy.metrics.reported import decoder_test_arms
from raystudy.models import VAE
from raystudy.scoring import eval_scores
from raystudy.spec import TrialConfig
from raystudy.training.decoder_retrain import retrain_arm
from raystudy.trials.common import build_seeded


def decoder_test_scores(
    model: VAE,
    dataset: GroundTruthDataset,
    split: Split,
    config: TrialConfig,
    device: torch.device,
) -> dict[str, float]:
    """The decoder test's scores of a trained model, when `evaluation.decoder_test_steps` asks
    for it (else nothing): per arm, `decoder_test_steps` steps of retraining with the trial's
    batch size, `evaluation.decoder_test_lr` (or the trial's lr) and, with
    `evaluation.decoder_test_rebalance`, shape-balanced draws; then the reconstruction NLL of the
    eval/* images as `eval/recon_decoder_test` (decoder arm) or `eval/recon_encoder_test`
    (encoder arm) and, for a split with a held-out set, `..._heldout`. A gt_decoder goes through
    the decoder arm only (`metrics.reported.decoder_test_arms`)."""
    ev = config.evaluation
    if not ev.decoder_test_steps or not ev.num_eval_images:
        return {}
    # The same start as the model's own training: only the frozen trained part differs.
    fresh, _ = build_seeded(config, dataset, device)
    scores: dict[str, float] = {}
    for arm in decoder_test_arms(ev.decoder_test_arms, model.code_is_ground_truth):
        start = fresh.decoder if arm == "decoder" else fresh.encoder
        tested, _ = retrain_arm(
            arm,
            model,
            dataset,
            split,
            config.train,
            ev.decoder_test_steps,
            start,
            seed=config.seed,
            device=device,
            rebalance=ev.decoder_test_rebalance,
            lr=ev.decoder_test_lr,
        )
        recon = eval_scores(tested, dataset, split, ev, device)
        scores.update(
            {
                eval_key(DECODER_TEST_ARMS[arm], heldout=h): recon[eval_key("recon", heldout=h)]
                for h in (False, True)
                if eval_key("recon", heldout=h) in recon
            }
        )
    return scores
