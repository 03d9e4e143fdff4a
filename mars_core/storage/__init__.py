"""Record stores: the system of record of a store (see :mod:`mars_core.storage.base`).

:class:`SQLiteRecordStore` is the embedded default (a file under the store's path) and,
without a path, the store in RAM that ``MemoryStore()`` uses. :class:`PostgresRecordStore`
keeps the records on a PostgreSQL server that many processes write at once (the
``postgres`` extra).

Examples:
    >>> from mars_core.storage import SQLiteRecordStore
    >>> SQLiteRecordStore().name
    'sqlite'
"""

from mars_core.storage.base import (
    AddEdges,
    AppendAudit,
    Change,
    ChangeLog,
    DeleteMemory,
    IndexRow,
    InsertMemory,
    NamespaceRecord,
    NamespaceTotals,
    RecordCapabilities,
    RecordOp,
    RecordStore,
    RecordTxn,
    SensitiveRow,
    SetVector,
    UpdateMemory,
    UpdateStats,
    index_fields,
)
from mars_core.storage.postgres import PostgresRecordStore
from mars_core.storage.sqlite import SQLiteRecordStore

__all__ = [
    "AddEdges",
    "AppendAudit",
    "Change",
    "ChangeLog",
    "DeleteMemory",
    "IndexRow",
    "InsertMemory",
    "NamespaceRecord",
    "NamespaceTotals",
    "PostgresRecordStore",
    "RecordCapabilities",
    "RecordOp",
    "RecordStore",
    "RecordTxn",
    "SQLiteRecordStore",
    "SensitiveRow",
    "SetVector",
    "UpdateMemory",
    "UpdateStats",
    "index_fields",
]
