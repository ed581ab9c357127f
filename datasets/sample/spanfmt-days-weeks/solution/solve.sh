#!/bin/bash
# Reference solution: apply the patch and COMMIT it (only committed work is graded).
set -euo pipefail
cd "${APP_DIR:-/app}"
git -c safe.directory='*' apply --whitespace=nowarn "${SOLUTION_DIR:-/solution}/solution.patch"
git -c safe.directory='*' add -A
git -c safe.directory='*' -c user.name=swe-residual-oracle -c user.email=oracle@swe-residual.localhost \
  -c commit.gpgsign=false commit -q -m "Add day and week units, strict unit order, max_units"
