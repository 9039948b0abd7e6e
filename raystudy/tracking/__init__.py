"""MLflow tracking: reaching the store (`retry`), writing runs (`writer`), reading them back
and completing them from Tune's records (`reader`)."""
