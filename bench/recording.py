"""The recording format of tests/fixtures/servers/ (its README, "File format"), and one
exchange sent and recorded: the request as sent (headers in order, body text), the status,
the headers in wire order, and the body whole, or for a stream every read as it arrived
(after chunked decoding) with its time and a summary of its events. Authorization headers are
never written. Used by bench/record_server.py and bench/recording_proxy.py."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import http.client
import json
import sys
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate"}
USER_AGENT = f"record_server.py (http.client, Python {sys.version.split()[0]})"


def text_of(data: bytes) -> dict[str, str]:
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


def _stream_summary(reads: list[dict[str, Any]]) -> dict[str, Any]:
    """What the events of a stream say (the shared README's `stream_summary`)."""
    events: list[tuple[float, str]] = []
    buffer, t = "", 0.0
    for read in reads:
        buffer += read.get("text", "")
        t = read["t"]
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            events.append((t, block))
    if buffer.strip():
        events.append((t, buffer))
    summary: dict[str, Any] = {"n_reads": len(reads), "n_events": len(events),
                               "finish_reasons": [], "usage": [], "timings": [],
                               "error_events": [], "comments": [], "other_events": []}
    datas: list[tuple[float, str]] = []
    for when, block in events:
        for line in block.splitlines():
            if line.startswith(":"):
                summary["comments"].append({"t": when, "line": line})
            elif line.startswith("data: ") or line.startswith("data:"):
                datas.append((when, line.partition(":")[2].strip()))
            elif line.startswith("event:") and "error" in line:
                summary["error_events"].append({"t": when, "line": line})
            elif line.strip():
                summary["other_events"].append({"t": when, "line": line})
    for when, data in datas:
        if data == "[DONE]":
            continue
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            summary["other_events"].append({"t": when, "data": data[:400]})
            continue
        if not isinstance(chunk, dict):
            continue
        if "error" in chunk:
            summary["error_events"].append({"t": when, "data": data})
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("finish_reason"):
                summary["finish_reasons"].append({"t": when,
                                                  "finish_reason": choice["finish_reason"]})
        if chunk.get("usage"):
            summary["usage"].append({"t": when, "usage": chunk["usage"]})
        if chunk.get("timings"):
            summary["timings"].append({"t": when, "timings": chunk["timings"]})
    last = datas[-1][1] if datas else ""
    summary["end"] = ("done" if last == "[DONE]" else "error_event"
                      if summary["error_events"] and datas and "error" in last else "close")
    summary["last_events"] = [{"t": w, "data": d} for w, d in datas[-2:]]
    return summary


def response_record(response: http.client.HTTPResponse, started: float,
                    t_headers: float, pieces: Iterator[tuple[float, bytes]]) -> dict[str, Any]:
    """The `response` part of a record: the body whole, or each read of a stream."""
    headers = [[k, v] for k, v in response.getheaders()]
    record: dict[str, Any] = {
        "status": response.status, "reason": response.reason,
        "http_version": "HTTP/1.1" if response.version == 11 else "HTTP/1.0",
        "headers": headers, "t_headers": round(t_headers - started, 4)}
    streamed = "text/event-stream" in (response.getheader("content-type") or "")
    reads: list[dict[str, Any]] = [{"t": round(when - started, 4), **text_of(data)}
                                   for when, data in pieces]
    body = b"".join(base64.b64decode(r["base64"]) if "base64" in r else r["text"].encode()
                    for r in reads)
    record["t_end"] = round(time.perf_counter() - started, 4)
    if streamed:
        record["body"] = {"note": "stream: the exact body is the concatenation of reads[*] "
                                  "(text or base64) in order",
                          "length": len(body), "sha256": hashlib.sha256(body).hexdigest()}
        record["reads"] = reads
        summary = _stream_summary(reads)
        record["stream_end"] = summary["end"]
        record["stream_summary"] = summary
    else:
        record["body"] = text_of(body)
        try:
            record["json"] = json.loads(body)
        except ValueError:
            pass
    return record


def request_record(base_url: str, method: str, path: str, headers: list[tuple[str, str]],
                   body: bytes) -> dict[str, Any]:
    record: dict[str, Any] = {
        "method": method, "url": base_url.rstrip("/") + path, "path": path,
        "headers": [[k, v] for k, v in headers if k.lower() != "authorization"],
        "body": text_of(body)}
    if body and len(body) <= 4000:
        try:
            record["json"] = json.loads(body)
        except ValueError:
            pass
    return record


def reads(response: http.client.HTTPResponse) -> Iterator[tuple[float, bytes]]:
    """Each piece of the body as it arrives (one chunk, or what one recv gave)."""
    while True:
        try:
            data = response.read1(1 << 16)
        except http.client.IncompleteRead as err:  # the server closed mid-body
            if err.partial:
                yield time.perf_counter(), err.partial
            return
        if not data:
            return
        yield time.perf_counter(), data


def send(base_url: str, method: str, path: str, payload: Any = None,
         accept: str = "application/json", timeout: float = 120.0) -> dict[str, Any]:
    """One exchange, as a record (request, response), sent with http.client so that the
    headers are exactly those written down."""
    parts = urlsplit(base_url)
    host = parts.netloc
    body = b"" if payload is None else json.dumps(payload).encode()
    headers = [("Host", host), ("User-Agent", USER_AGENT), ("Accept", accept),
               ("Connection", "close")]
    if payload is not None:
        headers += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port,
                                            timeout=timeout)
    started, unix = time.perf_counter(), time.time()
    connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for key, value in headers:
        connection.putheader(key, value)
    connection.endheaders(body or None)
    response = connection.getresponse()
    t_headers = time.perf_counter()
    record = {"recorded_at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
              "base_url": base_url,
              "request": request_record(base_url, method, path, headers, body),
              "t_start_unix": unix,
              "response": response_record(response, started, t_headers, reads(response))}
    connection.close()
    return record


