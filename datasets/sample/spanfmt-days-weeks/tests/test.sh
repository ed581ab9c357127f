#!/bin/bash
# Hidden verifier (DeepSWE's contract): only COMMITTED work is graded. The collect step wrote
# `git diff --binary BASE HEAD` of the agent's repository to $ARTIFACTS_DIR/model.patch; here,
# in a fresh container of the clean image (the base commit), it is applied, then the hidden
# tests (test.patch), then the tests run and grade.py writes reward.json from the JUnit report.
TESTS_DIR="${TESTS_DIR:-/tests}"
LOGS_DIR="${VERIFIER_LOGS_DIR:-/logs/verifier}"
APP_DIR="${APP_DIR:-/app}"
ARTIFACTS_DIR="${ARTIFACTS_DIR:-/logs/artifacts}"
BASE=266bbd97eb22d74b93dcff6274d098a03aca5673
mkdir -p "$LOGS_DIR"
rm -f "$LOGS_DIR/reward.json" "$LOGS_DIR/reward.txt" "$LOGS_DIR/junit.xml"
crash() { echo "verifier error: $1" >&2; echo -1 > "$LOGS_DIR/reward.txt"; exit 0; }
grade() { python3 -I -B "$TESTS_DIR/grade.py" "$TESTS_DIR/config.json" "$1" "$LOGS_DIR/reward.json" \
  || crash "grade.py failed"; exit 0; }
git_() { git -c safe.directory='*' -c core.hooksPath=/dev/null "$@"; }
cd "$APP_DIR" || crash "no repository at $APP_DIR"
MODEL="$ARTIFACTS_DIR/model.patch"
if [ -f "$MODEL" ]; then
  if [ -s "$MODEL" ] && ! git_ apply --binary --whitespace=nowarn "$MODEL"; then
    echo "the committed work (model.patch) does not apply to the base commit" >&2
    grade -   # the agent's work: reward 0, every test counted as failed
  fi
else
  # No artifact: a runner that collects nothing and verifies a copy of the agent's final
  # repository. The same rule holds: what is not committed is discarded.
  git_ reset -q --hard HEAD && git_ clean -q -fdx || crash "cannot discard uncommitted work"
fi
# The hidden tests replace whatever the agent left at their paths, then apply.
for path in $(git_ apply --numstat "$TESTS_DIR/test.patch" | cut -f3); do
  git_ checkout -q "$BASE" -- "$path" 2>/dev/null || rm -rf -- "$path"
done
git_ apply --binary "$TESTS_DIR/test.patch" || crash "test.patch does not apply"
# The repository is the agent's: nothing in it may stand in for the test runner. Isolated
# mode (-I, no PYTHONPATH, no user site-packages), no plugin autoload, our own config file,
# and no conftest.py of the repository's.
unset PYTHONPATH
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
python3 -I -B -m pytest -c "$TESTS_DIR/pytest.ini" --rootdir "$APP_DIR" -o pythonpath="$APP_DIR" --noconftest \
  -q tests/test_spanfmt.py tests/test_days_weeks.py --junitxml="$LOGS_DIR/junit.xml"
[ -f "$LOGS_DIR/junit.xml" ] || crash "pytest wrote no JUnit report"
grade "$LOGS_DIR/junit.xml"
