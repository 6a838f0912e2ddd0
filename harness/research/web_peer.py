"""Which machines ``fetch_url`` may reach: a page is data, so neither it nor the agent decides.

``allow_domains = ["*"]`` allows any host on the internet, not this machine or its private
network: an address that is not global (loopback, a private or link-local network, ``0.0.0.0``,
carrier-grade NAT, multicast, reserved; an IPv4 address inside IPv6 as the address it holds) is
fetched only from a host named on the list (``"127.0.0.1"``, ``"localhost"``,
``"intranet.example"``). The host's addresses are looked up before it is connected to
(:func:`refuse_resolved`: no connection is made, so whether a port of this machine is open is
not told either), and the address the connection reached is checked again, read from its socket
before a byte of the request is sent (:func:`peer_guard`: a name that resolves elsewhere the
second time is held too). A host name that resolves to ``127.0.0.1``, an address spelled in
decimal (``http://2130706433/``) and a redirect to any of them are held by the same checks.
Through a proxy (``HTTPS_PROXY``) the proxy decides.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

from harness.core.errors import ToolError

Trace = Callable[[str, dict[str, Any]], None]
"""httpcore's ``trace`` extension: called with each event of a request and its details."""


def is_global(address: str) -> bool:
    """Whether ``address`` (an IP as a socket reports it) is on the internet: not this machine
    or its private network."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def refuse_resolved(url: str, host: str, port: int) -> None:
    """Refuse ``url`` when ``host`` resolves to an address that is not global (for a host the
    allow-list does not name); a name that does not resolve is left to the connection."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return
    for *_, address in found:
        if not is_global(str(address[0])):
            raise ToolError(_refusal(url, host, str(address[0])))


def peer_guard(url: str, host: str, named: bool, then: Trace) -> Trace:
    """A trace for the request of ``url`` to ``host`` that refuses its connection when it
    reached an address that is not global and ``named`` is false (the allow-list names the
    host only by ``"*"``); every event is passed on to ``then``. A connection to another host
    than ``host`` is a proxy's, not checked."""
    connecting: list[str] = []

    def trace(event: str, info: dict[str, Any]) -> None:
        if event == "connection.connect_tcp.started":
            connecting[:] = [str(info.get("host", ""))]
        elif event == "connection.connect_tcp.complete" and not named and connecting == [host]:
            stream = info["return_value"]
            address = str(stream.get_extra_info("socket").getpeername()[0])
            if not is_global(address):
                stream.close()
                raise ToolError(_refusal(url, host, address))
        then(event, info)

    return trace


def _refusal(url: str, host: str, address: str) -> str:
    return (
        f"{url}: {host} is at {address}, an address of this machine or its private network; "
        'allow_domains reaches it only by naming it, not by "*"'
    )
