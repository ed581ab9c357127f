"""Hostile states and datasets: rejected with a clear reason, never applied on the host."""

from __future__ import annotations

from pathlib import Path

import pytest
from taskfactory import make_task

from swe_residual.dataset import load_dataset
from swe_residual.environment.base import StartSpec
from swe_residual.environment.local import LocalBackend
from swe_residual.errors import DatasetError
from swe_residual.state import MAX_PATCH_BYTES

ESCAPING = {
    "parent directory": (
        "diff --git a/../escaped.txt b/../escaped.txt\nnew file mode 100644\n--- /dev/null\n+++ b/../escaped.txt\n"
        "@@ -0,0 +1 @@\n+pwned\n"
    ),
    "absolute path": (
        "diff --git a//tmp/escaped.txt b//tmp/escaped.txt\nnew file mode 100644\n--- /dev/null\n"
        "+++ /tmp/escaped.txt\n@@ -0,0 +1 @@\n+pwned\n"
    ),
    "git directory": (
        "diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\nnew file mode 100755\n--- /dev/null\n"
        "+++ b/.git/hooks/post-checkout\n@@ -0,0 +1 @@\n+rm -rf ~\n"
    ),
}


def state_errors(root: Path) -> dict[str, DatasetError]:
    return dict(load_dataset(root).entries[0].state_errors)


@pytest.mark.parametrize("kind", sorted(ESCAPING))
def test_patch_writing_outside_the_repository_is_rejected_at_load(tmp_path: Path, kind: str) -> None:
    task = make_task(tmp_path / "data")
    patch = task / "residual" / "drafter-1" / "changes.patch"
    patch.write_text(ESCAPING[kind])
    error = state_errors(tmp_path / "data")["drafter-1"]
    assert "outside the repository" in str(error) and str(patch) in str(error)


def test_not_a_patch_and_a_huge_patch_are_rejected(tmp_path: Path) -> None:
    task = make_task(tmp_path / "data", states={"drafter-1": {"calc.py": "x = 1\n"}, "patcher-1": {"calc.py": "y\n"}})
    (task / "residual" / "drafter-1" / "changes.patch").write_text("just some notes, no diff here\n")
    with (task / "residual" / "patcher-1" / "changes.patch").open("wb") as handle:
        handle.truncate(MAX_PATCH_BYTES + 1)  # sparse: no real disk use
    errors = state_errors(tmp_path / "data")
    assert "is not a patch" in str(errors["drafter-1"])
    assert "exceeds" in str(errors["patcher-1"])


def test_patch_writing_through_a_symlink_it_creates_never_touches_the_host(tmp_path: Path) -> None:
    target = tmp_path / "outside"
    target.mkdir()
    task = make_task(tmp_path / "data")
    (task / "residual" / "drafter-1" / "changes.patch").write_text(
        f"diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+{target}\n"
        "\\ No newline at end of file\n"
        "diff --git a/link/evil.txt b/link/evil.txt\nnew file mode 100644\n--- /dev/null\n+++ b/link/evil.txt\n"
        "@@ -0,0 +1 @@\n+pwned\n"
    )
    entry = load_dataset(tmp_path / "data").entries[0]
    backend = LocalBackend(cache_dir=tmp_path / "cache", work_dir=tmp_path)
    with pytest.raises(DatasetError) as info:
        backend.start(entry.task, entry.states[0], StartSpec("r", "i", 1))
    assert "does not apply" in str(info.value)
    assert list(target.iterdir()) == []
