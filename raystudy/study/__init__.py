"""A study: its folder and `study.json` (`folder`), running and resuming it under Ray Tune
(`driver`), its trial counts (`status`) and its models as Tune recorded them (`records`)."""
