"""Environments: where a start is instantiated, the agent acts, and the verifier runs."""

from swe_residual.environments.base import Backend, Environment, ExecResult, VerifierOutput

__all__ = ["Backend", "Environment", "ExecResult", "VerifierOutput"]
