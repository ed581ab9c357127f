"""Residual States: their files, and the patches they are made of."""
