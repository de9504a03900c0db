#!/usr/bin/env bash
# Installs the Debian programs the test suite drives, when any is missing (`npm test` runs it first,
# as `pretest`, and so does .ci/run): chromium (the docs page's browser test), sqlite3 (an outside
# reader of a live database), nginx-light (nginx, the balancer in front), pgbouncer (a pooler in
# front of PostgreSQL), prometheus (promtool checks the alert rules), redis-server (the shared store
# of the fleet-wide rate limits), openssl (the certificates of its TLS port), systemd
# (systemd-analyze checks the unit file; nothing runs it). A no-op when all are present.
# Installs with apt-get as root, or through `sudo -n` otherwise; if neither can, fails and prints the
# command to run. INSTALL_TEST_TOOLS_DRY_RUN=1 prints what it would run instead of running it.
set -euo pipefail
# command:package
required=(chromium:chromium sqlite3:sqlite3 nginx:nginx-light pgbouncer:pgbouncer promtool:prometheus redis-server:redis-server openssl:openssl systemd-analyze:systemd)
missing=()
for entry in "${required[@]}"; do
  PATH="$PATH:/usr/sbin" command -v "${entry%%:*}" >/dev/null || missing+=("${entry#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

install="apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  run=(sh -c "$install")
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  run=(sudo -n sh -c "$install")
else
  echo "The tests need Debian's ${missing[*]}, which are not installed, and this user can neither" >&2
  echo "install them (not root) nor use sudo without a password. Install them, then run again:" >&2
  echo "  sudo sh -c '$install'" >&2
  exit 1
fi
echo "== installing Debian's ${missing[*]} for the tests"
if [ "${INSTALL_TEST_TOOLS_DRY_RUN:-}" = 1 ]; then
  echo "would run: ${run[*]}"
  exit 0
fi
"${run[@]}" >/dev/null
