"""Evidence through the frameworks: what each framework exit shows a model, beside what
``retrieve`` finds (issue 31).

Each conversation is ingested through each framework's own adapter, as a user of that
framework would feed it — the two speakers as the two sides of a chat, the first as the
user (LangChain ``HumanMessage(name=...)``, LlamaIndex ``ChatMessage(role="user",
additional_kwargs={"name": ...})``), the second as the assistant, each message carrying
its session's date (``additional_kwargs["timestamp"]``) and the conversation as the
session — into a fresh store with the defaults and the benchmark's embedder. Then every
question is read back through the exit at its default size:

* ``lc-middleware``: a real ``create_agent`` with a fake chat model and
  :class:`~langchain_mars.middleware.MarsMemoryMiddleware` (``observe=False``, so the
  questions are not stored): what it appends to the system message;
* ``lc-retriever``: LangChain :class:`~langchain_mars.retrievers.MarsRetriever` ``(k=4)``;
* ``li-retriever``: LlamaIndex :class:`~llamaindex_mars.retriever.MarsRetriever` ``(k=4)``;
* ``li-memory-get``: LlamaIndex :class:`~llamaindex_mars.memory.MarsMemory` ``.get(q)``
  (the recalled system message and the working-history window, ``token_limit`` 3000);
* ``li-block``: :class:`~llamaindex_mars.block.MarsMemoryBlock` inside a LlamaIndex
  ``Memory`` (a small ``token_limit`` and flush size, as ``Memory``'s defaults would
  never flush a LoCoMo conversation into a block): the block's content for ``q``;
* ``lg-store-search``: LangGraph :class:`~langchain_mars.store.MarsStore` ``.search``
  (``limit`` 10, LangGraph's default), the turns ``put`` one item each
  (``{"text": "speaker: text", "date": ...}``, indexed on ``text``).

Beside them, ``retrieve`` at 128 words on the users' path (:mod:`~mars_core.bench.users_path`,
``store.observe`` with speakers and dates), and each exit's ratio to it (the goal: ≥ 0.9).
A turn counts as shown when the exit shows its text or a memory derived from it
(:func:`~mars_core.bench.users_path.shown_turns`); recall is per question, then averaged.

Examples:
    >>> from mars_core.bench import locomo as L
    >>> from mars_core.bench.locomo_data import Conversation, Question, Turn
    >>> from mars_core.embeddings import HashingEmbedder
    >>> turns = (Turn("D1:1", "Bo", "Bo: Where did you move?", 1, None),
    ...          Turn("D1:2", "Ana", "Ana: To Lisbon, last May.", 1, None))
    >>> conv = Conversation("c", turns, (Question("Where did Ana move?", "Lisbon", 4,
    ...                                           ("D1:2",)),), 0)
    >>> emb = L.CachedEmbedder(HashingEmbedder(dim=64))
    >>> rows = frameworks_task(L.prepare([conv], emb), emb)
    >>> sorted({r["method"] for r in rows})[:3]
    ['lc-middleware', 'lc-retriever', 'lg-store-search']
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from mars_core.bench.locomo import CATEGORIES, ConvData, question_metrics
from mars_core.bench.users_path import (
    Ingested,
    fill_words,
    observe_args,
    read_conversation,
    shown_turns,
)
from mars_core.embeddings import Embedder
from mars_core.model import MemoryType
from mars_core.namespaces import id_namespace
from mars_core.progress import ProgressFn, report
from mars_core.store import MemoryStore

__all__ = ["BASELINE", "EXITS", "GOAL", "frameworks_section", "frameworks_task", "main"]

EXITS: tuple[str, ...] = ("lc-middleware", "lc-retriever", "li-retriever", "li-memory-get",
                          "li-block", "lg-store-search")
"""The framework exits measured, in table order."""

BASELINE = "retrieve@128w"
"""The reference row: ``retrieve`` on the users' path, 128 whitespace words."""

GOAL = 0.9
"""Each exit's recall should be at least this share of the baseline's (issue 31)."""

_K = 4
_BLOCK_LIMIT, _BLOCK_RATIO, _BLOCK_FLUSH = 2000, 0.5, 200
"""LlamaIndex ``Memory``'s token limit, chat-history ratio and flush size here: they let
turns flush into the block (see the module)."""


