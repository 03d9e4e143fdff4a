"""The peers a user would pick instead, run offline on the same turns and the same embedder.

Each peer indexes a conversation through its own public API and returns, per question, its
top-``k`` turns in its own order; the benchmark fills the budget in that order. A peer that
cannot run here is reported with its error instead of a result.

* ``langgraph-store``: LangGraph ``InMemoryStore(index={"dims", "embed"})`` + ``search``;
* ``chroma``: a plain Chroma collection, top-k by the query embedding;
* ``mem0``: ``Memory.from_config`` with Chroma, a LangChain embeddings shim,
  ``llm={"provider": "langchain"}`` with a fake chat model, ``add(..., infer=False)``,
  ``MEM0_TELEMETRY=False`` set before import;
* ``llamaindex-memory``: ``Memory`` + ``VectorMemoryBlock`` over a minimal in-memory
  text-storing vector store (``llama_index.vector_stores.chroma`` is not installed here;
  ``SimpleVectorStore`` is rejected by the block), read through the block's ``aget``.

Examples:
    >>> rank_scores(["b", "a"], ["a", "b", "c"]).tolist()
    [1.0, 2.0, -inf]
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mars_core.bench.locomo import CachedEmbedder, ConvData
from mars_core.errors import ExtraNotInstalledError

__all__ = ["PEERS", "rank_scores", "run_peer"]

F64 = npt.NDArray[np.float64]
TOP_K = 60


def rank_scores(ranked: Sequence[str], ids: Sequence[str]) -> F64:
    """Scores that reproduce a peer's order: first gets ``len(ranked)``; unranked -inf."""
    pos = {d: i for i, d in enumerate(ids)}
    out = np.full(len(ids), -np.inf)
    for r, d in enumerate(ranked):
        if d in pos and not np.isfinite(out[pos[d]]):
            out[pos[d]] = float(len(ranked) - r)
    return out


def _vecs(emb: CachedEmbedder, texts: Sequence[str]) -> list[list[float]]:
    return [[float(x) for x in v] for v in emb.embed(list(texts))]


def _langgraph(cd: ConvData, emb: CachedEmbedder) -> list[list[str]]:
    from langgraph.store.memory import InMemoryStore

    store = InMemoryStore(index={"dims": emb.dim, "embed": lambda t: _vecs(emb, t),
                                 "fields": ["text"]})
    for d, t in zip(cd.ids, cd.texts, strict=True):  # one by one (duplicate texts)
        store.put(("locomo",), d, {"text": t})
    return [[it.key for it in store.search(("locomo",), query=q.question, limit=TOP_K)]
            for q in cd.questions]


def _chroma(cd: ConvData, emb: CachedEmbedder) -> list[list[str]]:
    import chromadb
    from chromadb.config import Settings

    # telemetry off; the same settings as mars_core's own ephemeral Chroma (one per process)
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    name = f"locomo_{abs(hash(cd.conv.sample_id)) % 10**8}"
    coll = client.get_or_create_collection(name, metadata={"hnsw:space": "cosine"})
    coll.add(ids=cd.ids, documents=cd.texts, embeddings=cd.vecs.tolist())
    res = coll.query(query_embeddings=cd.qvecs.tolist(), n_results=min(TOP_K, len(cd.ids)))
    client.delete_collection(name)
    return [list(r) for r in res["ids"]]


