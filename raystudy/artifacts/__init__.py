"""What a trial shows in the MLflow UI, beside its numbers: why a model scores as it does.

- `reconstructions.png`: inputs of the encoder's training distribution (top row) over their
  reconstructions (bottom row), and `heldout_reconstructions.png`
  (`heldout_reconstructions_<set>.png` when a split has several held-out sets,
  `raystudy.data.splits.heldout`): inputs the encoder never trained on, their
  reconstructions, and the nearest combination it did train on, rendered in `sim` (Montero
  et al. 2021, Figs. 2a/9/12; Dittadi et al. 2021, Figs. 7/16/17): `reconstructions.py`;
- `traversals.png`: one latent dimension varied per row, the others held at one image's code
  (Higgins et al. 2017, Fig. 7; disentanglement_lib's "fixed interval" traversal over [-2, 2]
  of the prior, or [0, 1] for the ground-truth code of gt_decoder), and `traversals.gif`, the
  same traversal animated, one frame per value, each frame every code dimension side by side
  (the convention of disentanglement_lib and disentangling-vae): `traversals.py`;
- `dci_importance.png`: the DCI importance matrix R (codes x factors) as a Hinton diagram
  (Eastwood & Williams 2018, Fig. 2): a disentangled code has one large square per row:
  `dci_importance.py`;
- `latent_projection.png` (splits with a held-out set): training and held-out codes on the
  dimensions tied to the excluded factors (Montero et al. 2022, `raystudy.latent_projection`):
  `projection.py`;
- `composition_trials.png` (composition models): reference, transform, target and the
  model's output for training triples and triples with a held-out target, each column
  labelled with its action (Montero et al. 2021, Fig. 6a): `composition.py`.

Each figure is drawn of a `Subject` (`subject.py`: the model, its data, and the seed that
fixes the draws) into a folder; `grids.py` lays images out as a figure or an animation, and
`figures.py` draws all but the reconstructions, recording what cannot be drawn instead of
failing the trial.
"""
