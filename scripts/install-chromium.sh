#!/usr/bin/env bash
# The browser tests run in Debian's Chromium (no browser download). Installs it when missing.
set -euo pipefail
chromium=${AIR_CHROMIUM:-/usr/bin/chromium}
if [ -x "$chromium" ]; then
  exit 0
fi
echo "==> Installing Chromium for the browser tests (apt)"
if [ "$(id -u)" = 0 ]; then
  sudo=""
elif command -v sudo >/dev/null; then
  sudo="sudo"
else
  echo "Chromium is missing at $chromium and this user cannot install it: run" >&2
  echo "  apt-get install -y chromium fonts-liberation   (as root), or set AIR_CHROMIUM." >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
[ -x "$chromium" ] || { echo "Chromium installed but not found at $chromium" >&2; exit 1; }
