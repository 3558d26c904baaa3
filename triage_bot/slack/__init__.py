"""The Slack adapter: turns the core's answers into a Slack app. The core never imports this package.

Layout (one module per job, one per Slack surface):
- `config` (environment) · `client` (the one Web API client and its retry handlers)
- `app` (builds the bolt App and what the listeners share) · `http` (HTTP mode: waitress, /healthz)
  · `socket_mode` (Socket Mode)
- jobs: `triage` (paste → answer → history) · `commands` (`/triage` subcommands) · `files`
  (attached logs) · `delivery` (send, or keep in the outbox) · `store` (outbox and shared answers)
  · `integrations` (engine health, digest)
- rendering: `blocks` (Block Kit within Slack's limits) · `modals` · `text` (wire text, escaping)
- `listeners/`: `messages`, `mentions`, `slash_command`, `shortcuts`, `actions`, `views`, `home`

The local Slack stand-in used by the tests ships in `triage_bot.testing.slack_standin`.
"""
