"""A pass-through proxy that records, byte-exact, whatever a client sends through it to an
OpenAI-compatible server and what comes back (the format of bench/recording.py).

    python bench/recording_proxy.py --listen 18440 --upstream http://127.0.0.1:18430 \\
        --out /tmp/llama/e2e
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import itertools
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

try:
    from bench.recording import HOP_BY_HOP, reads, request_record, response_record
except ModuleNotFoundError:  # run as a script from the repository's root
    from recording import HOP_BY_HOP, reads, request_record, response_record  # type: ignore


class _Proxy(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    upstream: str
    out: Path
    counter: itertools.count[int]
    lock: threading.Lock


class _ProxyHandler(BaseHTTPRequestHandler):
    server: _Proxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.server.upstream)
        headers = [(k, v) for k, v in self.headers.items()
                   if k.lower() not in HOP_BY_HOP and k.lower() != "host"]
        headers = [("Host", parts.netloc), *headers, ("Connection", "close")]
        connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port,
                                                timeout=900)
        started, unix = time.perf_counter(), time.time()
        try:
            connection.putrequest(self.command, self.path, skip_host=True,
                                  skip_accept_encoding=True)
            for key, value in headers:
                connection.putheader(key, value)
            connection.endheaders(body or None)
            response = connection.getresponse()
        except OSError as err:
            self.send_error(502, f"upstream: {err}")
            return
        t_headers = time.perf_counter()
        chunked = (response.getheader("transfer-encoding") or "").lower() == "chunked"
        self.send_response_only(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def relayed() -> Iterator[tuple[float, bytes]]:
            for when, data in reads(response):
                try:
                    if chunked:
                        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    else:
                        self.wfile.write(data)
                    self.wfile.flush()
                except OSError:  # the client went away: keep recording what came
                    pass
                yield when, data
            if chunked:
                try:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    pass

        record: dict[str, Any] = {"recorded_at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
                  "base_url": self.server.upstream,
                  "request": request_record(self.server.upstream, self.command, self.path,
                                            headers, body),
                  "t_start_unix": unix,
                  "response": response_record(response, started, t_headers, relayed())}
        connection.close()
        with self.server.lock:
            number = next(self.server.counter)
        slug = re.sub(r"[^a-z0-9]+", "_", f"{self.command} {self.path}".lower()).strip("_")
        response_part = record["response"]
        end = "" if "stream_end" not in response_part else f"_{response_part['stream_end']}"
        stem = f"{number:04d}_{slug}__{response_part['status']}{end}"
        (self.server.out / f"{stem}.json").write_text(
            json.dumps({"name": stem, **record}, indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8")


def run_proxy(args: argparse.Namespace) -> None:
    server = _Proxy(("127.0.0.1", args.listen), _ProxyHandler)
    server.upstream = args.upstream.rstrip("/")
    server.out = Path(args.out)
    server.out.mkdir(parents=True, exist_ok=True)
    server.counter = itertools.count(1)
    server.lock = threading.Lock()
    print(f"recording proxy on http://127.0.0.1:{args.listen} -> {server.upstream}", flush=True)
    server.serve_forever()



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--out", required=True)
    run_proxy(parser.parse_args())


if __name__ == "__main__":
    main()
