#!/bin/bash
# Hidden verifier: applies the agent's work (the collected workspace.patch) to the pristine
# repository, runs the acceptance tests and writes the reward.
# Harbor's separate verifier: a fresh container of the clean task image (the base commit, no
# residual state) that receives only the artifacts. The variables name the host directories
# when the local backend runs it.
TESTS_DIR="${TESTS_DIR:-/tests}"
LOGS_DIR="${VERIFIER_LOGS_DIR:-/logs/verifier}"
APP_DIR="${APP_DIR:-/app}"
ARTIFACTS_DIR="${ARTIFACTS_DIR:-/logs/artifacts}"
mkdir -p "$LOGS_DIR"
cd "$APP_DIR" || { echo -1 > "$LOGS_DIR/reward.txt"; exit 1; }
# The [[verifier.collect]] step wrote the whole working tree (untracked files included) as a
# binary diff against the base commit. An empty patch means nothing changed; a patch that does
# not apply is the agent's work (reward 0), not a verifier error. Without the file (a runner
# that collects nothing and verifies a copy of the final state), the tree is graded as it is.
PATCH="$ARTIFACTS_DIR/workspace.patch"
if [ -s "$PATCH" ]; then
  if ! git -c safe.directory='*' apply --binary --whitespace=nowarn "$PATCH"; then
    echo "the agent's workspace.patch does not apply to the base commit" >&2
    echo 0 > "$LOGS_DIR/reward.txt"
    exit 0
  fi
fi
# The repository is the agent's: nothing in it may stand in for the test runner. Isolated
# mode (-I) puts neither the current directory, PYTHONPATH nor the user's site-packages on
# the path (so no pytest.py, _pytest/, sitecustomize.py or .pth file of the agent's loads
# before pytest), pytest adds the repository itself, the config file is ours (-c), and no
# plugin is loaded from installed packages.
unset PYTHONPATH
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
python3 -I -B -m pytest -c "$TESTS_DIR/pytest.ini" --rootdir "$TESTS_DIR" -o pythonpath="$APP_DIR" \
  -q "$TESTS_DIR" --junitxml="$LOGS_DIR/junit.xml"
rc=$?
case "$rc" in
  0) echo 1 > "$LOGS_DIR/reward.txt" ;;
  1) echo 0 > "$LOGS_DIR/reward.txt" ;;
  *) echo -1 > "$LOGS_DIR/reward.txt" ;;
esac
exit 0
