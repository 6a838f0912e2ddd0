"""External coding agents as a round's session: each a runner meeting the session protocol,
run inside the harness's sandbox and talking to models only through the harness's gateway."""
