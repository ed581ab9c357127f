"""The front ends: the `swe-residual` command and the pytest run's settings, items, shards,
resume, gates and verdict (run/)."""
