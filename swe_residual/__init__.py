"""SWE-Residual: evaluate coding agents from Clean Starts and from Residual States.

The package holds the domain (dataset, states, patches, environments, agents, verifier,
records, metrics) with no dependency on pytest, so the pytest plugin and the
`swe-residual` command share it.
"""

__version__ = "0.1.0"
