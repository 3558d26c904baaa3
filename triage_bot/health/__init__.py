"""Engine health checks: read each engine in engines.yaml, judge it, open and resolve incidents.

    config.py        engines.yaml, validated (names, kinds, URLs, thresholds, maintenance windows)
    probes/<kind>.py one file per engine kind: its endpoints and metric names -> an Observation
    poller.py        one async pass: a deadline per engine, bounded concurrency, capped bodies, GET only
    rules.py         which bad states one check shows (down, stuck, KV saturated, ...)
    states.py        hysteresis (N bad to open, M good to resolve), flapping, maintenance
    monitor.py       the scheduled job: poll, judge, record in the history, alert
    alerts.py        the Notifier interface and its Slack implementation (slack_sdk imported lazily)

The scheduler that runs the monitor is `triage_bot.scheduler`; the fakes the tests use are
`triage_bot.testing.fake_engines`.
"""
