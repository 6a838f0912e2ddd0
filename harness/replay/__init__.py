"""A recorded run played again with its recorded replies (:mod:`harness.replay.run`), and how a
live replay ended (:mod:`harness.replay.live`)."""
