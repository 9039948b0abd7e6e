"""Training: the loop that trains one model (`loop`), the one that trains S models of one
configuration as a single batched model (`stacked`), and the decoder test's retraining of a
trained model's decoder on its frozen encoder, or of its encoder against its frozen decoder
(`decoder_retrain`, on shape-balanced batches from `balanced` when asked). No Ray, no MLflow:
progress goes to a callback, which the trials wire to Tune and MLflow."""
