"""Where a run's result goes and what starts a run: the repository host's REST API, connectors
(push, pull request, issue comment, webhook message, artifact), waiting for CI, and triggers."""
