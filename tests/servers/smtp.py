"""A real SMTP server for the tests (aiosmtpd on 127.0.0.1): plain, or STARTTLS with AUTH, with
an inbox that can refuse addresses and a hook that runs while a message is being accepted."""

from __future__ import annotations

import datetime
import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any


class Inbox:
    """An aiosmtpd handler that keeps what it accepts and refuses the addresses in `refuse`."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], bytes]] = []
        self.refuse: set[str] = set()
        # Runs (in the server's thread) while a message is being accepted, before the reply.
        self.on_data: Callable[[list[str]], None] | None = None

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str,
                          rcpt_options: Any) -> str:
        if address in self.refuse:
            return "550 5.1.1 mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.on_data is not None:
            self.on_data(list(envelope.rcpt_tos))
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 Message accepted for delivery"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (and its key)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class Smtp:
    """aiosmtpd on 127.0.0.1: plain, or STARTTLS with AUTH (login "digest", password "s3cret!")."""

    def __init__(self, folder: Path, *, tls: bool, handler: Any = None) -> None:
        import ssl

        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult

        self.inbox = handler or Inbox()
        self.port = free_port()
        self.logins: list[tuple[bytes, bytes]] = []
        kwargs: dict[str, Any] = {}
        self.cert: Path | None = None
        if tls:
            self.cert, key = certificate(folder)
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(self.cert, key)

            def authenticate(server: Any, session: Any, envelope: Any, mechanism: str,
                             data: Any) -> AuthResult:
                self.logins.append((data.login, data.password))
                ok = (data.login, data.password) == (b"digest", b"s3cret!")
                # handled=False: aiosmtpd answers a failure with 535 (True: it says nothing).
                return AuthResult(success=ok, handled=ok)

            kwargs = {"tls_context": context, "require_starttls": True,
                      "authenticator": authenticate, "auth_required": True}
        self.controller = Controller(self.inbox, hostname="127.0.0.1", port=self.port, **kwargs)

    def __enter__(self) -> Smtp:
        self.controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()


