"""What the server needs before its model loads: the ``serve`` extra installed, and its
listening socket bound, so that a missing package or a busy port fails at once."""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket

from nmtkit.errors import ConfigError, NmtkitError

log = logging.getLogger(__name__)

BACKLOG = 2048  # connections the kernel holds while the event loop is busy (uvicorn's default)


def check_installed() -> None:
    """Raise ConfigError naming the extra when FastAPI or uvicorn is missing."""
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"{exc.name or 'fastapi'} is needed for nmtkit serve",
            hint="pip install 'nmtkit[serve]'",
        ) from None


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` and listening (port 0: any free port).

    Raises:
        ConfigError: a port out of range or a host that does not resolve.
        NmtkitError: the address is in use, not on this machine, or needs privileges.
    """
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be between 0 and 65535, got {port}")
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = found[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart at once after a stop
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        hint = (
            "stop the other server or choose another --port"
            if exc.errno == errno.EADDRINUSE
            else None
        )
        raise NmtkitError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}", hint=hint
        ) from None
    if not _is_loopback(host):
        log.warning(
            "listening on %s: anyone who can reach this machine can use the server, without "
            "authentication",
            host,
        )
    return sock


def socket_url(sock: socket.socket) -> str:
    """``http://host:port`` of a listening socket (IPv6 hosts in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
