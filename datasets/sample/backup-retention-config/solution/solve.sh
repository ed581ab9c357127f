#!/bin/bash
# Reference solution: edit the three settings, create the private target directory.
set -euo pipefail
CONF=/etc/backupctl/backupctl.conf
sed -i -E \
  -e 's|^target *=.*|target = /srv/backups/data|' \
  -e 's|^retention_days *=.*|retention_days = 14|' \
  -e 's|^exclude *=.*|exclude = *.swp *.tmp|' "$CONF"
install -d -o root -g root -m 0700 /srv/backups/data
backupctl check
