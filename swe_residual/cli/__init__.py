"""The `swe-residual` command."""
