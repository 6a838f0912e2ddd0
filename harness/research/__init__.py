"""Research loops: the archive of a run's sources and their text, the web tools that fill it,
citations and the claim ledger, the research gates, and what a resumed run carries over."""
