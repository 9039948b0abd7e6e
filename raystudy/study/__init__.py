"""A study: its folder and `study.json` (`folder`), running and resuming it under Ray Tune
(`driver`), its trial counts (`status`) and its models as Tune recorded them (`records`); what
the commands over a study say (`report`), its runs in MLflow's UI (`ui`) and an encoder scored
beside it (`evaluation`)."""
