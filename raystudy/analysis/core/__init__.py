"""The results table every stage reads: one row per trial, loaded from MLflow or Tune's
storage (`results`, `tune_results`), its columns named (`columns`), its trials grouped into
cells and comparison groups (`cells`, `groups`)."""
