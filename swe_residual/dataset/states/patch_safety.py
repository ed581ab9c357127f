"""Checks on a patch's text alone, before any backend sees it: is it a patch, and does it
stay inside the repository (no absolute paths, no `..`, nothing under `.git`)."""

from __future__ import annotations

import re

from swe_residual.dataset.errors import DatasetError

_PATH_LINE = re.compile(r"^(?:diff --git a/(?P<a>\S+) b/(?P<b>\S+)|(?:---|\+\+\+) (?:[ab]/)?(?P<c>\S+)|(?:rename|copy) (?:from|to) (?P<d>\S+))")


def unsafe_paths(patch: str) -> list[str]:
    """Paths in a patch that would land outside the repository or inside `.git`."""
    bad = []
    for line in patch.splitlines():
        match = _PATH_LINE.match(line)
        if not match:
            continue
        for path in filter(None, match.groupdict().values()):
            if path == "/dev/null":
                continue
            parts = path.strip('"').split("/")
            if path.startswith("/") or ".." in parts or ".git" in parts:
                bad.append(path)
    return sorted(set(bad))


def check_patch_text(patch: str, *, source: str) -> None:
    """Reject what is not a patch, or a patch reaching outside the repository."""
    if patch.strip() and "diff --git " not in patch and "\n+++ " not in patch and not patch.startswith("--- "):
        raise DatasetError(source, "is not a patch (no diff headers)")
    bad = unsafe_paths(patch)
    if bad:
        raise DatasetError(source, f"patch writes outside the repository: {', '.join(bad[:5])}")
