"""What the workflow harness (tests/workflow_harness.py) puts on a runner: the tools it stands
in for on PATH (`digest` handing its command to the test process, `gh` over the harness's runs
and artifacts, `pip` with the tool installed already, `date` with the runner's moved clock) and
the deployed Pages site, a folder served on 127.0.0.1."""

from __future__ import annotations

import shutil
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# The commands on the runner's PATH that stand in for tools the runner has.
DIGEST = """#!{python} -S
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect({sock!r})
s.sendall(json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ),
                       "cwd": os.getcwd()}}).encode() + b"\\n")
data = b""
while not data.endswith(b"\\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
got = json.loads(data)
sys.stdout.write(got["stdout"])
sys.stderr.write(got["stderr"])
sys.exit(got["code"])
"""
GH = """#!{python} -S
import json, shutil, sys, fnmatch, os
runs = json.load(open({runs!r}))
args = sys.argv[1:]
if args[:2] == ["run", "list"]:
    status = args[args.index("--status") + 1] if "--status" in args else ""
    limit = int(args[args.index("--limit") + 1]) if "--limit" in args else 20
    for run in [r for r in reversed(runs) if not status or r["conclusion"] == status][:limit]:
        print(run["id"])
elif args[:2] == ["run", "download"]:
    run = next(r for r in runs if str(r["id"]) == args[2])
    pattern = args[args.index("--pattern") + 1]
    where = args[args.index("--dir") + 1]
    names = [n for n in run["artifacts"] if fnmatch.fnmatch(n, pattern)]
    if not names:
        sys.exit("no valid artifacts found to download")
    for name in names:
        shutil.copytree(run["artifacts"][name], os.path.join(where, name))
else:
    sys.exit("gh (test stand-in): not emulated: " + " ".join(args))
"""
PIP = """#!/bin/sh
# setup-python's Python has research-digest already: check what would be installed.
[ "$1 $2" = "install -r" ] && grep -q '^research-digest' "$3" && grep -q '^-c constraints.txt' "$3"
"""
DATE = """#!/bin/sh
if [ "$1 $2" = "-u +%F" ]; then echo "$HARNESS_TODAY"; else exec /bin/date "$@"; fi
"""


class Pages:
    """The deployed site: a folder served on 127.0.0.1, replaced at each deployment."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        handler = partial(_QuietHandler, directory=str(root))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def deploy(self, site: Path) -> None:
        shutil.rmtree(self.root)
        shutil.copytree(site, self.root)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


