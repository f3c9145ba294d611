"""Every network wait has a deadline for the whole exchange, not only for each read: a server
on 127.0.0.1 that trickles its answer a byte at a time (each read short, the answer endless)
is cut, and the error says so in our words."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from pathlib import Path

import pytest
import requests

from generator.config import EmailSettings
from generator.deliver.mail import EmailError, send
from generator.fetch.arxiv_source import HttpSession
from generator.pipeline.services import site_files
from generator.store.cache import Cache


@contextmanager
def trickling(answer: bytes, *, read_first: bool) -> Iterator[int]:
    """A server on 127.0.0.1 that sends `answer` one byte at a time, a byte every 50 ms (a
    read timeout never trips), until the client goes away; yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            if read_first:
                conn.recv(65536)
            for byte in answer:
                if stop.wait(0.05):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return  # the client cut it: what the deadline is for

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def test_arxiv_requests_have_a_deadline_for_the_whole_answer() -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"<" * 5000
    with trickling(answer, read_first=True) as port, HttpSession(5.0, deadline_s=0.4) as session:
        with pytest.raises(requests.Timeout, match=r"did not answer within 0\.4 s in all"):
            session.get(f"http://127.0.0.1:{port}/api/query")


def test_smtp_has_a_deadline_for_each_whole_exchange(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("generator.deliver.mail.EXCHANGE_READS", 0.4)  # 0.4 s of a 1 s read
    greeting = b"".join(b"220-still greeting you\r\n" for _ in range(400)) + b"220 ok\r\n"
    with trickling(greeting, read_first=False) as port:
        settings = EmailSettings(to=("reader@example.org",), sender="digest@example.org",
                                 smtp_host="127.0.0.1", smtp_port=port, security="none",
                                 timeout_seconds=1.0)
        with pytest.raises(EmailError, match=r"no whole answer within 0\.4 s"):
            send(lambda address: EmailMessage(), settings, Cache(tmp_path / "cache"),
                 "2026-12-02", {})


def test_the_deployed_sites_files_have_a_deadline_for_the_whole_answer(
        caplog: pytest.LogCaptureFixture) -> None:
    """`digest workflow restore --from-site` reads the site through `site_files`: a file
    trickled past the deadline is not read (None, said in the log), never waited on."""
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + b"{" * 5000
    with trickling(answer, read_first=True) as port, site_files(deadline_s=0.4) as get:
        assert get(f"http://127.0.0.1:{port}/sitemap.xml") is None
    assert "not read whole within 0.4 s" in caplog.text
