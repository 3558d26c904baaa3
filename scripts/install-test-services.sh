#!/usr/bin/env bash
# The real servers the integration tests talk to, from Debian's packages: Alertmanager (the webhook
# receiver's test fires alerts through it). Without them those tests skip; CI installs them here.
set -euo pipefail
if command -v prometheus-alertmanager >/dev/null 2>&1 || command -v alertmanager >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: prometheus-alertmanager is not installed; its test will skip (apt-get install prometheus-alertmanager)" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends prometheus-alertmanager >/dev/null 2>&1 \
  || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends prometheus-alertmanager >/dev/null 2>&1; } \
  || echo "note: could not install prometheus-alertmanager; its test will skip" >&2
