"""Test harnesses shipped with the package, so tests, benchmarks and extensions drive the real adapters
offline: a local Slack (`slack_standin`) with signed requests into the app (`slack_requests`), and
local LLM serving engines (`fake_engines`)."""
