"""The dataset: Harbor tasks and their Residual States as read from disk, the values every layer
names (values.py: tracks, starts, outcomes, terminations), the error kinds (errors.py) and
Harbor's on-disk formats (harbor_layout.py)."""
