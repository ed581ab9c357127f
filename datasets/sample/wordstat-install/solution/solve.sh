#!/bin/bash
# Reference solution: the package into the system python's site directory, a launcher on PATH.
set -euo pipefail
SRC=/opt/src/wordstat-1.2.0
SITE=$(python3 -c 'import site; print(site.getsitepackages()[0])')
mkdir -p "$SITE"
rm -rf "$SITE/wordstat" && cp -r "$SRC/wordstat" "$SITE/wordstat"
cat > /usr/local/bin/wordstat <<'LAUNCHER'
#!/usr/bin/python3
from wordstat.cli import main

raise SystemExit(main())
LAUNCHER
chmod 755 /usr/local/bin/wordstat
wordstat --version
