#!/bin/bash
# Reference solution: a SHA-256 manifest, and a detached http.server on 127.0.0.1:8000.
set -euo pipefail
cd /srv/artifacts
python3 - <<'PY'
import hashlib, json, os
names = sorted(n for n in os.listdir(".") if n != "manifest.json" and os.path.isfile(n))
manifest = {n: hashlib.sha256(open(n, "rb").read()).hexdigest() for n in names}
with open("manifest.json", "w") as handle:
    json.dump(manifest, handle, indent=2, sort_keys=True)
PY
up() { python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8000/", timeout=2)' 2>/dev/null; }
if ! up; then
  setsid nohup python3 -m http.server 8000 --bind 127.0.0.1 --directory /srv/artifacts \
    > /var/log/artifact-server.log 2>&1 < /dev/null &
  for _ in $(seq 50); do up && break; sleep 0.1; done
fi
up
