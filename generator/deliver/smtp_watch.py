"""SMTP under a deadline for each whole exchange, not only each read.

smtplib's `timeout` bounds each read of the socket: a server that trickles its replies (a
byte of "250-" every few seconds) keeps every read short and a send open for hours. The
login and each message are an exchange of their own under a `Watch` (generator/deadline.py),
which shuts the socket down when the exchange outlasts `EXCHANGE_READS` reads' worth of time.
The socket is handed to the watch as smtplib makes it (`_get_socket`, before the greeting is
read), and again after STARTTLS wraps it.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from typing import Any

from ..deadline import Watch

EXCHANGE_READS = 4  # an exchange may take this many read timeouts in all


class WatchedSMTP(smtplib.SMTP):
    """smtplib.SMTP whose socket the exchange's watch can shut down."""

    def __init__(self, watch: Watch, *args: Any, **kwargs: Any) -> None:
        self.watch = watch
        super().__init__(*args, **kwargs)

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        sock: socket.socket = super()._get_socket(  # type: ignore[misc]
            host, port, timeout)
        self.watch.attach(sock)
        return sock

    def starttls(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        reply = super().starttls(*args, **kwargs)
        self.watch.attach(self.sock)  # the wrapped socket: the plain one is detached
        return reply


class WatchedSMTPSSL(smtplib.SMTP_SSL):
    """smtplib.SMTP_SSL whose socket the exchange's watch can shut down."""

    def __init__(self, watch: Watch, *args: Any, **kwargs: Any) -> None:
        self.watch = watch
        super().__init__(*args, **kwargs)

    def _get_socket(self, host: str, port: int, timeout: float) -> ssl.SSLSocket:
        sock: ssl.SSLSocket = super()._get_socket(  # type: ignore[misc]
            host, port, timeout)
        self.watch.attach(sock)
        return sock


def watch_socket(smtp: smtplib.SMTP, watch: Watch) -> None:
    """Put an open session's socket under `watch` (a message's own exchange)."""
    watch.attach(smtp.sock)
