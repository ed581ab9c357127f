#!/bin/bash
# Hidden verifier: runs the acceptance tests against the repository and writes the reward.
TESTS_DIR="${TESTS_DIR:-/tests}"
LOGS_DIR="${VERIFIER_LOGS_DIR:-/logs/verifier}"
APP_DIR="${APP_DIR:-/app}"
mkdir -p "$LOGS_DIR"
cd "$APP_DIR" || { echo -1 > "$LOGS_DIR/reward.txt"; exit 1; }
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
