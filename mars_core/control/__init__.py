"""Oblivion's memory control loop over a MaRS store (seed 002 §2.1–2.4), framework-free.

* :class:`Decayer` — whether to retrieve: an uncertainty ``u_t(c)`` per L1 cluster from
  the buffer items attributed to it (embedding similarity and lexical coverage of the
  query, an optional judge; OR in the first round, AND after; retrieve when no cluster
  supports the query), and which L1 clusters stay accessible (retention ``R = exp(-n/S)``);
* :class:`Activator` — sub-query DAG retrieval into the bounded buffer, following L2↔L3
  links;
* :class:`Recognizer` — credit assignment: which buffer items the answer used;
* :class:`MemoryManager` — persist the turn (L2 facts, L3 episodes), reinforce used
  memories, update the L1 cluster;
* :class:`Executor` — the loop, with a maximum number of iterations.

Examples:
    >>> from mars_core import MemoryStore, FakeClock
    >>> from mars_core.control import Executor
    >>> with MemoryStore(clock=FakeClock()) as store:
    ...     ex = Executor(store, "u1")
    ...     _ = ex.turn("My sister Marta lives in Faro", lambda p: "Good to know.")
    ...     r = ex.turn("Where does Marta live?", lambda p: "Marta lives in Faro.")
    ...     "Faro" in r.prompt.system
    True
"""

from mars_core.control.access import (
    TurnClock,
    current_step,
    links,
    memory_retention,
    namespace_version,
    record_use,
)
from mars_core.control.activator import (
    Activation,
    Activator,
    ClusterTarget,
    Decomposer,
    SubQuery,
    aim_at,
)
from mars_core.control.clusters import (
    Cluster,
    ClusterBook,
    cluster_words,
    learn_procedure,
    relevance,
)
from mars_core.control.config import (
    ActivatorConfig,
    BufferConfig,
    ClusterConfig,
    ControlConfig,
    DecayerConfig,
    RecognizerConfig,
)
from mars_core.control.decayer import (
    UNCLUSTERED,
    ClusterUncertainty,
    Decayer,
    Judge,
    Uncertainty,
    attribute,
)
from mars_core.control.executor import Executor, Prompt, ReadResult, TurnResult
from mars_core.control.manager import MemoryManager, Persisted, Rewriter
from mars_core.control.memory import (
    CONTROL_KEY,
    Buffer,
    BufferItem,
    Layer,
    Turn,
    WorkingMemory,
    layer_of,
)
from mars_core.control.recognizer import Recognizer

__all__ = [
    "CONTROL_KEY",
    "UNCLUSTERED",
    "Activation",
    "Activator",
    "ActivatorConfig",
    "Buffer",
    "BufferConfig",
    "BufferItem",
    "Cluster",
    "ClusterBook",
    "ClusterConfig",
    "ClusterTarget",
    "ClusterUncertainty",
    "ControlConfig",
    "Decayer",
    "DecayerConfig",
    "Decomposer",
    "Executor",
    "Judge",
    "Layer",
    "MemoryManager",
    "Persisted",
    "Prompt",
    "ReadResult",
    "Recognizer",
    "RecognizerConfig",
    "Rewriter",
    "SubQuery",
    "Turn",
    "TurnClock",
    "TurnResult",
    "Uncertainty",
    "WorkingMemory",
    "aim_at",
    "attribute",
    "cluster_words",
    "current_step",
    "layer_of",
    "learn_procedure",
    "links",
    "memory_retention",
    "namespace_version",
    "record_use",
    "relevance",
]
