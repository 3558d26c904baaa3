"""One fake per engine kind, each its own module beside the probe of the same name: a module
defines `FAKE`, a subclass of triage_bot.testing.fake_engines.FakeEngine that answers that
engine's endpoints. An installed package adds one through the `triage_bot.fakes` entry points
(triage_bot/plugins.py)."""
