"""Training: the loop that trains one model (`loop`) and the one that trains S models of one
configuration as a single batched model (`stacked`). No Ray, no MLflow: progress goes to a
callback, which the trials wire to Tune and MLflow."""
