"""From a :class:`~harness.spec.LoopSpec` to a runnable loop: the build, the models it names, its
session, connectors and environment, the pinned configuration, and launching it recorded."""
