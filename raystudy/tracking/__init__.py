"""MLflow tracking, the only package that writes to MLflow: reaching the store (`retry`),
the study's parent run (`study_run`) and each trial's run (`trial_run`), written in batches
MLflow accepts (`batches`), the logged models (`models`), reading runs back (`reader`) and
completing them from Tune's records (`sync`)."""
