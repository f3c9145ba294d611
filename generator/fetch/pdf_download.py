"""PDF downloads from arXiv: one at a time, spaced by the shared rate limiter, with a size cap
and a deadline for the whole transfer, so a huge or trickling PDF costs the paper its full text
(said on its page), never the edition."""

from __future__ import annotations

from urllib.parse import urlsplit

import requests
import urllib3

from ..deadline import DeadlineAdapter, Watchdog
from ..errors import PdfTextError
from .arxiv_source import RateLimiter, connection_reason


class PdfDownloader:
    """Downloads one PDF at a time through the shared rate limiter, with a size cap."""

    def __init__(self, session: requests.Session, limiter: RateLimiter, max_bytes: int,
                 deadline_s: float = 120.0) -> None:
        self._session = session
        self._limiter = limiter
        self.max_bytes = max_bytes
        self.deadline_s = deadline_s  # for the whole download: a trickle never trips a read timeout
        self._watchdog = Watchdog()
        self._mounted: set[str] = set()

    def download(self, url: str) -> bytes:
        """The PDF's bytes; PdfTextError (with a reason for the reader) on any failure."""
        self._limiter.wait()
        self._mount(url)
        chunks: list[bytes] = []
        size = 0
        with self._watchdog.exchange(self.deadline_s) as deadline:
            try:
                with self._session.get(url, stream=True) as response:
                    if response.status_code != 200:
                        raise PdfTextError(f"the PDF download failed: HTTP {response.status_code} from {url}")
                    declared = response.headers.get("Content-Length")
                    if declared and declared.isdigit() and int(declared) > self.max_bytes:
                        raise PdfTextError(self._too_big(int(declared)))
                    # read1 returns whatever one read brings, so the deadline is seen between
                    # reads too, where the watch could not reach the socket.
                    while chunk := response.raw.read1(1 << 16, decode_content=True):
                        size += len(chunk)
                        if size > self.max_bytes:
                            raise PdfTextError(self._too_big(size))
                        if deadline.expired():
                            raise self._overdue(url, size)
                        chunks.append(chunk)
            except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as err:
                if deadline.expired():
                    raise self._overdue(url, size) from err
                raise PdfTextError(f"the PDF download failed: {connection_reason(err)} ({url})") from err
        data = b"".join(chunks)
        if b"%PDF-" not in data[:1024]:
            kind = "an HTML page" if b"<html" in data[:2048].lower() else "something else"
            raise PdfTextError(f"the server sent {kind} instead of a PDF ({url})")
        return data

    def _mount(self, url: str) -> None:
        """The deadline's adapter on the PDFs' origin, so a watch can cut its connections."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._mounted:
            self._session.mount(origin, DeadlineAdapter())
            self._mounted.add(origin)

    def _overdue(self, url: str, size: int) -> PdfTextError:
        return PdfTextError(f"the PDF download took longer than {self.deadline_s:g} s "
                            f"([arxiv] pdf_deadline_seconds) with {size / 1e6:.2f} MB received "
                            f"({url})")

    def _too_big(self, size: int) -> str:
        return (f"the PDF is larger than the {self.max_bytes / 1e6:g} MB cap "
                f"([arxiv] max_pdf_mb): {size / 1e6:.1f} MB or more")
