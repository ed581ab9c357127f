"""The files `swe-residual import commit` writes into every task it makes.

They are plain text so the user can read and edit them in the task directory afterwards: the
Dockerfile (the project's dependencies), the verifier (tests/test.sh) and the oracle's
solve.sh. Everything task-specific that the scripts need is in tests/config.json, so the
scripts themselves are the same bytes in every imported task.
"""

from __future__ import annotations

# The same base commit as the local backend makes from `[metadata] repo_dir` (fixed identity
# and dates: swe_residual.environments.base.BASE_COMMIT_ENV), so task.toml's base_commit_hash
# holds on both backends. Dependencies go before the repository is copied: anything written
# under /app before the commit changes that hash, and anything after it would be an
# untracked change in every start.
DOCKERFILE = """\
# The environment of a task imported from a fix commit (`swe-residual import commit`).
# Agents and the verifier run in containers of this image, without network.
ARG BASE_IMAGE=swe-residual-base:bookworm
FROM ${BASE_IMAGE}
# --- The project's dependencies: add them here, above the COPY, so nothing is written under
# /app (all of /app is the base commit). Nothing can be fetched when tasks run. For example:
#   RUN apt-get update && apt-get install -y --no-install-recommends python3-yaml
#   COPY requirements.txt /opt/requirements.txt     (the file beside this Dockerfile)
#   RUN python3 -m pip install --no-cache-dir --break-system-packages -r /opt/requirements.txt
# Do not install the project itself: the verifier runs its tests from /app, which imports it.
# ---
COPY repo/ /app/
WORKDIR /app
# A fixed identity and date make the base commit hash reproducible (task.toml base_commit_hash).
RUN git init -q -b main . && git add -A \\
    && GIT_AUTHOR_DATE=2026-01-01T00:00:00Z GIT_COMMITTER_DATE=2026-01-01T00:00:00Z git -c user.name=swe-residual -c user.email=swe-residual@localhost commit -q -m "Base commit" && git log -1 --format=%H
"""

SOLVE_SH = """\
#!/bin/bash
# The fix commit's source changes (its test changes are the hidden tests, not part of it).
set -euo pipefail
cd "${APP_DIR:-/app}"
git apply --whitespace=nowarn "${SOLUTION_DIR:-/solution}/solution.patch"
"""

