"""Environments: where a start is instantiated (a local workspace, a Docker container), the
agent acts and the hidden verifier runs (verifier/: what it receives, where it runs, its
outputs read as a verdict); patches applied and captured."""

from swe_residual.environments.base import Backend, Environment, ExecResult, VerifierOutput

__all__ = ["Backend", "Environment", "ExecResult", "VerifierOutput"]
