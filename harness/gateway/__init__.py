"""The model gateway: OpenAI- and Anthropic-compatible endpoints an external agent talks to,
answered by the run's metered model. litellm is imported only when a request needs its
translation.

The names here load on first use, so the relay (run inside a sandbox) imports nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.core.lazy import lazy_exports

_EXPORTS = {
    "Ending": "harness.gateway.gateway",
    "Gateway": "harness.gateway.gateway",
    "GatewayAddress": "harness.gateway.gateway",
    "ServerLimits": "harness.gateway.server",
}

__all__ = ["Ending", "Gateway", "GatewayAddress", "ServerLimits"]

if TYPE_CHECKING:
    from harness.gateway.gateway import Ending, Gateway, GatewayAddress
    from harness.gateway.server import ServerLimits


__getattr__ = lazy_exports(__name__, _EXPORTS)
