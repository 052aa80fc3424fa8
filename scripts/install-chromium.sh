#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests (playwright-core drives it; browsers cannot be
# downloaded by npm here). Does nothing when it is already installed.
set -euo pipefail
if [ -x "${OMNI_CHROMIUM:-/usr/bin/chromium}" ]; then
  echo "chromium: already installed"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "chromium: installing Debian's package (a minute or two)"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
echo "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo installed)"
