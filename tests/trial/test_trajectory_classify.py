"""Table-driven tests of the trajectory classifier (paper Appendix D.2: Opened, Inspection)."""

from __future__ import annotations

from typing import Any

import pytest

from swe_residual.trial.steps.inspection import inspected, opened_files
from swe_residual.trial.steps.shell import split_commands

pytestmark = pytest.mark.unit

CANDIDATES = {"src/pkg/core.py", "src/pkg/util.py", "docs/my guide.md", "lib/a-b.c"}

DIFF_OUT = (
    "diff --git a/src/pkg/core.py b/src/pkg/core.py\n"
    "index 1..2 100644\n--- a/src/pkg/core.py\n+++ b/src/pkg/core.py\n"
    "@@ -1,1 +1,2 @@\n ctx\n+new line\n"
)

# (command, output, expected opened candidates)
CASES: list[tuple[str, str, set[str]]] = [
    # --- counted: content readers
    ("cat src/pkg/core.py", "import os\n", {"src/pkg/core.py"}),
    ("cat -n src/pkg/core.py src/pkg/util.py", "1 x\n", {"src/pkg/core.py", "src/pkg/util.py"}),
    ("head -n 50 src/pkg/core.py", "x\n", {"src/pkg/core.py"}),
    ("tail -20 src/pkg/util.py", "x\n", {"src/pkg/util.py"}),
    ("sed -n '10,40p' src/pkg/core.py", "def f():\n", {"src/pkg/core.py"}),
    ("sed -e 's/a/b/' src/pkg/util.py", "b\n", {"src/pkg/util.py"}),
    ("nl -ba src/pkg/core.py | sed -n '1,20p'", "1 x\n", {"src/pkg/core.py"}),
    ("less src/pkg/core.py", "x\n", {"src/pkg/core.py"}),
    ("cd src/pkg && cat core.py", "x\n", {"src/pkg/core.py"}),
    # Absolute paths count under the repository root only, /app by default (golden changed from
    # /testbed for issue 12, point 5: whole repository-relative paths, no suffix matching).
    ("cd /app && cat ./src/pkg/util.py", "x\n", {"src/pkg/util.py"}),
    ("cat /app/src/pkg/core.py | head -n 30", "x\n", {"src/pkg/core.py"}),
    ('cat "docs/my guide.md"', "# Guide\n", {"docs/my guide.md"}),
    ("ls src; cat src/pkg/util.py && echo done", "core.py\nx\ndone\n", {"src/pkg/util.py"}),
    ("bash -c 'cat src/pkg/core.py'", "x\n", {"src/pkg/core.py"}),
    ("timeout 10 head src/pkg/core.py 2>/dev/null", "x\n", {"src/pkg/core.py"}),
    ("cat src/pkg/*.py", "x\n", {"src/pkg/core.py", "src/pkg/util.py"}),
    ("awk 'NR>=5 && NR<=9' lib/a-b.c", "int x;\n", {"lib/a-b.c"}),
    # --- counted: grep / rg showing matched lines
    ("grep -rn 'def run' src/", "src/pkg/core.py:12:def run():\n", {"src/pkg/core.py"}),
    ("grep -n run src/pkg/util.py", "3:    run()\n", {"src/pkg/util.py"}),
    ("rg run", "src/pkg/util.py:3:    run()\n", {"src/pkg/util.py"}),
    ("grep -rn -C2 x . | head", "./lib/a-b.c-4-int y;\n./lib/a-b.c:5:x\n", {"lib/a-b.c"}),
    ("rg --heading -n run src", "src/pkg/core.py\n12:def run():\n", {"src/pkg/core.py"}),
    ("cd src && grep -rn run pkg", "pkg/util.py:3:run()\n", {"src/pkg/util.py"}),
    # --- counted: git diff / git show output
    ("git diff", DIFF_OUT, {"src/pkg/core.py"}),
    ("git --no-pager diff HEAD -- src | head -100", DIFF_OUT, {"src/pkg/core.py"}),
    ("git show HEAD:src/pkg/util.py", "x\n", {"src/pkg/util.py"}),
    ("git status && git diff", "On branch main\n" + DIFF_OUT, {"src/pkg/core.py"}),
    # --- NOT counted
    ("ls -la src/pkg", "core.py\nutil.py\n", set()),
    ("find . -name '*.py'", "./src/pkg/core.py\n./src/pkg/util.py\n", set()),
    ("rg --files", "src/pkg/core.py\nsrc/pkg/util.py\n", set()),
    ("grep -rl run src", "src/pkg/core.py\n", set()),
    ("grep -L run -r src", "src/pkg/util.py\n", set()),
    ("grep -c run src/pkg/core.py", "3\n", set()),
    ("grep -q run src/pkg/core.py && echo yes", "yes\n", set()),
    ("git status", "modified:   src/pkg/core.py\n", set()),
    ("git diff --stat", " src/pkg/core.py | 2 +-\n", set()),
    ("git diff --name-only", "src/pkg/core.py\n", set()),
    ("git diff --name-status HEAD", "M\tsrc/pkg/core.py\n", set()),
    ("grep -n nothing src/pkg/core.py", "", set()),
    ("cat src/pkg/core.py > /tmp/copy.py", "", set()),
    ("cat src/pkg/core.py | wc -l", "42\n", set()),
    ("grep -rn run src | cut -d: -f1", "src/pkg/core.py\n", set()),
    ("sed -i 's/a/b/' src/pkg/core.py", "", set()),
    ("cat missing/core.py", "cat: missing/core.py: No such file or directory\n", set()),
    ("cat > src/pkg/core.py << 'EOF'\nimport os\ncat src/pkg/util.py\nEOF", "", set()),
    ("python -m pytest src/pkg/core.py", "src/pkg/core.py:3: AssertionError\n", set()),
    ("echo 'cat src/pkg/core.py'", "cat src/pkg/core.py\n", set()),
    ("stat src/pkg/core.py && wc -l src/pkg/util.py", "...\n", set()),
    ("git log --oneline -- src/pkg/core.py", "abc123 msg\n", set()),
]


