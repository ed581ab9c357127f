"""Handoff views: what an agent starting from a Residual State is told of its predecessor, and their metrics and tables."""
