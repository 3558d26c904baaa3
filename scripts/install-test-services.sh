#!/usr/bin/env bash
# The real servers the integration tests talk to, from Debian's packages: Alertmanager (the webhook
# receiver's test fires alerts through it) and Prometheus (it scrapes the bot's /metrics). Without
# them those tests skip; CI installs them here.
set -euo pipefail
missing=()
command -v prometheus-alertmanager >/dev/null 2>&1 || command -v alertmanager >/dev/null 2>&1 \
  || missing+=(prometheus-alertmanager)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
[ "${#missing[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: ${missing[*]} not installed; their tests will skip (apt-get install ${missing[*]})" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
  || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1; } \
  || echo "note: could not install ${missing[*]}; their tests will skip" >&2
