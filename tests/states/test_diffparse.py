"""Tests of swe_residual.dataset.states.diffparse on diffs produced by real `git diff --binary` runs."""

from __future__ import annotations

import pytest

from swe_residual.dataset.states.diffparse import FileDiff, changed_files, parse_diff, unquote_path

pytestmark = pytest.mark.unit

# `git diff --cached --binary` of a real repository (git 2.x), pasted verbatim. Note the TAB
# after paths containing a space in the ---/+++ lines, and git's C-quoting of "tab\té.txt".
GIT_DIFF = (
    "diff --git a/empty.txt b/empty.txt\n"
    "new file mode 100644\n"
    "index 0000000..e69de29\n"
    "diff --git a/gone.txt b/gone.txt\n"
    "deleted file mode 100644\n"
    "index c118916..0000000\n"
    "--- a/gone.txt\n"
    "+++ /dev/null\n"
    "@@ -1 +0,0 @@\n"
    "-del me\n"
    "diff --git a/img.bin b/img.bin\n"
    "index 677273046bce3115f56c248238f3b83f77cfc239.."
    "fcdc8507d49a0f09b13767af133733b52ab95864 100644\n"
    "GIT binary patch\n"
    "literal 6\n"
    "NcmZSJOv=nN0ssUA0d)WX\n"
    "\n"
    "literal 6\n"
    "NcmZQzWJ=1+0{{Yf0X+Z!\n"
    "\n"
    "diff --git a/new dir/new file.txt b/new dir/new file.txt\n"
    "new file mode 100644\n"
    "index 0000000..2fe4df4\n"
    "--- /dev/null\n"
    "+++ b/new dir/new file.txt\t\n"
    "@@ -0,0 +1,2 @@\n"
    "+n1\n"
    "+n2\n"
    "diff --git a/new.bin b/new.bin\n"
    "new file mode 100644\n"
    "index 0000000000000000000000000000000000000000..f9e371ff2657e5d2bd4389e3b323fe0550e3a860\n"
    "GIT binary patch\n"
    "literal 4\n"
    "LcmZR`ODzWg0*?Vp\n"
    "\n"
    "literal 0\n"
    "HcmV?d00001\n"
    "\n"
    "diff --git a/nonl.txt b/nonl.txt\n"
    "index c1b0730..e25f181 100644\n"
    "--- a/nonl.txt\n"
    "+++ b/nonl.txt\n"
    "@@ -1 +1 @@\n"
    "-x\n"
    "\\ No newline at end of file\n"
    "+y\n"
    "\\ No newline at end of file\n"
    "diff --git a/old.txt b/old.txt\n"
    "old mode 100644\n"
    "new mode 100755\n"
    "diff --git a/ren_src.py b/ren_dst.py\n"
    "similarity index 85%\n"
    "rename from ren_src.py\n"
    "rename to ren_dst.py\n"
    "index f9d9a01..51e7af4 100644\n"
    "--- a/ren_src.py\n"
    "+++ b/ren_dst.py\n"
    "@@ -1,7 +1,7 @@\n"
    " a\n"
    " b\n"
    " c\n"
    "-d\n"
    "+D\n"
    " e\n"
    " f\n"
    " g\n"
    'diff --git "a/tab\\t\\303\\251.txt" "b/tab\\t\\303\\251.txt"\n'
    "index bca70f3..8a08eba 100644\n"
    '--- "a/tab\\t\\303\\251.txt"\n'
    '+++ "b/tab\\t\\303\\251.txt"\n'
    "@@ -1 +1,2 @@\n"
    " q\n"
    "+r\n"
    "diff --git a/with space.txt b/with space.txt\n"
    "index 4cb29ea..6addb9b 100644\n"
    "--- a/with space.txt\t\n"
    "+++ b/with space.txt\t\n"
    "@@ -1,3 +1,4 @@\n"
    " one\n"
    "-two\n"
    "+TWO\n"
    " three\n"
    "+four\n"
)

# A pure rename (100% similarity: no ---/+++ lines) of a path with spaces, then a new file
# whose quoted name contains a space and quotes.
RENAME_AND_QUOTED = (
    "diff --git a/with space.txt b/moved dir x.txt\n"
    "similarity index 100%\n"
    "rename from with space.txt\n"
    "rename to moved dir x.txt\n"
    'diff --git "a/sp \\"q\\".txt" "b/sp \\"q\\".txt"\n'
    "new file mode 100644\n"
    "index 0000000..b680253\n"
    "--- /dev/null\n"
    '+++ "b/sp \\"q\\".txt"\t\n'
    "@@ -0,0 +1 @@\n"
    "+z\n"
)


def _by_path(entries: list[FileDiff]) -> dict[str, FileDiff]:
    return {e.path: e for e in entries}


