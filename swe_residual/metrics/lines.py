"""Exact, order-preserving line matching: the longest common subsequence of two line lists.

Used by the Kept metric (paper Appendix D.2): the share of the predecessor's added lines that
remain, in order, among the added lines of the final diff of the same file.

The LCS length is computed with the bit-parallel algorithm of Allison & Dix (1986) in the
formulation of Hyyrö (2004): one machine word per 64 positions of the shorter side of the
table, here a single Python int, so a 10k x 10k comparison takes about 10k big-int steps
instead of 10^8 table cells.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["lcs_length"]


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (exact element equality).

    Symmetric in its arguments. Runs in O(len(a) * len(b) / w) big-int word operations.
    """
    # Trim the common prefix and suffix: cheap, and the common case for similar diffs.
    lo = 0
    end_a, end_b = len(a), len(b)
    while lo < end_a and lo < end_b and a[lo] == b[lo]:
        lo += 1
    hi_a, hi_b = end_a, end_b
    while hi_a > lo and hi_b > lo and a[hi_a - 1] == b[hi_b - 1]:
        hi_a -= 1
        hi_b -= 1
    common = lo + (end_a - hi_a)
    xs = a[lo:hi_a]
    ys = b[lo:hi_b]
    if not xs or not ys:
        return common
    # Bits run along the longer list (one Python loop iteration per element of the shorter).
    if len(xs) < len(ys):
        xs, ys = ys, xs
    m = len(xs)
    masks: dict[str, int] = {}
    for idx, item in enumerate(xs):
        masks[item] = masks.get(item, 0) | (1 << idx)
    full = (1 << m) - 1
    v = full  # zero bits of v mark matched positions of xs
    get = masks.get
    for item in ys:
        match = get(item)
        if match is None:
            continue
        u = v & match
        v = ((v + u) | (v - u)) & full
    return common + m - v.bit_count()