# The JUnit ids in config.json are the suite's (swe_residual.environments.verifier.outputs.parse_junit):
# `<classname>.<name>`, e.g. `tests.test_words.test_keeps_contractions` with --rootdir at the
# repository, so they read the same on every backend and pytest version.
TEST_SH = """\
#!/bin/bash
# Hidden verifier of a task imported from a fix commit (`swe-residual import commit`): applies
# the agent's work (the collected workspace.patch) to the pristine repository, lays the fix's
# own test files over it (tests/overlay/, at their paths in the repository), runs them with
# pytest and writes the reward: 1 when every test of config.json's f2p_node_ids and
# p2p_node_ids passed, else 0. The fix's tests enter only here: the base repository holds the
# parent commit's version of them, or nothing.
TESTS_DIR="${TESTS_DIR:-/tests}"
LOGS_DIR="${VERIFIER_LOGS_DIR:-/logs/verifier}"
APP_DIR="${APP_DIR:-/app}"
ARTIFACTS_DIR="${ARTIFACTS_DIR:-/logs/artifacts}"
mkdir -p "$LOGS_DIR"
cd "$APP_DIR" || { echo -1 > "$LOGS_DIR/reward.txt"; exit 1; }
# An environment without pytest cannot grade anything: a verifier error, not the agent's fault.
if ! python3 -I -c "import pytest" >/dev/null 2>&1; then
  echo "pytest is not installed in the verifier's environment" >&2
  echo -1 > "$LOGS_DIR/reward.txt"
  exit 0
fi
# The [[verifier.collect]] step wrote the whole working tree (untracked files included) as a
# binary diff against the base commit. An empty patch means nothing changed; a patch that does
# not apply is the agent's work (reward 0), not a verifier error.
PATCH="$ARTIFACTS_DIR/workspace.patch"
if [ -s "$PATCH" ]; then
  if ! git -c safe.directory='*' apply --binary --whitespace=nowarn "$PATCH"; then
    echo "the agent's workspace.patch does not apply to the base commit" >&2
    echo 0 > "$LOGS_DIR/reward.txt"
    exit 0
  fi
fi
# The fix's versions of its test files win over whatever the repository holds at their paths.
if [ -d "$TESTS_DIR/overlay" ]; then
  cp -R "$TESTS_DIR/overlay/." "$APP_DIR/" || { echo -1 > "$LOGS_DIR/reward.txt"; exit 0; }
fi
rm -f "$LOGS_DIR/junit.xml"
# pytest comes from the image, never from the repository: -P keeps the current directory off
# the path while pytest is imported. Only then is the repository put first, as `python -m
# pytest` run from its root would: the project's conftest.py files and pytest settings apply,
# as in its own CI. A module that fails to import is reported and the others still run.
# Installed plugins load only when config.json's pytest_plugins names them (`-p NAME`), so the
# grade never depends on what else happens to be installed where the verifier runs.
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
python3 -P -B - "$APP_DIR" "$TESTS_DIR/config.json" "$LOGS_DIR/junit.xml" <<'PY'
import json
import os
import sys

import pytest

app, config_path, junit = sys.argv[1:4]
with open(config_path, encoding="utf-8") as handle:
    config = json.load(handle)
for path in config.get("deleted_test_files", []):
    if os.path.lexists(os.path.join(app, path)):
        os.remove(os.path.join(app, path))
sys.path.insert(0, app)
plugins = [option for name in config.get("pytest_plugins", []) for option in ("-p", name)]
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *plugins, "--rootdir", app, "--continue-on-collection-errors",
                      "--junitxml", junit, *config["test_files"]]))
PY
# No JUnit report: the tests could not even start against this repository (reward 0).
python3 -I - "$LOGS_DIR/junit.xml" "$TESTS_DIR/config.json" > "$LOGS_DIR/reward.txt" <<'PY'
import json
import sys
import xml.etree.ElementTree as ElementTree

try:
    root = ElementTree.parse(sys.argv[1]).getroot()
except (OSError, ElementTree.ParseError):
    print(0)
    sys.exit(0)
passed = {}
for case in root.iter("testcase"):
    test_id = ".".join(part for part in (case.get("classname"), case.get("name")) if part)
    ok = all(case.find(tag) is None for tag in ("failure", "error", "skipped"))
    passed[test_id] = passed.get(test_id, True) and ok
with open(sys.argv[2], encoding="utf-8") as handle:
    config = json.load(handle)
required = config["f2p_node_ids"] + config["p2p_node_ids"]
print(1 if required and all(passed.get(test_id, False) for test_id in required) else 0)
PY
exit 0
"""

# The collect step and the environment are the sample's (datasets/sample/README.md, "How the
# repo track is graded"): Harbor's separate verifier receives only the agent's working tree
# as a binary diff against the base commit. Values are TOML strings written by the caller.
TASK_TOML = """\
schema_version = "1.3"
# What the separate verifier receives of the agent's work (tests/test.sh applies it).
artifacts = ["/logs/artifacts/workspace.patch"]
[task]
name = {name}
description = {description}
authors = []
keywords = ["python", "imported-fix"]
[metadata]
{metadata}
[verifier]
environment_mode = "separate"
timeout_sec = 600.0
[[verifier.collect]]
# The agent's whole working tree (untracked files included) as a binary diff against the base
# commit, without touching its repository: a temporary index and object store (the
# repository's objects as alternates). The verifier applies it to the pristine repository.
command = '''
set -e
cd "${{APP_DIR:-/app}}"
out="${{ARTIFACTS_DIR:-/logs/artifacts}}"
mkdir -p "$out"
objects="$(cd "$(git -c safe.directory='*' rev-parse --git-common-dir)" && pwd)/objects"
tmp="$(mktemp -d)" && mkdir "$tmp/objects"
export GIT_INDEX_FILE="$tmp/index" GIT_OBJECT_DIRECTORY="$tmp/objects" GIT_ALTERNATE_OBJECT_DIRECTORIES="$objects"
git -c safe.directory='*' add -A
git -c safe.directory='*' diff --binary --cached {base_commit} > "$out/workspace.patch"
rm -rf "$tmp"
'''
timeout_sec = 120.0
[agent]
timeout_sec = 1800.0
[environment]
# Harbor's baseline for both phases (its default is "public").
network_mode = "no-network"
build_timeout_sec = 1200.0
cpus = 1
memory_mb = 2048
storage_mb = 4096
"""
