"""Memory as an agent's tools, framework-free: what ``remember``, ``recall``, ``search``,
``forget``, ``erase`` and ``explain`` do, and what the model reads back.

The framework adapters are thin wrappers of :class:`MemoryTools`: the LangChain tools
(:func:`langchain_mars.tools.memory_tools`: ``remember``, ``recall`` — this module's
``search`` —, ``forget``) and the MCP server (:mod:`mars_core.mcp_server`: all six).
Each method is one call of the store, in the namespace the caller passes — how the
namespace is chosen (a run's config, a server's command line) is the adapter's business,
never the model's: no method takes a namespace from the model, so no tool call reaches
another namespace.

* ``remember(content, memory_type)`` → :meth:`~mars_core.store.MemoryStore.add`
  (source ``"agent"``); the model reads the new memory's id.
* ``recall(query)`` → :meth:`~mars_core.store.MemoryStore.render_context` with
  ``evidence_only=True``: prompt-ready context, the recalled evidence and its support.
* ``search(query, k)`` → :meth:`~mars_core.store.MemoryStore.retrieve`: one line per
  memory, ``- [<id>] (<type>) <text>``, best first.
* ``forget(memory_id)`` → :meth:`~mars_core.store.MemoryStore.forget` (to the archive,
  still explainable).
* ``erase(memory_id=... | entity=...)`` → :meth:`~mars_core.store.MemoryStore.erase`
  (right to be forgotten; a whole namespace is not erased by a tool); the receipt as
  :meth:`~mars_core.privacy.receipts.ErasureReceipt.as_dict`.
* ``explain(memory_id)`` → :meth:`~mars_core.store.MemoryStore.explain`, as
  :meth:`~mars_core.reading.explain.Explanation.as_dict` (ids and rationales, no text).

Text leaves only through ``retrieve`` hits' ``text`` and ``render_context``: the same
output privacy check as every other exit of the store applies to it (redaction; withheld
restatements of sensitive or erased memories). Bad arguments raise the store's typed
errors (:class:`~mars_core.errors.ValidationError`, :class:`~mars_core.errors.NotFoundError`)
and change nothing; the adapters hand them to the model as tool errors.

Examples:
    >>> from mars_core import MemoryStore
    >>> store = MemoryStore(budget=500)
    >>> tools = MemoryTools(store)
    >>> tools.remember("Ana's flight is on Friday", namespace="ana").startswith("Remembered")
    True
    >>> tools.search("When is Ana's flight?", namespace="ana").split(") ", 1)[1]
    "Ana's flight is on Friday"
    >>> tools.search("When is Ana's flight?", namespace="bo")
    'No memories found.'
    >>> "Ana's flight is on Friday" in tools.recall("When is the flight?", namespace="ana")
    True
    >>> store.close()
"""

from __future__ import annotations

from typing import Any, Final, Literal

from mars_core.errors import ValidationError
from mars_core.namespaces import NamespaceArg
from mars_core.store import MemoryStore

__all__ = ["MAX_K", "NOTHING", "TOOL_NAMES", "MemoryKind", "MemoryTools"]

MemoryKind = Literal["semantic", "episodic", "social", "task"]
"""The memory types a model may ``remember``."""

TOOL_NAMES: Final = ("remember", "recall", "search", "forget", "erase", "explain")
"""Every tool, in the order the adapters list them."""

MAX_K: Final = 50
"""The most memories a ``search`` call may ask for with its own ``k``."""

NOTHING: Final = "No memories found."
"""What ``recall`` and ``search`` say when nothing matches."""

_SOURCE = "agent"


def _count(value: object, what: str, *, at_most: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 \
            or (at_most is not None and value > at_most):
        bound = f" up to {at_most}" if at_most is not None else ""
        raise ValidationError(f"{what} must be a whole number from 1{bound}, not {value!r}")
    return value


class MemoryTools:
    """The bodies of the memory tools over one store (see the module).

    Args:
        store: the memory store.
        k: the most memories ``search`` returns when the call gives no ``k`` (a call's
            own ``k`` is at most :data:`MAX_K`).
        budget_tokens: the token budget of ``recall`` and ``search`` (None: the store's
            retrieval default).

    Raises:
        ValidationError: a ``store`` that is not a MemoryStore, a bad ``k`` or
            ``budget_tokens``.

    Examples:
        >>> from mars_core import MemoryStore
        >>> with MemoryStore(budget=500) as store:
        ...     tools = MemoryTools(store, k=3)
        ...     memory_id = tools.remember("Bo plays jazz").split("id=")[1].rstrip(").")
        ...     print(tools.forget(memory_id) == f"Forgot {memory_id}.",
        ...           tools.explain(memory_id)["status"])
        True archived
    """

    def __init__(self, store: MemoryStore, *, k: int = 5,
                 budget_tokens: int | None = None) -> None:
        if not isinstance(store, MemoryStore):
            raise ValidationError(f"store must be a MemoryStore, not {type(store).__name__}")
        self.store = store
        self.k = _count(k, "k")
        self.budget_tokens = None if budget_tokens is None \
            else _count(budget_tokens, "budget_tokens")

    def remember(self, content: str, memory_type: MemoryKind | str = "semantic", *,
                 namespace: NamespaceArg | None = None) -> str:
        """Store a fact, preference, plan or event for later conversations."""
        node = self.store.add(content, type=memory_type, namespace=namespace,
                              provenance={"source": _SOURCE})
        return f"Remembered (id={node.id})."

    def recall(self, query: str, *, namespace: NamespaceArg | None = None) -> str:
        """Prompt-ready context of what memory holds about ``query``."""
        text = self.store.render_context(query, budget_tokens=self.budget_tokens,
                                         namespace=namespace, evidence_only=True)
        return text or NOTHING

    def search(self, query: str, k: int | None = None, *,
               namespace: NamespaceArg | None = None) -> str:
        """The memories that best match ``query``, one line each, best first."""
        hits = self.store.retrieve(query, budget_tokens=self.budget_tokens,
                                   k=self.k if k is None else _count(k, "k", at_most=MAX_K),
                                   namespace=namespace)
        if not hits:
            return NOTHING
        return "\n".join(f"- [{h.id}] ({h.node.type.value}) {h.text}" for h in hits)

    def forget(self, memory_id: str, *, namespace: NamespaceArg | None = None,
               reason: str = "forgotten by the agent's forget tool") -> str:
        """Move a memory to the archive (still explainable); an earlier version's id
        stands for the memory's current version (:meth:`MemoryStore.update`)."""
        current = self.store.get(memory_id, namespace=namespace, current=True)
        self.store.forget(current.id, reason=reason, namespace=namespace)
        return f"Forgot {memory_id}."

    def erase(self, memory_id: str | None = None, entity: str | None = None, *,
              namespace: NamespaceArg | None = None) -> dict[str, Any]:
        """Erase one memory, or every memory about a person (right to be forgotten),
        and what derives from them; the receipt (ids and counts, no text).

        Raises:
            ValidationError: not exactly one of ``memory_id`` and ``entity``.
        """
        if (memory_id is None) == (entity is None):
            raise ValidationError("erase takes exactly one of memory_id (one memory) and "
                                  "entity (every memory about a person)")
        receipt = self.store.erase(memory_id, entity=entity, namespace=namespace)
        return receipt.as_dict()

    def explain(self, memory_id: str, *,
                namespace: NamespaceArg | None = None) -> dict[str, Any]:
        """Why a memory is where it is: its provenance and audit rationales (no text)."""
        return self.store.explain(memory_id, namespace=namespace).as_dict()
