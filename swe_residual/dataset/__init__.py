"""A dataset of Harbor tasks: loading, the task model, tracks, and the checks before a run."""
