#!/bin/bash
set -euo pipefail
cd "${APP_DIR:-/app}"
git apply --whitespace=nowarn "${SOLUTION_DIR:-/solution}/solution.patch"