@dataclass
class _Seen:
    """What one exit showed for each question: turn ids and words."""

    turns: list[set[str]] = field(default_factory=list)
    words: list[int] = field(default_factory=list)

    def add(self, turns: Iterable[str | None], words: int) -> None:
        self.turns.append({t for t in turns if t is not None})
        self.words.append(words)


def _chat(cd: ConvData) -> list[tuple[str, dict[str, Any]]]:
    """Each turn as a chat message: ``(side, observe's arguments)``, the conversation's
    first speaker the user, every other the assistant."""
    first = cd.conv.turns[0].speaker if cd.conv.turns else ""
    out = []
    for turn in cd.conv.turns:
        args = observe_args(turn, cd.conv.sample_id)
        if args["text"].strip():
            out.append(("user" if turn.speaker == first else "assistant", args))
    return out


def _map(store: MemoryStore, ns: str | None, cd: ConvData) -> Ingested:
    """Which turn each stored memory counts for: the episodes, oldest first, are the
    non-empty turns in order (one episode per observed message); a fact counts for the
    turn it was derived from."""
    ids = [t.dia_id for t in cd.conv.turns if observe_args(t, "")["text"].strip()]
    nodes = store.list(ns, status=None)
    episodes = [n for n in nodes if n.type is MemoryType.EPISODIC]
    if len(episodes) != len(ids):
        raise RuntimeError(f"{cd.conv.sample_id}: {len(episodes)} episodes for {len(ids)} turns")
    ing = Ingested()
    for node, turn_id in zip(episodes, ids, strict=True):
        ing.episode[node.id] = ing.turn_of[node.id] = turn_id
    for node in nodes:
        found = ing.turn_of.get(node.id) or next(
            (ing.episode[i] for i in node.provenance.derived_from if i in ing.episode), None)
        if found is not None:
            ing.turn_of[node.id] = found
            ing.by_text.setdefault(" ".join(node.content.split()), set()).add(found)
    return ing


def _stamp(args: Mapping[str, Any]) -> dict[str, Any]:
    at: datetime | None = args["at"]
    return {} if at is None else {"timestamp": at.isoformat()}


def _shown(text: str, ing: Ingested) -> set[str]:
    return shown_turns(text, ing.by_text)[0]


# --- LangChain: chat history in; the middleware and the retriever out -------------------------


def _langchain(cd: ConvData, embedder: Embedder) -> dict[str, _Seen]:
    from langchain.agents import create_agent
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import AIMessage, HumanMessage

    from langchain_mars.chat_history import MarsChatMessageHistory
    from langchain_mars.middleware import MarsMemoryMiddleware
    from langchain_mars.retrievers import MarsRetriever

    class _Inputs(BaseCallbackHandler):
        def __init__(self) -> None:
            self.system = ""

        def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[Any]],
                                **kwargs: Any) -> None:
            self.system = "\n".join(m.text for m in messages[0] if m.type == "system")

    seen = {"lc-middleware": _Seen(), "lc-retriever": _Seen()}
    with MemoryStore(embedder=embedder, seed=0) as store:
        history = MarsChatMessageHistory(store, cd.conv.sample_id)
        history.add_messages([
            (HumanMessage if side == "user" else AIMessage)(
                a["text"], name=a["speaker"], additional_kwargs=_stamp(a))
            for side, a in _chat(cd)])
        ing = _map(store, None, cd)
        retriever = MarsRetriever(store=store, k=_K)
        inputs = _Inputs()
        agent = create_agent(FakeListChatModel(responses=["ok"]), middleware=[
            MarsMemoryMiddleware(store, observe=False, reinforce=False)])
        for q in cd.questions:
            docs = retriever.invoke(q.question)
            seen["lc-retriever"].add((ing.turn_of.get(str(d.id)) for d in docs),
                                     sum(len(d.page_content.split()) for d in docs))
            inputs.system = ""
            agent.invoke({"messages": [HumanMessage(q.question)]},
                         {"callbacks": [inputs]})
            seen["lc-middleware"].add(_shown(inputs.system, ing), len(inputs.system.split()))
    return seen


# --- LlamaIndex: MarsMemory in; get and the retriever out; Memory + block ---------------------


