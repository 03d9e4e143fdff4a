"""``mars bench mechanisms``: the seeds' mechanisms computed by the shipped code, with the
paper's numbers where it prints some — the worked examples of the reproductions page.

Every example runs the library (a store in RAM, the hashing embedder, a fake clock, or the
scoring functions themselves) and is deterministic, so :func:`compute` gives the same
document on every machine; ``--regenerate-docs`` writes it to
``docs/benchmarks/results/mechanisms.json`` and rewrites the worked-example blocks of
``docs/benchmarks/reproductions.md``, and ``tests/test_reproduction_pages.py`` recomputes it
and fails when the page's examples no longer follow from the code. Examples:

* ``dmf_table2`` / ``dmf_table3`` — seed 004's Table 2 survival scores and Table 3
  half-lives from :mod:`mars_core.scoring.dmf`;
* ``dmf_pruning`` — §7.2 on Table 2's profiles in a full store: the eviction order, each
  S_prune, and the healthy tier protected (with ``healthy_tier="last"`` beside it);
* ``priority_twins`` — Priority-Decay's key ``(imp − λ_priv·s)/w`` on two twin memories
  (s = 0 and 0.95), and the former ``imp/w`` key;
* ``reflection_gate`` — §4.3's gate ``s̄ ≤ min s − τ_priv`` with the 0.3 floor on three
  clusters, beside the former ``max`` form;
* ``elastic`` — the elastic budget's controller by hand (§6.9.2);
* ``scope`` — a jurisdiction filter and two department templates at retrieval (§4.3);
* ``freshness`` — OSL-MR's A.2 freshness of a stable memory at Δt = 50 (the paper: ≈ 0.82);
* ``oblivion`` — Oblivion's cluster retention R = exp(−n/S), S = (U + F + ε)·T.

Example:
    >>> doc = compute()
    >>> doc["priority_twins"]["density"]["evicted"], doc["freshness"]["natural_log"]
    ('sensitive', 0.7564)
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from mars_core.bench.pages import RESULTS, provenance, read_results, splice, write_results

__all__ = ["COMMAND", "FILE", "compute", "regenerate_docs", "repro_blocks", "summary_rows"]

COMMAND = "mars bench mechanisms --regenerate-docs"
FILE = RESULTS / "mechanisms.json"
REPRO = Path("benchmarks") / "reproductions.md"
_ND = 4

DMF_TABLE2 = (  # profile, ID, |S|, E_norm, D, constraint, paper z_total, paper Ω
    ("technical fact", 0.60, 0.05, 0.80, 0.05, False, 3.29, 0.86),
    ("user constraint", 0.35, 0.05, 0.20, 0.05, True, 2.24, 0.68),
    ("content-rich on-topic", 0.65, 0.10, 0.20, 0.05, False, 2.25, 0.68),
    ("average turn", 0.40, 0.15, 0.20, 0.15, False, 1.26, 0.44),
    ("emotional off-topic drift", 0.15, 0.85, 0.10, 0.70, False, -0.93, 0.08),
    ("empty / non-social", 0.00, 0.00, 0.00, 0.00, False, 0.00, 0.18),
)
"""Seed 004 Table 2 (§5.4)."""
DMF_TABLE3 = ((0.87, 35.0), (0.72, 30.9), (0.50, 26.4), (0.35, 24.0), (0.25, 22.6),
              (0.18, 21.8))
"""Seed 004 Table 3: Ω and the half-life in turns as printed."""


def _r(x: float) -> float:
    return round(float(x), _ND)


def _dmf_tables() -> dict[str, Any]:
    from mars_core.scoring.dmf import OperationalCues, half_life, survival_score

    t2 = []
    for name, id_, s, e, d, con, z, omega in DMF_TABLE2:
        sc = survival_score(id_, s, e, d, cues=OperationalCues(constraint=con))
        t2.append({"profile": name, "z_paper": z, "omega_paper": omega,
                   "z": _r(sc.z_total), "omega": _r(sc.omega)})
    t3 = [{"omega": o, "paper": p, "half_life": _r(half_life(o))} for o, p in DMF_TABLE3]
    return {"dmf_table2": t2, "dmf_table3": t3}


def _quiet_store(**kw: Any) -> Any:
    from mars_core import FakeClock, MemoryStore
    from mars_core.embeddings import HashingEmbedder

    return MemoryStore(clock=FakeClock(), embedder=HashingEmbedder(), audit_key=b"k" * 32,
                       **kw)


def _dmf_pruning(healthy_tier: str) -> dict[str, Any]:
    """Table 2's four budget-relevant profiles written at step 10, the store exactly full;
    one more turn needs the room of all of them."""
    from mars_core.io.jsonld import to_jsonld
    from mars_core.model import MemoryNode

    specs = [("Function must run in O(n) time", 0.86, {}),
             ("Do not use external APIs", 0.68, {"constraint": 1.0}),
             ("the parser keeps the quoted strings intact", 0.68, {}),
             ("we talked about it for a while", 0.44, {})]
    names = ("technical fact", "user constraint", "content-rich on-topic", "average turn")
    with _quiet_store(nlp="rules") as scratch:
        weight = sum(scratch.token_counter.count(t) for t, _, _ in specs)
    store = _quiet_store(nlp="rules", policy="dmf", budget=weight,
                         policy_params={"healthy_tier": healthy_tier})
    nodes = [MemoryNode(id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"mech-dmf-{i}")),
                        type="episodic", content=text, weight=1, step=10, seq=i + 1,
                        touch_seq=i + 1, activated_seq=i + 1, signals={"omega": om, **cues})
             for i, (text, om, cues) in enumerate(specs)]
    with store:
        store.import_jsonld(to_jsonld(nodes, [], {"default": 10}))
        since = len(store.audit)
        store.add(" ".join(["filler"] * weight))
        label = {n.id: name for n, name in zip(nodes, names, strict=True)}
        out = []
        for e in store.audit.events()[since:]:
            if e.op.value != "evict" or e.node_ids[0] not in label:
                continue
            f = e.features[e.node_ids[0]]
            out.append({"profile": label[e.node_ids[0]], "omega_eff": _r(f["omega_eff"]),
                        "s_prune": _r(f["s_prune"]), "forced": "forced by budget" in e.rationale})
    return {"order": out}


def _dmf_card(healthy_tier: str) -> list[str]:
    """A card (Ω 0.89, healthy, a leaf) derives from a turn (Ω 0.44, unhealthy, so a
    non-leaf): which one a turn needing room archives first."""
    from mars_core.io.jsonld import to_jsonld
    from mars_core.model import Edge, MemoryNode, Predicate

    turn = MemoryNode(id=str(uuid.uuid5(uuid.NAMESPACE_URL, "mech-turn")), type="episodic",
                      content="we talked about the parser for a while", weight=1, step=10,
                      seq=1, touch_seq=1, activated_seq=1, signals={"omega": 0.44})
    card = MemoryNode(id=str(uuid.uuid5(uuid.NAMESPACE_URL, "mech-card")), type="episodic",
                      content="the parser", weight=1, step=10, seq=2, touch_seq=2,
                      activated_seq=2, signals={"omega": 0.89})
    with _quiet_store(nlp="rules") as scratch:
        budget = 2 * scratch.token_counter.count(turn.content)
    with _quiet_store(nlp="rules", policy="dmf", budget=budget,
                      policy_params={"healthy_tier": healthy_tier}) as store:
        store.import_jsonld(to_jsonld([turn, card], [Edge(
            source=card.id, predicate=Predicate.DERIVES_FROM, target=turn.id, step=10)],
            {"default": 10}))
        since = len(store.audit)
        store.add(" ".join(["filler"] * (budget - 2)))
        names = {turn.id: "unhealthy turn (non-leaf)", card.id: "healthy card (leaf)"}
        return [names[e.node_ids[0]] for e in store.audit.events()[since:]
                if e.op.value == "evict" and e.node_ids[0] in names]


def _priority_twins(key: str) -> dict[str, Any]:
    store = _quiet_store(nlp="rules", policy="priority", budget=16, sensitivity_scoring=False,
                         policy_params={"key": key})
    with store:
        a = store.add("ana met bo at the cafe", type="episodic", sensitivity=0.0)
        b = store.add("ana met bo at the cafe", type="episodic", sensitivity=0.95)
        since = len(store.audit)
        store.add("paris is in france today", type="episodic", sensitivity=0.0)
        [gone] = [e for e in store.audit.events()[since:] if e.op.value == "evict"]
        f = gone.features[gone.node_ids[0]]
        return {"weight": a.weight, "evicted": "harmless" if gone.node_ids[0] == a.id
                else "sensitive" if gone.node_ids[0] == b.id else "other",
                "key": _r(f["key"]), "importance": _r(f["importance"]),
                "privacy_penalty": _r(f["privacy_penalty"])}


def _reflection_gate() -> list[dict[str, Any]]:
    from mars_core.policies.reflection import gate_reference, privacy_gate, summary_sensitivity

    phone = "555-123-4567"
    cases = [("three members with a phone each, masked", [0.8, 0.7, 0.9], True),
             ("one member at 0.8 with a phone, four ordinary turns, masked",
              [0.8, 0.0, 0.0, 0.0, 0.0], False),
             ("one member at 0.5 with a phone, four ordinary turns, masked",
              [0.5, 0.0, 0.0, 0.0, 0.0], False)]
    out = []
    for what, sens, every in cases:
        texts = [f"the machine leaks, call {phone}" if every or i == 0 else "the machine leaks"
                 for i in range(len(sens))]
        s_bar, _ = summary_sensitivity(texts, sens, "the machine leaks, call [phone]")
        row: dict[str, Any] = {"case": what, "members": sens, "summary": _r(s_bar)}
        hows: tuple[Literal["min", "max"], ...] = ("min", "max")
        for how in hows:
            ref = gate_reference(sens, 0.3, how)
            row[how] = {"reference": _r(ref), "passes": privacy_gate(s_bar, ref, 0.05, 0.3)}
        out.append(row)
    return out


def _elastic() -> dict[str, Any]:
    from mars_core.budget import ElasticBudget, ElasticState

    cfg = ElasticBudget(window=3, cooldown=0)
    s = ElasticState(100)
    for _ in range(4):
        s = s.observe_write(cfg, triggered=True).observe_hits(cfg, active=1, total=4)
    stressed = {"triggers": _r(s.triggers), "hits": _r(s.hits or 0.0)}
    s, _why = s.decide(cfg, base=100)
    raised = s.budget
    hits = []
    for active, total in ((9, 10), (1, 1), (1, 1)):
        s = s.observe_hits(cfg, active=active, total=total)
        hits.append(_r(s.hits or 0.0))
    s, _why = s.decide(cfg, base=100)
    return {"stressed": stressed, "raised_to": raised, "hits_after": hits,
            "lowered_to": s.budget}


def _scope() -> dict[str, Any]:
    templates = {"support": {"max_sensitivity": 0.3, "types": ["semantic"]},
                 "eu-hr": {"jurisdictions": ["EU"]}}
    facts = [("Ana works at Acme in Berlin", "EU-DE", 0.1),
             ("Ana works at Acme in Austin", "US-TX", 0.1),
             ("Ana's salary at Acme is 90k", "EU", 0.8)]
    out: dict[str, Any] = {}
    with _quiet_store(nlp="rules", retrieval_templates=templates,
                      sensitivity_scoring=False) as store:
        for text, where, sens in facts:
            store.add(text, type="semantic", sensitivity=sens,
                      provenance={"jurisdiction": where})
        for name, kw in (("none", {}), ("jurisdiction EU", {"jurisdiction": "EU"}),
                         ("template eu-hr", {"template": "eu-hr"}),
                         ("template support", {"template": "support"}),
                         ("template eu-hr, jurisdiction US",
                          {"template": "eu-hr", "jurisdiction": "US"})):
            hits = store.retrieve("Ana Acme", relative_cutoff=0, read_only=True, **kw)
            out[name] = sorted(h.node.content for h in hits)
    return out


def _freshness() -> dict[str, Any]:
    from mars_core.scoring.mixed import FreshnessConfig, freshness

    return {"paper": 0.82, "natural_log": _r(freshness(50, "stable")),
            "log10": _r(freshness(50, "stable", FreshnessConfig(log_base=10.0)))}


def _oblivion() -> dict[str, Any]:
    s = (0.5 + 0.2 + 0.01) * 10
    return {"U": 0.5, "F": 0.2, "T": 10, "S": _r(s), "n": 3, "R": _r(math.exp(-3 / s))}


def compute() -> dict[str, Any]:
    """Every worked example (module docstring), computed by the shipped code."""
    return {**_dmf_tables(),
            "dmf_pruning": {"protected": _dmf_pruning("protected"),
                            "last": _dmf_pruning("last")},
            "dmf_card": {"protected": _dmf_card("protected"), "last": _dmf_card("last")},
            "priority_twins": {"density": _priority_twins("density"),
                               "importance": _priority_twins("importance")},
            "reflection_gate": _reflection_gate(), "elastic": _elastic(), "scope": _scope(),
            "freshness": _freshness(), "oblivion": _oblivion()}


# --- rendering ---------------------------------------------------------------------------


def _dmf_block(doc: Mapping[str, Any]) -> list[str]:
    out = ["| profile | Ω paper | Ω ours | z paper | z ours |", "|---|---|---|---|---|"]
    out += [f"| {r['profile']} | {r['omega_paper']:.2f} | {r['omega']:.4f} | "
            f"{r['z_paper']:.2f} | {r['z']:.4f} |" for r in doc["dmf_table2"]]
    out += ["", "| Ω | half-life paper (turns) | ours |", "|---|---|---|"]
    out += [f"| {r['omega']:.2f} | {r['paper']:.1f} | {r['half_life']:.2f} |"
            for r in doc["dmf_table3"]]
    out += ["", "Budget pressure on Table 2's profiles (the store exactly full; one more turn "
            "needs their room), in eviction order:", "",
            "| option | order (S_prune; *forced* = taken only because nothing unprotected "
            "was left) |", "|---|---|"]
    for opt in ("protected", "last"):
        order = "; ".join(f"{e['profile']} ({e['s_prune']:.3f}{', forced' if e['forced'] else ''})"
                          for e in doc["dmf_pruning"][opt]["order"])
        out.append(f"| `healthy_tier=\"{opt}\"` | {order} |")
    out += ["", "A healthy card (Ω 0.89, a leaf) derived from an unhealthy turn (Ω 0.44, so a "
            "non-leaf), one more turn needing room — archived first:", "",
            "| option | archived, in order |", "|---|---|"]
    out += [f"| `healthy_tier=\"{opt}\"` | {'; '.join(doc['dmf_card'][opt])} |"
            for opt in ("protected", "last")]
    return out


def _priority_block(doc: Mapping[str, Any]) -> list[str]:
    d, i = doc["priority_twins"]["density"], doc["priority_twins"]["importance"]
    return ["| key | evicted twin | its imp | λ_priv·s | its key |", "|---|---|---|---|---|",
            f"| `(imp − λ_priv·s)/w` (default) | {d['evicted']} | {d['importance']:.4f} | "
            f"{d['privacy_penalty']:.4f} | {d['key']:.4f} |",
            f"| `imp/w` (`key=\"importance\"`, the former key) | {i['evicted']} | "
            f"{i['importance']:.4f} | {i['privacy_penalty']:.4f} | {i['key']:.4f} |"]


def _reflection_block(doc: Mapping[str, Any]) -> list[str]:
    out = ["| cluster | members' s | summary s̄ | `min` (§4.3): reference, verdict | `max` "
           "(former): reference, verdict |", "|---|---|---|---|---|"]
    for r in doc["reflection_gate"]:
        cells = [f"{r[h]['reference']:.2f}, {'accepted' if r[h]['passes'] else 'refused'}"
                 for h in ("min", "max")]
        out.append(f"| {r['case']} | {', '.join(f'{s:g}' for s in r['members'])} | "
                   f"{r['summary']:.2f} | {cells[0]} | {cells[1]} |")
    return out


def _elastic_block(doc: Mapping[str, Any]) -> list[str]:
    e = doc["elastic"]
    return [f"Window 3 (α = 0.5), cooldown 0, B0 = 100: after four triggered writes and four "
            f"retrievals with 1 of 4 hits active, trigger rate {e['stressed']['triggers']} and "
            f"active hit rate {e['stressed']['hits']} — stress: the budget becomes "
            f"{e['raised_to']}; retrievals served 9/10, 1/1, 1/1 by active memories bring the "
            f"hit rate to {', '.join(str(h) for h in e['hits_after'])} — calm: back to "
            f"{e['lowered_to']}."]


def _scope_block(doc: Mapping[str, Any]) -> list[str]:
    out = ["| scope of `retrieve(\"Ana Acme\")` | memories returned |", "|---|---|"]
    out += [f"| {k} | {'; '.join(v) if v else '(none)'} |" for k, v in doc["scope"].items()]
    return out


def repro_blocks(doc: Mapping[str, Any]) -> dict[str, str]:
    """The worked-example blocks of the reproductions page."""
    f, o = doc["freshness"], doc["oblivion"]
    stamp = (f"*Generated by `{doc['command']}` at commit `{doc['commit']}` from "
             "`docs/benchmarks/results/mechanisms.json`.*")
    return {"repro/mech-provenance": stamp,
            "repro/mech-dmf": "\n".join(_dmf_block(doc)),
            "repro/mech-priority": "\n".join(_priority_block(doc)),
            "repro/mech-reflection": "\n".join(_reflection_block(doc)),
            "repro/mech-elastic": "\n".join(_elastic_block(doc)),
            "repro/mech-scope": "\n".join(_scope_block(doc)),
            "repro/mech-small": (
                f"A.2 freshness of a stable memory at Δt = 50: {f['natural_log']} (natural "
                f"log; {f['log10']} with log10), the paper's ≈ {f['paper']}. Oblivion: U "
                f"{o['U']}, F {o['F']}, T {o['T']} give S = {o['S']}, and {o['n']} turns later "
                f"R = {o['R']}.")}


def summary_rows(doc: Mapping[str, Any]) -> list[dict[str, str]]:
    """The mechanisms' rows of the reproductions summary (the paper's printed numbers)."""
    rows = [{"item": f"004 Table 2, Ω of {r['profile']}", "paper": f"{r['omega_paper']:.2f}",
             "ours": f"{r['omega']:.4f}",
             "verdict": "exact" if round(r["omega"], 2) == r["omega_paper"] else "differs"}
            for r in doc["dmf_table2"]]
    rows += [{"item": f"004 Table 3, half-life at Ω {r['omega']:.2f}",
              "paper": f"{r['paper']:.1f}", "ours": f"{r['half_life']:.2f}",
              "verdict": "exact (to the paper's rounding)"
              if abs(r["half_life"] - r["paper"]) <= 0.06 else "differs"}
             for r in doc["dmf_table3"]]
    f = doc["freshness"]
    rows.append({"item": "001 A.2, freshness of a stable memory at Δt = 50",
                 "paper": f"≈ {f['paper']}", "ours": f"{f['natural_log']} (log10: {f['log10']})",
                 "verdict": "differs: the formula as printed gives ours (DESIGN §6)"})
    return rows


def regenerate_docs(docs: Path, command: str = COMMAND) -> dict[str, Any]:
    """Compute the examples, write the results file, rewrite the page's blocks."""
    doc = write_results(docs / FILE, {**compute(), **provenance(command, docs)})
    path = docs / REPRO
    path.write_text(splice(path.read_text(encoding="utf-8"), repro_blocks(doc)),
                    encoding="utf-8")
    return {"doc": doc, "pages": [str(REPRO)]}


def load(docs: Path) -> dict[str, Any]:
    """The mechanisms results file of a checkout's ``docs/``."""
    return read_results(docs / FILE)