@pytest.mark.parametrize(("command", "output", "expected"), CASES)
def test_opened_files_table(command: str, output: str, expected: set[str]) -> None:
    steps = [{"command": command, "output": output}]
    assert opened_files(steps, CANDIDATES) == expected


def test_table_has_enough_cases_both_ways() -> None:
    counted = [c for c in CASES if c[2]]
    not_counted = [c for c in CASES if not c[2]]
    assert len(counted) >= 10 and len(not_counted) >= 10 and len(CASES) >= 20


def test_editor_views_and_accumulation_over_steps() -> None:
    steps: list[dict[str, Any]] = [
        {"action": "view", "path": "/testbed/src/pkg/core.py", "output": "1 import os"},
        {"action": "view", "path": "/testbed/src/pkg", "output": "core.py\nutil.py"},
        {"command": "str_replace_editor view /testbed/lib/a-b.c", "output": "int x;"},
        {"action": "view", "path": "docs/missing.md", "output": "The path does not exist"},
    ]
    # the repository sits at /testbed here: the caller names the root (issue 12, point 5)
    assert opened_files(steps, CANDIDATES, root="/testbed") == {"src/pkg/core.py", "lib/a-b.c"}
    assert opened_files([], CANDIDATES) == set()
    # the runner's normalized steps always carry every key (command None for a view)
    normalized: list[dict[str, Any]] = [
        {"index": 0, "action": "view", "command": None, "path": "src/pkg/util.py", "output": "x"},
        {"index": 1, "action": "edit", "command": None, "path": "lib/a-b.c", "output": ""},
        {"index": 2, "action": "command", "command": "head lib/a-b.c", "path": None, "output": "x"},
        {"index": 3, "action": "message", "command": None, "path": None, "output": "done"},
    ]
    assert opened_files(normalized, CANDIDATES) == {"src/pkg/util.py", "lib/a-b.c"}
    assert not inspected(normalized[1:2] + normalized[3:], {"lib/a-b.c"})  # an edit is no read
    assert opened_files(steps, set()) == set()


INSPECT_CASES: list[tuple[str, str, bool]] = [
    ("git status", "clean\n", True),
    ("git diff --stat", " src/pkg/core.py | 2 +-\n", True),
    ("git -C /testbed diff --name-only", "src/pkg/core.py\n", True),
    ("cd /testbed && git --no-pager status --short", " M src/pkg/core.py\n", True),
    ("cat src/pkg/core.py", "x\n", True),  # a predecessor-changed file
    ("cat src/pkg/util.py", "x\n", False),  # not changed by the predecessor
    ("ls && find . -name '*.py'", "src\n", False),
    ("git log -1", "commit abc\n", False),
]


@pytest.mark.parametrize(("command", "output", "expected"), INSPECT_CASES)
def test_inspected_table(command: str, output: str, expected: bool) -> None:
    assert inspected([{"command": command, "output": output}], {"src/pkg/core.py"}) is expected


def test_split_commands_respects_quotes_and_heredocs() -> None:
    src = "cd a && cat 'x;y' | head; echo \"p|q\" || true\ncat <<EOF\ncat z\nEOF\nls"
    assert split_commands(src) == [
        [["cd", "a"]],
        [["cat", "x;y"], ["head"]],
        [["echo", "p|q"]],
        [["true"]],
        [["cat"]],
        [["ls"]],
    ]


def test_split_commands_redirections_substitutions_and_continuations() -> None:
    # a number written against ">" is the redirected fd, not an argument
    assert split_commands("head -n 2 > f; head x 2>/dev/null") == [[["head", "-n", "2"]], [["head", "x"]]]
    # quoted here-document delimiters, <<- with tabs, two here-documents on one line
    assert split_commands("cat <<'EOF' > a.py\ncat z\nEOF\ncat <<-X <<Y\n\tx\n\tX\ny\nY\nls") == [
        [["cat"]],
        [["cat"]],
        [["ls"]],
    ]
    # $(...) is one opaque word glued to the text around it; a comment ends at its line
    assert split_commands("cat $(git rev-parse --show-toplevel)/a.py # show\ngit status") == [
        [["cat", "$(...)/a.py"]],
        [["git", "status"]],
    ]
    assert split_commands("ls \\\n  -la && grep '|' f") == [[["ls", "-la"]], [["grep", "|", "f"]]]


