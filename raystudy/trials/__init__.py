"""Trials: one model (`single`) or a stack of models trained together (`stacked`), from data
to MLflow runs and Tune reports; what both share is in `common`. They know nothing of Ray:
`raystudy.tune.trainable` hands them a `Reporter` that forwards to Tune."""