def _mem0(cd: ConvData, emb: CachedEmbedder) -> list[list[str]]:
    os.environ["MEM0_TELEMETRY"] = "False"
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from mem0 import Memory  # type: ignore[import-untyped]

    class Shim(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return _vecs(emb, texts)

        def embed_query(self, text: str) -> list[float]:
            return _vecs(emb, [text])[0]

    with tempfile.TemporaryDirectory(prefix="mars-mem0-") as tmp:
        os.environ.setdefault("MEM0_DIR", tmp)
        mem = Memory.from_config({
            "vector_store": {"provider": "chroma", "config": {
                "collection_name": "locomo", "path": f"{tmp}/chroma"}},
            "embedder": {"provider": "langchain", "config": {"model": Shim()}},
            "llm": {"provider": "langchain",
                    "config": {"model": FakeListChatModel(responses=["{}"])}},
            "history_db_path": f"{tmp}/history.db",
            "version": "v1.1",
        })
        by_id: dict[str, str] = {}
        for d, t in zip(cd.ids, cd.texts, strict=True):
            res = mem.add(t, user_id="u", infer=False, metadata={"dia_id": d})
            for item in res.get("results", []):
                by_id[item["id"]] = d
        out = []
        for q in cd.questions:
            res = mem.search(q.question, filters={"user_id": "u"}, limit=TOP_K)
            out.append([(r.get("metadata") or {}).get("dia_id") or by_id.get(r["id"], "")
                        for r in res.get("results", [])])
        return out


def _llamaindex(cd: ConvData, emb: CachedEmbedder) -> list[list[str]]:
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import Memory, VectorMemoryBlock

    store, embed_model = _llama_parts(emb)
    block = VectorMemoryBlock(vector_store=store, embed_model=embed_model,
                              similarity_top_k=TOP_K, retrieval_context_window=1)
    memory = Memory.from_defaults(session_id="locomo", token_limit=400,
                                  chat_history_token_ratio=0.05, token_flush_size=40,
                                  memory_blocks=[block])
    for t in cd.texts:
        memory.put(ChatMessage(role="user", content=t))
    memory.put(ChatMessage(role="user", content="."))  # flush the last real turns too
    lookup = {t: d for d, t in zip(cd.ids, cd.texts, strict=True)}
    out = []
    for q in cd.questions:
        asyncio.run(block.aget(messages=[ChatMessage(role="user", content=q.question)]))
        out.append([lookup.get(txt, "") for txt in store.last])
    return out


def _llama_parts(emb: CachedEmbedder) -> tuple[Any, Any]:
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.vector_stores.types import (
        BasePydanticVectorStore,
        VectorStoreQueryResult,
    )

    class Embed(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return _vecs(emb, [query])[0]

        def _get_text_embedding(self, text: str) -> list[float]:
            return _vecs(emb, [text])[0]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    class TextStore(BasePydanticVectorStore):
        stores_text: bool = True
        _nodes: list[Any] = PrivateAttr(default_factory=list)
        _last: list[str] = PrivateAttr(default_factory=list)

        @property
        def client(self) -> None:
            return None

        @property
        def last(self) -> list[str]:
            return self._last

        def add(self, nodes: Sequence[Any], **kw: Any) -> list[str]:
            self._nodes.extend(nodes)
            return [n.node_id for n in nodes]

        def delete(self, ref_doc_id: str, **kw: Any) -> None:
            self._nodes = [n for n in self._nodes if n.ref_doc_id != ref_doc_id]

        def query(self, query: Any, **kw: Any) -> Any:
            mat = np.array([n.get_embedding() for n in self._nodes])
            sims = mat @ np.asarray(query.query_embedding)
            top = np.argsort(-sims, kind="stable")[:query.similarity_top_k]
            nodes = [self._nodes[i] for i in top]
            self._last = [_message_text(n.get_content()) for n in nodes]
            return VectorStoreQueryResult(nodes=nodes, similarities=[float(sims[i]) for i in top],
                                          ids=[n.node_id for n in nodes])

    return TextStore(), Embed(model_name=emb.name)


def _message_text(content: str) -> str:
    """The turn text inside LlamaIndex's ``<message role=...>`` wrapper."""
    start = content.find(">")
    end = content.rfind("</message>")
    return content[start + 1:end].strip() if start >= 0 and end > start else content.strip()


PEERS: dict[str, Callable[[ConvData, CachedEmbedder], list[list[str]]]] = {
    "langgraph-store": _langgraph,
    "chroma": _chroma,
    "mem0": _mem0,
    "llamaindex-memory": _llamaindex,
}


def run_peer(name: str, data: Sequence[ConvData], emb: CachedEmbedder
             ) -> tuple[dict[str, list[F64]], str | None]:
    """Rank every question of every conversation with one peer.

    Returns:
        ``({sample_id: [scores per question]}, None)``, or ``({}, error)`` when the peer
        cannot run here (missing package, offline failure): the error is reported, not hidden.
    """
    try:
        out = {cd.conv.sample_id: [rank_scores(r, cd.ids) for r in PEERS[name](cd, emb)]
               for cd in data}
    except ImportError as exc:
        return {}, f"{name}: {ExtraNotInstalledError('peers', str(exc.name or exc))}"
    except Exception as exc:
        return {}, f"{type(exc).__name__}: {exc}"
    return out, None