@pytest.mark.parametrize(
    ("command", "output", "expected"),
    [
        ("head -n 2 src/pkg/core.py > /tmp/x", "", set()),  # stdout to a file: not shown
        ("cat <<'EOF' > notes.txt\ncat src/pkg/util.py\nEOF\nhead src/pkg/core.py", "x\n", {"src/pkg/core.py"}),
        ("cat $(git rev-parse --show-toplevel)/src/pkg/core.py", "x\n", {"src/pkg/core.py"}),
        ("cat src/pkg/core.py 2>&1 | head -5", "x\n", {"src/pkg/core.py"}),
        ("cat src/pkg/util.py &> /tmp/log", "", set()),
    ],
)
def test_shell_grammar_in_classification(command: str, output: str, expected: set[str]) -> None:
    assert opened_files([{"command": command, "output": output}], CANDIDATES) == expected


@pytest.mark.parametrize(
    "command",
    [
        "echo 'unclosed", 'cat "src/pkg/core.py', "ls \\", "cat <<EOF", "echo $((1 + (2", "))))(((",
        "case x in a) cat a;; esac", "[[ -f a ]] && cat src/pkg/core.py", "f() { cat a; }", "<<", "2>",
        "\x00\x01 ;;; |||| &&& <<< >>>", "`cat src/pkg/core.py`",
    ],
)
def test_unparseable_commands_degrade_without_raising(command: str) -> None:
    steps = [{"command": command, "output": "x\n"}]
    assert opened_files(steps, CANDIDATES) <= CANDIDATES
    assert inspected(steps, {"src/pkg/core.py"}) in (True, False)
    split_commands(command)


def test_unclosed_quote_keeps_the_commands_before_it() -> None:
    assert opened_files([{"command": "cat src/pkg/util.py; echo 'oops", "output": "x"}], CANDIDATES) == {
        "src/pkg/util.py"
    }


def test_random_command_lines_never_raise() -> None:
    import random

    rng = random.Random(7)
    alphabet = ["cat", "grep", "git", "diff", " ", " ", "\n", "'", '"', "\\", "$(", "(", ")", ";", "|",
                "&", "<", ">", "<<", "EOF", "#", "2", "-n", "src/pkg/core.py", "`", "{", "}", "\t"]  # fmt: skip
    for _ in range(2000):
        command = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25)))
        steps = [{"command": command, "output": "src/pkg/core.py:1:x\n" + DIFF_OUT}]
        assert opened_files(steps, CANDIDATES) <= CANDIDATES
        inspected(steps, {"src/pkg/core.py"})


def test_on_the_machine_track_opened_and_inspected_count_what_the_predecessor_changed_anywhere(tmp_path) -> None:
    """A machine-track state records what its predecessor changed (`machine.json`, Stage IV):
    an agent that reads such a file anywhere on the machine is Inspected with the path in
    Opened; one that never looks at them is not."""
    import json
    import shutil

    from conftest import REPO_ROOT

    from swe_residual.dataset.load import load_dataset
    from swe_residual.trial.steps.inherited import opened_and_inspected
    from swe_residual.dataset.states.state import MACHINE_FILE, load_state

    sample = REPO_ROOT / "datasets" / "sample" / "backup-retention-config"
    shutil.copytree(sample, tmp_path / sample.name)
    state_dir = tmp_path / sample.name / "residual" / "patcher-1"
    (state_dir / MACHINE_FILE).write_text(json.dumps({
        "files": {"added": ["/srv/backups/data"], "changed": ["/etc/backupctl/backupctl.conf"], "deleted": []},
        "packages": {"installed": [], "removed": [], "upgraded": []}, "processes": []}))
    entry = load_dataset(tmp_path).entry(sample.name)
    state = load_state(entry.task, state_dir)
    paths = state.machine_paths()
    assert paths == {"/srv/backups/data", "/etc/backupctl/backupctl.conf"}

    def measure(*commands: str) -> tuple[list[str], bool | None]:
        steps = [{"command": command, "output": "target = /srv/backups/data"} for command in commands]
        return opened_and_inspected(steps, workdir="/root", residual=True, predecessor_files=set(),
                                    reference_files=None, machine_paths=paths)

    assert measure("cat /etc/backupctl/backupctl.conf") == (["/etc/backupctl/backupctl.conf"], True)
    assert measure("cd /etc/backupctl && grep -n target backupctl.conf") == (["/etc/backupctl/backupctl.conf"], True)
    assert measure("cat ../etc/backupctl/backupctl.conf") == (["/etc/backupctl/backupctl.conf"], True)  # from /root
    assert measure("ls /etc/backupctl", "backupctl check") == ([], False)  # never looked at the contents
    # a state without the record: nothing to look at on the machine (as before)
    (state_dir / MACHINE_FILE).unlink()
    assert load_state(entry.task, state_dir).machine_paths() is None
