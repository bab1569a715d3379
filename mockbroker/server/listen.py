"""Listening sockets for literal IP addresses, bound here instead of by the event loop.

Given a host string, the event loop resolves it with ``host.encode("idna")``, which imports the idna
codec (with stringprep and unicodedata: 2-3 ms of the broker's start).  A literal IPv4 or IPv6
address needs no resolving: the socket is made and bound here, as the loop would make it
(SO_REUSEADDR, IPV6_V6ONLY for IPv6), and handed to the loop.  Host names and the empty wildcard
(every interface, possibly several sockets) are still left to the loop.
"""

from __future__ import annotations

import socket


def literal_family(host: str) -> int | None:
    """AF_INET or AF_INET6 when ``host`` is a literal address of that family, else None."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return family
    return None


def bound_socket(host: str, port: int, receive_buffer: int) -> socket.socket | None:
    """A socket bound to (``host``, ``port``), not yet listening, when ``host`` is a literal address;
    None otherwise.  ``receive_buffer`` > 0 sets SO_RCVBUF before binding (accepted sockets inherit it).
    A failure to bind raises OSError worded as the event loop words it."""
    family = literal_family(host)
    if family is None:
        return None
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        if receive_buffer > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = (exc.strerror or str(exc)).lower()
        raise OSError(exc.errno, f"error while attempting to bind on address {(host, port)!r}: {reason}") from None
    return sock
