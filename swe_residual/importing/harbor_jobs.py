"""Placeholder until this source lands."""

from __future__ import annotations

import argparse


def register(sources: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Nothing to register yet."""
