#!/usr/bin/env bash
# Run the suite N times in a row with both cores busy, then the Slack message tests under a faked
# clock: the checks behind "the suite passes every time" (issue 8). Each run is the suite as `make test`
# runs it (every core, one worker per file). Prints one line per run.
#   scripts/check-determinism.sh [runs]      (default 5)
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
if ! command -v faketime >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then apt-get install -y -qq faketime >/dev/null; fi
fi
busy=()
for _ in $(seq "$(nproc)"); do (while :; do :; done) & busy+=($!); done
trap 'kill "${busy[@]}" 2>/dev/null' EXIT
status=0
for i in $(seq "$runs"); do
  start=$(date +%s)
  if .venv/bin/pytest -q -n auto --dist loadfile -p no:cacheprovider >"/tmp/determinism.$i.log" 2>&1; then result=green; else result=RED; status=1; fi
  echo "run $i under load: $result in $(( $(date +%s) - start )) s ($(tail -n1 "/tmp/determinism.$i.log"))"
done
kill "${busy[@]}" 2>/dev/null
if command -v faketime >/dev/null 2>&1; then
  # only this file: libfaketime also shifts thread-wait deadlines, which stalls scheduler/outbox tests
  if faketime '2025-06-10 00:00:00' .venv/bin/pytest -q -p no:cacheprovider tests/slack/test_messages.py >/tmp/determinism.faketime.log 2>&1
  then echo "faked clock (2025-06-10): green"; else echo "faked clock (2025-06-10): RED"; status=1; fi
else
  echo "faketime is not installed: faked-clock check skipped"
fi
exit $status