def test_parse_real_git_diff_statuses_and_lines() -> None:
    entries = parse_diff(GIT_DIFF)
    assert [e.path for e in entries] == [
        "empty.txt",
        "gone.txt",
        "img.bin",
        "new dir/new file.txt",
        "new.bin",
        "nonl.txt",
        "old.txt",
        "ren_dst.py",
        "tab\té.txt",
        "with space.txt",
    ]
    e = _by_path(entries)
    assert e["empty.txt"] == FileDiff("empty.txt", None, "added", False, [], [])
    assert e["gone.txt"] == FileDiff("gone.txt", None, "deleted", False, [], ["del me"])
    assert e["img.bin"] == FileDiff("img.bin", None, "modified", True, [], [])
    assert e["new dir/new file.txt"] == FileDiff(
        "new dir/new file.txt", None, "added", False, ["n1", "n2"], []
    )
    assert e["new.bin"] == FileDiff("new.bin", None, "added", True, [], [])
    assert e["nonl.txt"] == FileDiff("nonl.txt", None, "modified", False, ["y"], ["x"])
    assert e["old.txt"] == FileDiff("old.txt", None, "modified", False, [], [])
    assert e["ren_dst.py"] == FileDiff("ren_dst.py", "ren_src.py", "renamed", False, ["D"], ["d"])
    assert e["tab\té.txt"] == FileDiff("tab\té.txt", None, "modified", False, ["r"], [])
    assert e["with space.txt"] == FileDiff(
        "with space.txt", None, "modified", False, ["TWO", "four"], ["two"]
    )


def test_changed_files_includes_both_sides_of_a_rename() -> None:
    assert changed_files(GIT_DIFF) == {
        "empty.txt",
        "gone.txt",
        "img.bin",
        "new dir/new file.txt",
        "new.bin",
        "nonl.txt",
        "old.txt",
        "ren_src.py",
        "ren_dst.py",
        "tab\té.txt",
        "with space.txt",
    }


def test_pure_rename_with_spaces_and_quoted_path() -> None:
    entries = parse_diff(RENAME_AND_QUOTED)
    assert entries == [
        FileDiff("moved dir x.txt", "with space.txt", "renamed", False, [], []),
        FileDiff('sp "q".txt', None, "added", False, ["z"], []),
    ]
    assert changed_files(RENAME_AND_QUOTED) == {"with space.txt", "moved dir x.txt", 'sp "q".txt'}


def test_hunk_counts_protect_lines_that_look_like_headers() -> None:
    # The added lines "++ b/x" and "-- a/x" render as "+++ b/x" / "--- a/x"... inside a hunk;
    # "+diff --git a/q b/q" is an added line too. Counts (@@ -1,2 +1,4 @@) keep them as lines.
    text = (
        "diff --git a/x.md b/x.md\n"
        "--- a/x.md\n"
        "+++ b/x.md\n"
        "@@ -1,2 +1,4 @@\n"
        "--- a/x\n"
        "+++ b/x\n"
        "+diff --git a/q b/q\n"
        " tail\n"
        "+@@ not a hunk\n"
    )
    [entry] = parse_diff(text)
    assert entry.added == ["++ b/x", "diff --git a/q b/q", "@@ not a hunk"]
    assert entry.removed == ["-- a/x"]


def test_binary_files_differ_and_deleted_binary() -> None:
    text = (
        "diff --git a/logo.png b/logo.png\n"
        "new file mode 100644\n"
        "index 0000000..1111111\n"
        "Binary files /dev/null and b/logo.png differ\n"
        "diff --git a/old.png b/old.png\n"
        "deleted file mode 100644\n"
        "index 2222222..0000000\n"
        "Binary files a/old.png and /dev/null differ\n"
        "diff --git a/z.png b/z.png\n"
        "index 3333333..4444444 100644\n"
        "Binary files a/z.png and b/z.png differ\n"
    )
    assert parse_diff(text) == [
        FileDiff("logo.png", None, "added", True, [], []),
        FileDiff("old.png", None, "deleted", True, [], []),
        FileDiff("z.png", None, "modified", True, [], []),
    ]


def test_multiple_hunks_crlf_and_no_trailing_newline() -> None:
    text = (
        "diff --git a/a.py b/a.py\n"
        "index 1..2 100644\n"
        "--- a/a.py\n"
        "+++ b/a.py\n"
        "@@ -1,2 +1,2 @@\n"
        "-one\r\n"
        "+ONE\r\n"
        " two\r\n"
        "@@ -10 +10,2 @@\n"
        " ten\n"
        "+eleven"
    )
    [entry] = parse_diff(text)
    assert entry.added == ["ONE\r", "eleven"]
    assert entry.removed == ["one\r"]


def test_plain_unified_diff_without_git_header() -> None:
    text = "--- a/src/m.c\n+++ b/src/m.c\n@@ -1 +1 @@\n-int a;\n+int b;\n"
    expected = FileDiff("src/m.c", None, "modified", False, ["int b;"], ["int a;"])
    assert parse_diff(text) == [expected]


def test_empty_and_none() -> None:
    assert parse_diff("") == []
    assert parse_diff(None) == []
    assert changed_files(None) == set()


def test_unquote_path() -> None:
    assert unquote_path('"a/tab\\t\\303\\251.txt"') == "a/tab\té.txt"
    assert unquote_path('"x \\"y\\" \\\\z"') == 'x "y" \\z'
    assert unquote_path("plain name") == "plain name"
