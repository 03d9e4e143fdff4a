"""A Model Context Protocol server over a store: memory for any MCP client (``mars mcp``).

Desktop assistants, IDE agents and any other MCP client reach the memory through the
official ``mcp`` Python SDK (the ``mcp`` extra: ``pip install 'mars-memory[mcp]'``),
over stdio (the client starts ``mars mcp`` itself) or streamable HTTP (``mars mcp
--transport http``, on 127.0.0.1 by default). The tools are
:class:`~mars_core.tools.MemoryTools`, the same bodies the LangChain tools call:

========== ============================================================= ===============
tool       what it does                                                  returns
========== ============================================================= ===============
remember   store a memory (``content``, ``memory_type``)                 its id (text)
recall     prompt-ready context about ``query`` (``render_context``)     text
search     the ``k`` best memories for ``query`` (``retrieve``)          one line each
forget     move a memory to the archive                                  text
erase      erase one memory or every memory about a person (``entity``)  the receipt
explain    provenance and audit rationales of a memory (no text)         an object
========== ============================================================= ===============

**One namespace per server, never crossed.** The server is bound to the namespace its
command line names (``--namespace``, default: the store's default namespace): no tool
takes a namespace, so no call of any client reaches another one, and an id of another
namespace is "not found". A stdio client starts its own server, so each client's
configuration chooses its namespace; one HTTP server serves one namespace (run one per
namespace, on its own port). The namespace is also a resource,
``mars://namespace/<name>`` (JSON: occupancy and the privacy receipt — counts and
rationales, no memory text); no other namespace is listed or readable.

**Privacy.** Memory text leaves only through ``recall`` (``render_context``) and
``search`` (``retrieve``), so the store's output privacy check applies to it as to every
other exit; ``explain`` and ``erase`` return ids, counts and rationales only.

**Errors.** A tool's bad arguments — a wrong type, a missing field, an unknown memory
type, an id that is not the namespace's — come back as an MCP tool error (``isError``
with the message the store gives) and change nothing; the server goes on. An argument
a tool does not take is ignored (the SDK's rule): a ``namespace`` in a call changes
nothing. With
``read_only=True`` only ``recall``, ``search`` and ``explain`` are served.

Examples:
    >>> from mars_core import MemoryStore
    >>> store = MemoryStore(budget=500)
    >>> server = build_server(store, namespace="ana")  # doctest: +SKIP
    >>> server.run("stdio")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal, TypeVar
from urllib.parse import quote

from pydantic import Field

from mars_core import __version__
from mars_core.errors import (
    ExtraNotInstalledError,
    MarsError,
    StorageUnavailableError,
    ValidationError,
)
from mars_core.namespaces import canonical_namespace
from mars_core.store import MemoryStore
from mars_core.tools import MAX_K, TOOL_NAMES, MemoryKind, MemoryTools

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["LOCALHOST", "READ_TOOLS", "Transport", "build_server", "namespace_uri", "serve"]

Transport = Literal["stdio", "http"]
"""``stdio`` (the client starts the server) or ``http`` (streamable HTTP at ``/mcp``)."""

LOCALHOST: Final = "127.0.0.1"
"""Where the HTTP transport listens unless told otherwise."""

READ_TOOLS: Final = ("recall", "search", "explain")
"""The tools of a read-only server."""

T = TypeVar("T")
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

INSTRUCTIONS: Final = (
    "Long-term memory of the user, kept across conversations. Call `recall` with the "
    "user's question before answering anything that may depend on what you were told "
    "before; call `remember` with one short statement per fact, preference, plan or "
    "event worth keeping; call `forget` with a memory's id when it is wrong or outdated. "
    "`erase` removes a memory for good (when the user asks to be forgotten); `explain` "
    "says why a memory is kept.")

Content = Annotated[str, Field(description="one short statement to keep, e.g. "
                                           "'Ana prefers window seats'")]
Query = Annotated[str, Field(description="the question or topic to look up")]
MemoryId = Annotated[str, Field(description="a memory id, as remember, recall or search "
                                            "show it")]
Count = Annotated[int | None, Field(ge=1, le=MAX_K, description="the most memories to "
                                                                "return (default: the server's)")]
Entity = Annotated[str | None, Field(description="a person's name: erase every memory "
                                                 "about them")]


def _mcp() -> Any:
    """The SDK's ``mcp.server.mcpserver`` module, or the error that names the extra."""
    try:
        from mcp.server import mcpserver
    except ImportError as exc:
        raise ExtraNotInstalledError("mcp", "mcp") from exc
    return mcpserver


