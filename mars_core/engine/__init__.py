"""The store's collaborators, under the :class:`~mars_core.store.MemoryStore` façade.

* :mod:`~mars_core.engine.engine` — :class:`~mars_core.engine.engine.Engine`:
  namespaces on demand, units of work, the policies' views;
* :mod:`~mars_core.engine.manifest` — opening: the manifest and the audit key;
* :mod:`~mars_core.engine.vectors` — vectors and text (the policies' ``PolicyIO``);
* :mod:`~mars_core.engine.reports` — ``stats()`` and the JSON-LD export;
* :mod:`~mars_core.engine.cache` — namespaces loaded on demand, a bounded number kept;
* :mod:`~mars_core.engine.unit` — the staged writes of one call, one transaction;
* :mod:`~mars_core.engine.writer`, :mod:`~mars_core.engine.reader`,
  :mod:`~mars_core.engine.eraser`, :mod:`~mars_core.engine.maintainer` — the operations;
* :mod:`~mars_core.engine.indexing` — the vector index following the records;
* :mod:`~mars_core.engine.trail` — the audit trail as users read it;
* :mod:`~mars_core.engine.args` — the public calls' arguments, checked.

The namespaces' views the engine keeps and the policies plan over live below it, in
:mod:`mars_core.views`. Internal: the public API is :class:`~mars_core.store.MemoryStore`.

Examples:
    >>> from mars_core import FakeClock, MemoryStore
    >>> with MemoryStore(budget=100, clock=FakeClock()) as store:  # opens the engine
    ...     fact = store.add("Ana moved to Lisbon")          # the writer: one unit of work
    ...     hits = store.retrieve("Where does Ana live?")    # the reader, and its access
    ...     receipt = store.erase(fact.id)                   # the eraser
    ...     [event.op.value for event in store.audit.events()], store.list()
    (['insert', 'access', 'erase'], [])
"""

from mars_core.engine.engine import Engine

__all__ = ["Engine"]
