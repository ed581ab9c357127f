#!/bin/bash
# Hidden verifier: runs the acceptance tests against the machine and writes the reward.
TESTS_DIR="${TESTS_DIR:-/tests}"
LOGS_DIR="${VERIFIER_LOGS_DIR:-/logs/verifier}"
mkdir -p "$LOGS_DIR"
cd "$TESTS_DIR" || { echo -1 > "$LOGS_DIR/reward.txt"; exit 1; }
export PYTHONDONTWRITEBYTECODE=1
python3 -m pytest -c "$TESTS_DIR/pytest.ini" --rootdir "$TESTS_DIR" -q "$TESTS_DIR" --junitxml="$LOGS_DIR/junit.xml"
rc=$?
case "$rc" in
  0) echo 1 > "$LOGS_DIR/reward.txt" ;;
  1) echo 0 > "$LOGS_DIR/reward.txt" ;;
  *) echo -1 > "$LOGS_DIR/reward.txt" ;;
esac
exit 0
