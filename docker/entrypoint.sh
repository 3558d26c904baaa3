#!/bin/sh
# Container start: migrate DATABASE_URL (Alembic, idempotent), then run the bot.
# Socket Mode when SLACK_APP_TOKEN is set; otherwise HTTP mode on $PORT (default 3000).
# Extra arguments are passed to `triage-bot serve`.
set -eu
triage-bot db upgrade
if [ -n "${SLACK_APP_TOKEN:-}" ]; then
  exec triage-bot serve --no-migrate "$@"
fi
exec triage-bot serve --no-migrate --http --port "${PORT:-3000}" "$@"
