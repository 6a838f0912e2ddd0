"""Watching a run: the event log, the live display, reports, charts and OpenTelemetry."""
