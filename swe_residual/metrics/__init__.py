"""Metrics of SWE-Residual: pure functions over run records (no pytest, no I/O).

* :mod:`.headline` - Res, Clean, Gap, CondFail, predecessor groups (paper eqs. 3-5, Table 8);
* :mod:`.acceptance` - acceptance bias (paper Appendix D, Table 4);
* :mod:`.lines` - exact order-preserving line matching (bit-parallel LCS);
* :mod:`.inspection` - which files a run's actions showed, whether it inspected inherited work
  (built on :mod:`.shell`, command lines as simple commands, and :mod:`.actions`, what one
  command shows).
"""

from swe_residual.metrics.acceptance import acceptance_bias, kept_fraction, normally_submitted
from swe_residual.metrics.headline import dedupe_records, headline, is_excluded, success
from swe_residual.metrics.lines import lcs_length
from swe_residual.metrics.inspection import inspected, opened_files

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
