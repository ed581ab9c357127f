"""A task whose repository holds a git submodule of test data that is not UTF-8 (names and
contents), and an agent that changes those files: what the final patch, the trajectory and
the record must carry byte for byte, across every process and file on the record path.

`make_bytes_task` writes the task (tests/taskfactory.py's calc task, its repository made a
git superproject with the submodule `data`, added from a local repository); `BYTES_AGENT` is
the `cmd:` agent; `expected_patch` makes by hand, with git, the patch its work should give.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from taskfactory import make_task

from swe_residual.environments.base import BASE_COMMIT_ENV

# Latin-1 bytes, invalid as UTF-8: in names and contents of the submodule's files.
DATA_NAME = b"caf\xe9.txt"
DATA_CONTENT = b"temp\xe9rature \xff\xfe raw\n"

# Changes the submodule's files (one edited, one added with a non-UTF-8 name), writes a
# non-UTF-8 file in the superproject, prints non-UTF-8 output, then fixes the task.
BYTES_AGENT = r"""#!/bin/bash
set -e
e=$(printf '\351'); ff=$(printf '\377')
printf 'edited \377\376 by the agent\n' >> "data/caf${e}.txt"
printf 'new \351\377 data\n' > "data/n${ff}w-${e}.bin"
printf 'top \377 level \351\n' > "report-${e}.txt"
printf 'the agent says \377\376 caf\351\n'
cat > calc.py <<'EOF'
def add(a, b):
    return a + b


def clamp(value, low, high):
    return max(low, min(value, high))
EOF
"""


def _git(cwd: Path, *args: str) -> bytes:
    env = {**os.environ, **BASE_COMMIT_ENV}
    return subprocess.run(["git", "-c", "protocol.file.allow=always", *args], cwd=cwd, env=env, check=True,
                          capture_output=True).stdout


def make_data_repo(root: Path) -> Path:
    data = root / "test-data"
    data.mkdir(parents=True)
    (data / os.fsdecode(DATA_NAME)).write_bytes(DATA_CONTENT)
    (data / "plain.txt").write_text("plain\n")
    _git(data, "init", "-q", "-b", "main", ".")
    _git(data, "add", "-A")
    _git(data, "commit", "-q", "-m", "test data")
    return data


def make_bytes_task(root: Path, task_id: str = "bytes") -> Path:
    """The calc task, its repository a superproject with the submodule `data` (a local repository)."""
    task = make_task(root, task_id, states={})
    data = make_data_repo(root / ".sources" / task_id)
    repo = task / "environment" / "repo"
    _git(repo, "init", "-q", "-b", "main", ".")
    # Added, not committed: the base commit (the task's Dockerfile, or the local backend) takes it.
    _git(repo, "submodule", "add", "-q", str(data), "data")
    return task


def expected_patch(task: Path, scratch: Path, *, submodule_as_files: bool) -> bytes:
    """The patch of BYTES_AGENT's work, made by hand: the task's repository copied, committed as
    the base commit, the agent run there, `git add -A -f && git diff --cached --binary`.
    `submodule_as_files`: the submodule's `.git` link left out first and its files committed with
    the base (the docker backend diffs against the clean start's tree as exported, where every
    `.git` is left out), so the agent's changes to its files are changes to files, and the files it
    did not touch are in no patch."""
    work = scratch / "by-hand"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(task / "environment" / "repo", work, symlinks=True)
    if submodule_as_files:
        (work / "data" / ".git").unlink()
        _git(work, "rm", "-q", "-f", "--cached", "data")  # the gitlink, so that its files are added as files
        _git(work, "add", "-A", "-f", ".")
    else:
        _git(work, "add", "-A")
    _git(work, "commit", "-q", "--allow-empty", "-m", "Base commit")
    base = _git(work, "rev-parse", "HEAD").decode().strip()
    agent = scratch / "bytes-agent.sh"
    agent.write_text(BYTES_AGENT)
    subprocess.run(["bash", str(agent)], cwd=work, check=True, capture_output=True)
    _git(work, "add", "-A", "-f", ".")
    return _git(work, "-c", "core.quotePath=false", "diff", "--cached", "--binary", "--no-color", base)
