"""mars-memory: a memory layer for LLM agents that forgets on purpose.

The public API is re-exported here; everything else is internal unless documented.

Examples:
    >>> from mars_core import MemoryStore
    >>> with MemoryStore(budget=200) as store:
    ...     _ = store.add("Bo's sister is Ana", type="social")
    ...     store.stats()["namespaces"]["default"]["active"]
    1
"""

from mars_core.audit import AuditEvent, AuditOp, VerifyReport
from mars_core.budget import (
    ApproxTokenCounter,
    TokenCounter,
    WhitespaceTokenCounter,
)
from mars_core.clock import Clock, FakeClock, SystemClock
from mars_core.config import RetrievalConfig, StoreConfig
from mars_core.embeddings import Embedder, HashingEmbedder
from mars_core.errors import (
    BudgetExceededError,
    ConcurrentWriteError,
    ConfigError,
    ConflictError,
    CorruptStoreError,
    EmbeddingMismatchError,
    ExtraNotInstalledError,
    ImportFormatError,
    MarsBackendError,
    MarsError,
    NotFoundError,
    PolicyError,
    PrivacyHookError,
    StorageUnavailableError,
    StoreClosedError,
    SyncInAsyncError,
    ValidationError,
)
from mars_core.index import (
    And,
    Eq,
    Filter,
    In,
    IndexCapabilities,
    Not,
    NumpyIndex,
    Or,
    Range,
    VectorIndex,
)
from mars_core.model import (
    ArchiveReason,
    Consent,
    Edge,
    EpisodicPayload,
    MemoryNode,
    MemoryStatus,
    MemoryType,
    Predicate,
    Provenance,
    SemanticPayload,
    SocialPayload,
    TaskPayload,
    TaskStatus,
)
from mars_core.policies import Policy, available_policies, make_policy
from mars_core.reading.explain import ChainLink, Explanation
from mars_core.reading.retrieval import Hit
from mars_core.storage import (
    PostgresRecordStore,
    RecordCapabilities,
    RecordStore,
    SQLiteRecordStore,
)
from mars_core.store import MemoryStore

__version__ = "0.2.0"

__all__ = [
    "And",
    "ApproxTokenCounter",
    "ArchiveReason",
    "AuditEvent",
    "AuditOp",
    "BudgetExceededError",
    "ChainLink",
    "Clock",
    "ConcurrentWriteError",
    "ConfigError",
    "ConflictError",
    "Consent",
    "CorruptStoreError",
    "Edge",
    "Embedder",
    "EmbeddingMismatchError",
    "EpisodicPayload",
    "Eq",
    "Explanation",
    "ExtraNotInstalledError",
    "FakeClock",
    "Filter",
    "HashingEmbedder",
    "Hit",
    "ImportFormatError",
    "In",
    "IndexCapabilities",
    "MarsBackendError",
    "MarsError",
    "MemoryNode",
    "MemoryStatus",
    "MemoryStore",
    "MemoryType",
    "Not",
    "NotFoundError",
    "NumpyIndex",
    "Or",
    "Policy",
    "PolicyError",
    "PostgresRecordStore",
    "Predicate",
    "PrivacyHookError",
    "Provenance",
    "Range",
    "RecordCapabilities",
    "RecordStore",
    "RetrievalConfig",
    "SQLiteRecordStore",
    "SemanticPayload",
    "SocialPayload",
    "StorageUnavailableError",
    "StoreClosedError",
    "StoreConfig",
    "SyncInAsyncError",
    "SystemClock",
    "TaskPayload",
    "TaskStatus",
    "TokenCounter",
    "ValidationError",
    "VectorIndex",
    "VerifyReport",
    "WhitespaceTokenCounter",
    "__version__",
    "available_policies",
    "make_policy",
]
