"""`digest mcp`: a Model Context Protocol server over the workspace's archive, built on the
official SDK's high-level server (`MCPServer`, FastMCP before SDK 2).

Four tools (search, paper, edition, ask), each with a typed input schema (its parameters) and a
typed, bounded answer (answers.py), and each edition's pages as Markdown resources. A failure
is a tool error in our words: a refused argument says what was expected, a `DigestError` its
own message, and anything else one line (its traceback goes to the server's log, never to the
agent).
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError

from .. import __version__
from ..config import Config
from ..errors import DigestError
from ..pipeline.services import Services
from ..store.userfile import UserFileError, read_user_file
from . import answers as a
from .asking import ask
from .inputs import MAX_LIMIT, AgentInputError, checked_edition
from .reader import PAGE_URI, ArchiveReader, PageFile

log = logging.getLogger(__name__)

T = TypeVar("T")
LOOPBACK_NAMES = ("localhost",)
MAX_PAGE_BYTES = 4 * 2**20  # an edition's page as a resource (pages are tens of KB)
INTERNAL = ("the digest could not answer this call (an internal error; `digest mcp` logged "
            "its details): try again, or report it")
INSTRUCTIONS = (
    "A research digest's archive: weekly editions of arXiv papers, each cited claim checked "
    "against a verbatim quote with a verdict. `search` finds papers and claims by words, "
    "`paper` tells one paper's story across editions, `edition` an edition's news, picks and "
    "changes, `ask` a checked answer from the archive (it needs the digest's LLM server). "
    + a.NOTICE)
ASK_TOOL = ("A question answered from the archive by the digest's LLM server, every sentence "
            "that cites a paper checked against a quote (as `digest ask`). ")
ASK_PUBLISHES = ("Nothing is kept unless `publish` is true; then the question and its answer "
                 "are kept in the archive, as `digest ask --publish` keeps them.")
ASK_NEVER_PUBLISHES = ("This server publishes nothing (it was not started with "
                       "`digest mcp --allow-publish`): with `publish` true the answer is still "
                       "given, and `not_published` says it was not kept.")
_PAGE_NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,80}\.md", re.ASCII)


class AgentToolError(ToolError):
    """A tool's refusal or failure, in our words (the SDK's own prefix is left off)."""


class DigestMCP(MCPServer):
    """The SDK's server, with every refused argument told in our words: which argument, what
    was expected (never the value sent, which is the agent's data)."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as err:
            cause = err.__cause__
            if isinstance(cause, AgentToolError):
                raise AgentToolError(str(cause)) from None
            if isinstance(cause, ValidationError):
                raise AgentToolError(argument_errors(name, cause)) from None
            raise


def argument_errors(tool: str, err: ValidationError) -> str:
    """A rejected call's arguments, each named with what it should have been."""
    said = {"missing": "is required", "int_parsing": "must be a whole number",
            "int_type": "must be a whole number", "int_from_float": "must be a whole number",
            "string_type": "must be text", "string_unicode": "must be UTF-8 text",
            "bool_type": "must be true or false", "bool_parsing": "must be true or false",
            "extra_forbidden": "is not an argument of this tool"}
    problems = []
    for item in err.errors():
        where = ".".join(str(part) for part in item["loc"]) or "the arguments"
        problems.append(f"`{where}` {said.get(item['type'], 'is not valid here')}")
    return f"{tool}: " + "; ".join(dict.fromkeys(problems))


def answered(call: Callable[[], T]) -> T:
    """The tool's answer, or a tool error in our words (never a traceback)."""
    try:
        return call()
    except DigestError as err:
        raise AgentToolError(str(err)) from err
    except Exception as err:  # the agent gets one line; the log gets the traceback
        log.exception("a tool call failed")
        raise AgentToolError(INTERNAL) from err


def make_server(config: Config, services: Callable[[], Services],
                index_path: Path | None = None, *, allow_publish: bool = False) -> MCPServer:
    """The server over `config`'s workspace; `services` builds the clients `ask` talks through
    (only when a question is asked: the other tools need no LLM server). `ask` publishes a
    question into the archive only with `allow_publish` (`digest mcp --allow-publish`): the
    person who starts the server decides, never a connected agent."""
    reader = ArchiveReader(config, index_path)
    server = DigestMCP("research-digest", title=config.digest.title, version=__version__,
                       instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    def search(
        query: Annotated[str, Field(description="words to find (read as words: quotes, "
                                                "operators and brackets are not syntax)")],
        since: Annotated[str | None, Field(description="only editions from this date "
                                                       "(YYYY-MM-DD)")] = None,
        until: Annotated[str | None, Field(description="only editions up to this date "
                                                       "(YYYY-MM-DD)")] = None,
        limit: Annotated[int | None, Field(description=f"papers at most (1 to {MAX_LIMIT}, "
                                                       "default 10)",
                                           json_schema_extra={"minimum": 1,
                                                              "maximum": MAX_LIMIT})] = None,
    ) -> a.SearchAnswer:
        """Papers and claims across editions, best first: each paper with the editions that
        covered it, its state, and its checked claims that share a word with the query (each
        with its verdict and quote)."""
        return answered(lambda: reader.search(query, since, until, limit))

    @server.tool(annotations=read_only)
    def paper(
        arxiv_id: Annotated[str, Field(description="an arXiv id, with or without its version "
                                                   "(2611.00101, 2611.00101v2)")],
    ) -> a.PaperAnswer:
        """One paper across the archive: its versions and the editions that covered it, its
        state (new, revised, follow-up, withdrawn; in the lab's library), its brief, every
        claim about it with quote and verdict, the pages that cite it, its BibTeX."""
        return answered(lambda: reader.paper(arxiv_id))

    @server.tool(annotations=read_only)
    def edition(
        name: Annotated[str, Field(description="\"latest\", or an edition's date "
                                               "(2026-12-07)")] = "latest",
    ) -> a.EditionAnswer:
        """An edition: its news line, the picks with the checked sentence behind each, what
        changed since the edition before (follow-ups, revisions, withdrawals), the evidence
        figure and its pages (as resources of this server)."""
        return answered(lambda: reader.edition(name))

    # Named `ask` on the wire; `ask_tool` here, beside the stage it calls.
    @server.tool(name="ask", description=ASK_TOOL + (ASK_PUBLISHES if allow_publish
                                                     else ASK_NEVER_PUBLISHES),
                 annotations=ToolAnnotations(read_only_hint=False, open_world_hint=False))
    def ask_tool(
        question: Annotated[str, Field(description="the question, in words")],
        since: Annotated[str | None, Field(description="only editions from this date "
                                                       "(YYYY-MM-DD)")] = None,
        until: Annotated[str | None, Field(description="only editions up to this date "
                                                       "(YYYY-MM-DD)")] = None,
        publish: Annotated[bool, Field(description="keep the question and its answer in the "
                                                   "archive, as `digest ask --publish`; only "
                                                   "where the server was started with "
                                                   "--allow-publish (the answer says so where "
                                                   "not)")] = False,
    ) -> a.AskAnswer:
        return answered(lambda: ask(config, services, question, since, until, publish,
                                    may_publish=allow_publish))

    for record in _records_or_none(reader):
        for page in reader.pages(record):
            server.add_resource(FunctionResource.from_function(
                fn=_page_reader(page, reader.docs_dir), uri=page.uri, name=f"{page.edition}/{page.stem}",
                title=f"{page.stem} · edition {page.edition}", mime_type="text/markdown"))

    @server.resource(PAGE_URI, mime_type="text/markdown",
                     description="an edition's page as Markdown (its overview: index.md)")
    def edition_page(edition: str, page: str) -> str:
        return read_page(reader, edition, page)

    return server


def _records_or_none(reader: ArchiveReader) -> tuple[Any, ...]:
    """The records to list as resources; none where the archive cannot be read now (each tool
    says why when called)."""
    try:
        return reader.records()
    except DigestError as err:
        log.warning("no page is listed as a resource: %s", err)
        return ()


def _page_reader(page: PageFile, root: Path) -> Callable[[], str]:
    def read() -> str:
        return _text(page.path, page.uri, root)
    return read


def read_page(reader: ArchiveReader, edition: str, page: str) -> str:
    """A page of an edition by name: only a plain .md file of the edition's own folder."""
    try:
        name = checked_edition(edition)
    except AgentInputError as err:
        raise ResourceError(str(err)) from None
    if not _PAGE_NAME_RE.fullmatch(page) or name == "latest":
        raise ResourceError(f"there is no page {page[:60]!r} of edition {name[:40]!r}: "
                            "read the pages `edition` lists")
    uri = PAGE_URI.format(edition=name, page=page)
    found = {p.uri: p for r in reader.records() if r.edition == name for p in reader.pages(r)}
    if uri not in found:
        raise ResourceError(f"there is no page {page} of edition {name}: read the pages "
                            "`edition` lists")
    return _text(found[uri].path, uri, reader.docs_dir)


def _text(path: Path, uri: str, root: Path) -> str:
    """A page's text, read as every file from the workspace is (store/userfile.py): a regular
    file checked on its open descriptor (what was listed may have been swapped since for a
    FIFO or a link out of the workspace), and at most MAX_PAGE_BYTES of it."""
    try:
        data = read_user_file(path, MAX_PAGE_BYTES, root=root, shown=uri)
    except FileNotFoundError:
        raise ResourceError(f"{uri} cannot be read now (it is gone: a build may be writing "
                            "the edition; list the resources again)") from None
    except UserFileError as err:
        raise ResourceError(str(err)) from None
    return data.decode("utf-8", errors="replace")


# Serving.

def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def http_security(shown: str, port: int, loopback: bool) -> TransportSecuritySettings:
    """The SDK's DNS-rebinding check (on loopback only): a request's Host (and Origin, where
    it sends one) must name loopback, or the address it was served at (`shown`, an IPv6 one
    in brackets, and its port): 127.0.0.2 is loopback too, and its own requests say so."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    hosts += [shown, f"{shown}:{port}"]
    origins += [f"http://{shown}", f"http://{shown}:{port}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=loopback,
        allowed_hosts=list(dict.fromkeys(hosts)), allowed_origins=list(dict.fromkeys(origins)))


def serve_stdio(server: MCPServer) -> None:
    """Answer one agent over standard input and output (what desktop and editor agents run)."""
    server.run("stdio")


def serve_http(server: MCPServer, host: str, port: int, *, remote: bool = False,
               ready: Callable[[str], None] = lambda url: None) -> None:
    """Answer agents over streamable HTTP at http://host:port/mcp; `ready` is told the address
    once the socket listens (port 0 takes a free one). A host other than loopback needs
    `remote`: the archive is then readable by anyone who reaches the port."""
    import anyio
    import uvicorn

    loopback = is_loopback(host)
    if not loopback and not remote:
        raise AgentInputError(f"{host} is not a loopback address: anyone who reaches it could "
                              "read the archive and ask questions through your LLM server; "
                              "pass --allow-remote to serve it there anyway")
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as err:
        sock.close()
        raise AgentInputError(f"cannot listen on {host}:{port} ({err.strerror or err})") from err
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if family == socket.AF_INET6 else host
    app = server.streamable_http_app(transport_security=http_security(shown, bound, loopback),
                                     host=host)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)

    async def run() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(web.serve, [sock])
            while not web.started and not web.should_exit:
                await anyio.sleep(0.01)
            if web.started:
                ready(f"http://{shown}:{bound}/mcp")

    anyio.run(run)