def _llamaindex(cd: ConvData, embedder: Embedder) -> dict[str, _Seen]:
    from llama_index.core.llms import ChatMessage

    from llamaindex_mars import MarsMemory, MarsRetriever

    seen = {"li-retriever": _Seen(), "li-memory-get": _Seen()}
    with MemoryStore(embedder=embedder, seed=0) as store:
        memory = MarsMemory(store, session_id=cd.conv.sample_id)
        memory.put_messages([
            ChatMessage(role=side, content=a["text"],
                        additional_kwargs={"name": a["speaker"], **_stamp(a)})
            for side, a in _chat(cd)])
        ing = _map(store, memory.namespace, cd)
        retriever = MarsRetriever(store, session_id=cd.conv.sample_id, k=_K)
        for q in cd.questions:
            nodes = retriever.retrieve(q.question)
            seen["li-retriever"].add((ing.turn_of.get(n.node.node_id) for n in nodes),
                                     sum(len(n.node.get_content().split()) for n in nodes))
            got = memory.get(q.question)
            text = "\n".join(m.content or "" for m in got)
            window = {t for m in got[1:] for t in ing.by_text.get(
                " ".join((m.content or "").split()), ())}
            seen["li-memory-get"].add(_shown(text, ing) | window, len(text.split()))
    return seen


def _block(cd: ConvData, embedder: Embedder) -> dict[str, _Seen]:
    from llama_index.core.llms import ChatMessage
    from llama_index.core.memory import Memory

    from llamaindex_mars import MarsMemoryBlock

    seen = _Seen()
    with MemoryStore(embedder=embedder, seed=0) as store:
        block = MarsMemoryBlock(store)
        memory = Memory.from_defaults(session_id=cd.conv.sample_id, memory_blocks=[block],
                                      token_limit=_BLOCK_LIMIT,
                                      chat_history_token_ratio=_BLOCK_RATIO,
                                      token_flush_size=_BLOCK_FLUSH)
        memory.put_messages([
            ChatMessage(role=side, content=a["text"],
                        additional_kwargs={"name": a["speaker"], **_stamp(a)})
            for side, a in _chat(cd)])
        ns = id_namespace(cd.conv.sample_id, what="session_id")  # the block's mapping
        flushed = store.list(ns, type=MemoryType.EPISODIC, status=None)
        ing = _map_prefix(store, ns, cd, len(flushed))
        for q in cd.questions:
            text = asyncio.run(block.aget([ChatMessage(role="user", content=q.question)],
                                          session_id=cd.conv.sample_id))
            seen.add(_shown(text, ing), len(text.split()))
    return {"li-block": seen}


def _map_prefix(store: MemoryStore, ns: str, cd: ConvData, flushed: int) -> Ingested:
    """:func:`_map` over the turns a ``Memory`` flushed into its block (the oldest ones)."""
    from dataclasses import replace

    kept = [t for t in cd.conv.turns if observe_args(t, "")["text"].strip()][:flushed]
    return _map(store, ns, replace(cd, conv=replace(cd.conv, turns=tuple(kept))))


# --- LangGraph: put in, search out ------------------------------------------------------------


def _langgraph(cd: ConvData, embedder: Embedder) -> dict[str, _Seen]:
    from langchain_mars.store import MarsStore

    seen = _Seen()
    ns = ("conversations", cd.conv.sample_id)
    with MemoryStore(embedder=embedder, seed=0) as store:
        graph_store = MarsStore(store, index={"fields": ["text"]})
        for turn in cd.conv.turns:
            at = observe_args(turn, "")["at"]
            graph_store.put(ns, turn.dia_id, {
                "text": turn.text, "date": None if at is None else at.isoformat()})
        for q in cd.questions:
            items = graph_store.search(ns, query=q.question)
            seen.add((i.key for i in items),
                     sum(len(str(i.value.get("text", "")).split()) for i in items))
    return {"lg-store-search": seen}


# --- the task ---------------------------------------------------------------------------------


def _baseline(cd: ConvData, embedder: Embedder) -> _Seen:
    """What ``retrieve`` gives at 128 words on the users' path, per question."""
    rd = read_conversation(cd, embedder, read_budget=512, in_memory=True)
    words = dict(zip(cd.ids, (int(c) for c in cd.cost["words"]), strict=True))
    seen = _Seen()
    for i in range(len(cd.questions)):
        seen.add(*fill_words(rd.retrieved[i], words, 128))
    return seen


_READERS: tuple[Callable[[ConvData, Embedder], dict[str, _Seen]], ...] = (
    _langchain, _llamaindex, _block, _langgraph)


