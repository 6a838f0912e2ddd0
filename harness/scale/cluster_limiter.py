"""A rate limit every worker of a Ray cluster shares: the Ray pool's
:meth:`~harness.scale.ray_backend.RayPool.limiter`."""

from __future__ import annotations

import time
from typing import Any

from harness.models.rate_limit import RateLimiter


class ClusterLimiter:
    """A rate limit shared by every worker of the cluster: one Ray actor per model hands out turns.

    The actor only computes each call's wait; the caller sleeps, so the actor never blocks.
    """

    def __init__(self, ray: Any, model: str, per_minute: float) -> None:
        actor = ray.remote(num_cpus=0)(RateLimiter)  # it reports each wait, never sleeping
        self._actor = actor.options(
            name=f"harness-rate-{model}-{per_minute:g}", get_if_exists=True
        ).remote(per_minute, sleep=lambda seconds: None)

    def acquire(self) -> float:
        import ray  # on the worker: the handle travels, the module is imported there

        wait = float(ray.get(self._actor.acquire.remote()))
        if wait > 0:
            time.sleep(wait)
        return wait