def namespace_uri(namespace: str) -> str:
    """The resource URI of a namespace: ``mars://namespace/<name, percent-encoded>``.

    Examples:
        >>> namespace_uri("memories/ana")
        'mars://namespace/memories%2Fana'
    """
    return f"mars://namespace/{quote(namespace, safe='')}"


def build_server(store: MemoryStore, *, namespace: str | tuple[str, ...] | None = None,
                 k: int = 5, budget_tokens: int | None = None, read_only: bool = False,
                 name: str = "mars-memory") -> MCPServer[Any]:
    """An MCP server (the SDK's ``MCPServer``) whose tools and resource use ``store`` in
    one namespace (see the module).

    Args:
        store: the memory store (the caller closes it).
        namespace: the one namespace served (default: the store's default namespace).
        k: the most memories ``search`` returns when the call gives no ``k``.
        budget_tokens: the token budget of ``recall`` and ``search`` (None: the store's).
        read_only: serve only ``recall``, ``search`` and ``explain``.
        name: the server's name, as clients show it.

    Raises:
        ExtraNotInstalledError: the ``mcp`` extra is not installed.
        ValidationError: a bad namespace, ``k`` or ``budget_tokens``.
    """
    mcpserver = _mcp()
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    if not isinstance(read_only, bool):
        raise ValidationError("read_only must be True or False")
    ns = canonical_namespace(store.config.default_namespace if namespace is None
                             else namespace)
    core = MemoryTools(store, k=k, budget_tokens=budget_tokens)
    # WARNING: the SDK logs a refused call's message at INFO, and a message may quote
    # what the model sent (a memory's text); the log never holds it (crashes still are)
    server: MCPServer[Any] = mcpserver.MCPServer(name, instructions=INSTRUCTIONS,
                                                 version=__version__, log_level="WARNING")

    def guarded(body: Callable[[], T]) -> T:
        """Our typed errors as the SDK's tool errors: an ``isError`` result with the
        message, no traceback in the server's log."""
        try:
            return body()
        except MarsError as exc:
            raise ToolError(str(exc)) from exc

    def remember(content: Content, memory_type: MemoryKind = "semantic") -> str:
        """Store one fact, preference, plan or event about the user for later
        conversations. Returns the new memory's id."""
        return guarded(lambda: core.remember(content, memory_type, namespace=ns))

    def recall(query: Query) -> str:
        """What long-term memory holds about the query, as context to answer with."""
        return guarded(lambda: core.recall(query, namespace=ns))

    def search(query: Query, k: Count = None) -> str:
        """The memories that best match the query, one per line: [id] (type) text."""
        return guarded(lambda: core.search(query, k, namespace=ns))

    def forget(memory_id: MemoryId) -> str:
        """Forget a memory that is wrong or outdated (it moves to the archive, still
        explainable)."""
        return guarded(lambda: core.forget(memory_id, namespace=ns))

    def erase(memory_id: Annotated[str | None, Field(description="one memory to erase")]
              = None, entity: Entity = None) -> dict[str, Any]:
        """Erase for good (right to be forgotten) one memory, or every memory about a
        person, and what was derived from them. Give exactly one of memory_id and entity.
        Returns the receipt: ids and counts, no text."""
        return guarded(lambda: core.erase(memory_id, entity, namespace=ns))

    def explain(memory_id: MemoryId) -> dict[str, Any]:
        """Why a memory is kept, archived or erased: its provenance and the audit's
        rationales (ids and reasons, no text)."""
        return guarded(lambda: core.explain(memory_id, namespace=ns))

    bodies: dict[str, Callable[..., Any]] = {
        "remember": remember, "recall": recall, "search": search, "forget": forget,
        "erase": erase, "explain": explain}
    hints = {"remember": ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                         idempotent_hint=False, open_world_hint=False),
             "forget": ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                       idempotent_hint=True, open_world_hint=False),
             "erase": ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                      idempotent_hint=True, open_world_hint=False)}
    for tool in READ_TOOLS if read_only else TOOL_NAMES:
        server.add_tool(bodies[tool], name=tool, annotations=hints.get(
            tool, ToolAnnotations(read_only_hint=True, open_world_hint=False)),
            structured_output=tool in {"erase", "explain"})  # the others: plain text

    @server.resource(namespace_uri(ns), name=ns, title=f"memory namespace {ns}",
                     mime_type="application/json",
                     description="the namespace this server serves: occupancy and the "
                                 "privacy receipt (counts and rationales, no memory text)")
    def namespace_resource() -> str:
        return json.dumps(_namespace_view(store, ns), ensure_ascii=False, default=str)

    return server


