"""Reusable checks for gates: content rules (``harness check content``) and the Markdown
helpers checks share; citation verification is :mod:`harness.research.citations`."""
