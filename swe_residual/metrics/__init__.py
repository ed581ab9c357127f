"""Metrics over run records, pure functions (no pytest, no I/O): Res, Clean, Gap, CondFail,
acceptance bias, intervals and power; and the typed summary they make (summary/).

* :mod:`.headline` - Res, Clean, Gap, CondFail, predecessor groups (paper eqs. 3-5, Table 8);
* :mod:`.acceptance` - acceptance bias (paper Appendix D, Table 4);
* :mod:`.lines` - exact order-preserving line matching (bit-parallel LCS);
* :mod:`swe_residual.trial.steps.inspection` (re-exported here) - which files a run's actions
  showed, whether it inspected inherited work, computed as the item runs.
"""

from swe_residual.metrics.acceptance import acceptance_bias, kept_fraction, normally_submitted
from swe_residual.metrics.headline import dedupe_records, headline, is_excluded, success
from swe_residual.metrics.lines import lcs_length
from swe_residual.trial.steps.inspection import inspected, opened_files

__all__ = [
    "acceptance_bias",
    "dedupe_records",
    "headline",
    "inspected",
    "is_excluded",
    "kept_fraction",
    "lcs_length",
    "normally_submitted",
    "opened_files",
    "success",
]