def frameworks_task(data: Sequence[ConvData], embedder: Embedder, *,
                    exits: Sequence[str] = EXITS,
                    tick: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """The framework-exit rows (see the module): one per exit × category (``all`` and
    1–4), ``task="frameworks"``, with ``recall``, ``words`` (mean words shown) and
    ``ratio`` (the exit's recall over the baseline's on the same questions), and the
    baseline's own rows (``method=BASELINE``)."""
    unknown = set(exits) - set(EXITS)
    if unknown:
        raise ValueError(f"unknown framework exits {sorted(unknown)}; use {list(EXITS)}")
    per: dict[str, list[tuple[int, float, float]]] = {}
    for cd in data:
        found = {BASELINE: _baseline(cd, embedder)}
        for reader in _READERS:
            found.update(reader(cd, embedder))
        for name, seen in found.items():
            if name in exits or name == BASELINE:
                per.setdefault(name, []).extend(
                    (q.category, question_metrics(s, q.evidence, 0, 1)["recall"], float(w))
                    for s, w, q in zip(seen.turns, seen.words, cd.questions, strict=True))
        if tick is not None:
            tick()
    rows = []
    for name in (BASELINE, *(e for e in EXITS if e in per)):
        for cat in ("all", *CATEGORIES):
            sel = [(r, w, b[1]) for (c, r, w), b in zip(per[name], per[BASELINE], strict=True)
                   if cat in ("all", c)]
            if not sel:
                continue
            recall = float(np.mean([s[0] for s in sel]))
            base = float(np.mean([s[2] for s in sel]))
            rows.append({"method": name, "task": "frameworks", "counter": "default",
                         "budget": 0, "category": cat, "n": len(sel), "recall": recall,
                         "words": float(np.mean([s[1] for s in sel])),
                         "ratio": recall / base if base else float("nan")})
    return rows


def frameworks_section(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The framework-exit table (markdown lines) of the ``all`` rows.

    Examples:
        >>> rows = [{"method": BASELINE, "task": "frameworks", "category": "all", "n": 2,
        ...          "recall": 0.5, "words": 120.0, "ratio": 1.0},
        ...         {"method": "lc-retriever", "task": "frameworks", "category": "all",
        ...          "n": 2, "recall": 0.46, "words": 80.0, "ratio": 0.92}]
        >>> print(frameworks_section(rows)[-1])
        | `lc-retriever` | 0.460 | 80 | 0.92 | yes |
    """
    lines = ["| exit | evidence recall | words shown | × retrieve@128w | ≥ 0.9× |",
             "|---|---:|---:|---:|:-:|"]
    for r in rows:
        if r.get("task") != "frameworks" or r["category"] != "all":
            continue
        ok = "—" if r["method"] == BASELINE else ("yes" if r["ratio"] >= GOAL else "no")
        lines.append(f"| `{r['method']}` | {r['recall']:.3f} | {r['words']:.0f} | "
                     f"{r['ratio']:.2f} | {ok} |")
    return lines


def main(data: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
         quick: bool = False, embedder: str = "default",
         progress: ProgressFn | None = None) -> dict[str, Any]:
    """``mars bench frameworks``: the table on the LoCoMo file ``data`` (``quick``: 2
    conversations × 150 turns × 25 questions), written to ``out/frameworks.json`` and
    ``out/frameworks.md`` when ``out`` is given; returns ``{"rows", "table", "embedder"}``.

    Raises:
        ValidationError: an unknown ``embedder`` or an unreadable data file.
    """
    from mars_core.bench import locomo as L
    from mars_core.bench.evidence import _quick, default_bench_embedder
    from mars_core.bench.leakage import _embedder
    from mars_core.bench.locomo_data import load_locomo

    convs = load_locomo(data)
    if quick:
        convs = _quick(convs, 2, 150, 25)
    chosen = _embedder(embedder)
    emb = L.CachedEmbedder(chosen or default_bench_embedder(False))
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        report(progress, "conversations", done, len(convs))

    rows = frameworks_task(L.prepare(convs, emb), emb, tick=tick)
    table = frameworks_section(rows)
    result = {"embedder": emb.name, "quick": quick, "rows": rows, "table": table}
    if out is not None:
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "frameworks.json").write_text(json.dumps(result, indent=1) + "\n")
        (folder / "frameworks.md").write_text("\n".join(table) + "\n")
    return result