def _namespace_view(store: MemoryStore, ns: str) -> dict[str, Any]:
    """What the namespace resource shows: occupancy and the privacy receipt."""
    receipt = store.receipt(ns)
    return {
        "namespace": ns,
        "occupancy": store.stats(ns)["namespaces"].get(ns, {}),
        "receipt": {"stored": dict(receipt.stored), "sensitive": dict(receipt.sensitive),
                    "summarised": receipt.summarised, "removed": dict(receipt.removed),
                    "reasons": [{"rationale": r, "count": n} for r, n in receipt.reasons]},
    }


def serve(path: str, *, namespace: str | None = None, transport: Transport = "stdio",
          host: str = LOCALHOST, port: int = 8000, k: int = 5,
          budget_tokens: int | None = None, read_only: bool = False,
          index: Any = "auto") -> None:
    """Open the store at ``path`` (created when missing, unless ``read_only``) and serve
    it until the client goes away (stdio) or the process is stopped (HTTP).

    Raises:
        ExtraNotInstalledError: the ``mcp`` extra is not installed.
        ValidationError: a bad transport, host, port or tool setting.
        MarsError: the store cannot be opened.
    """
    _mcp()  # the extra, before a store is opened or created
    if transport not in ("stdio", "http"):
        raise ValidationError(f"transport must be stdio or http, not {transport!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValidationError(f"port must be a TCP port (1-65535), not {port!r}")
    if not isinstance(host, str) or not host:
        raise ValidationError("host must be a host name or address, such as 127.0.0.1")
    with MemoryStore.open(path, read_only=read_only, index=index) as store:
        server = build_server(store, namespace=namespace, k=k, budget_tokens=budget_tokens,
                              read_only=read_only)
        if transport == "stdio":
            server.run("stdio")
            return
        if host not in _LOOPBACK:
            print(f"warning: serving memory on {host}:{port} without authentication: any "
                  "client that reaches it reads and writes this namespace", file=sys.stderr)
        _serve_http(server, host, port)


def _serve_http(server: MCPServer[Any], host: str, port: int) -> None:
    """Streamable HTTP at ``http://host:port/mcp``: the port is bound and listening before
    the line that says so goes to standard error, so a client (or a test) that reads it
    may connect at once — the system queues it until the server accepts.

    Raises:
        StorageUnavailableError: the address cannot be listened on (the port is taken).
    """
    import anyio
    import uvicorn

    try:
        listening = socket.create_server((host, port))
    except OSError as exc:
        raise StorageUnavailableError(f"cannot listen on {host}:{port}: "
                                      f"{exc.strerror or exc}") from None
    print(f"serving memory at http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    config = uvicorn.Config(server.streamable_http_app(host=host), log_level="warning")
    anyio.run(uvicorn.Server(config).serve, [listening])
