"""``mars bench privacy``: the privacy detectors and the semantic signal on labelled corpora.

Three measurements on :mod:`mars_core.bench.privacy_corpus` (nothing here is fitted on
it):

1. **Pattern detectors**, per kind: a positive counts as found when a detection of its
   kind covers the labelled value; every other detection — on a positive of another
   kind, or on a hard negative — is a false positive of its kind. Precision and recall
   per detector, and over all of them.
2. **The embedding-level classifier** (:mod:`mars_core.privacy.semantic`), per
   embedder: its cross-validated calibration, then precision and recall on the held-out
   statements; what it adds to the lexical scorer — a statement counts as sensitive
   when its ingestion sensitivity reaches 0.5 (private mode's default σ), with the
   detectors alone and with the classifier combined; and its false alarms on an
   ordinary conversation: the 308 turns (user and assistant) of the personal-assistant
   script (:mod:`mars_core.bench.assistant_script`), which hold nothing sensitive.
3. **Restatements** (:func:`mars_core.privacy.semantic.restates`, with the texts'
   :class:`~mars_core.privacy.semantic.Anchors`), per embedder: on the held-out pairs,
   whether the second text is found to restate the first; and how many held-out ordinary
   statements would be held back against all the held-out sensitive ones at once. The
   same on the held-out pairs about one person (:data:`~mars_core.bench.privacy_corpus.
   SAME_SUBJECT_HELD_OUT`), as plain texts and as LangGraph items indexed whole
   (``{"text": ...}``, what ``MarsStore`` embeds by default).

Examples:
    >>> rows = detector_rows()
    >>> [r["detector"] for r in rows][:3], rows[-1]["detector"]
    (['card', 'email', 'iban'], 'all')
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from mars_core.bench.assistant_script import SESSIONS
from mars_core.bench.privacy_corpus import (
    DETECTOR_NEGATIVES,
    DETECTOR_POSITIVES,
    PARAPHRASE_HELD_OUT,
    SAME_SUBJECT_HELD_OUT,
    SEMANTIC_HELD_OUT,
)
from mars_core.bench.report import results_dir
from mars_core.embeddings import Embedder, HashingEmbedder
from mars_core.errors import ValidationError
from mars_core.nlp import Analyzer
from mars_core.privacy.detectors import PATTERN_KINDS, Detection, Kind, detect
from mars_core.privacy.semantic import Anchors, SemanticSensitivity, restates, semantic_for
from mars_core.privacy.semantic_examples import ORDINARY
from mars_core.privacy.sensitivity import SensitivityScorer
from mars_core.progress import ProgressFn, report

__all__ = ["EMBEDDERS", "as_item", "detector_rows", "embedder_named", "main", "pair_hits", "run",
           "semantic_rows"]

EMBEDDERS: Final = ("hashing", "minilm")
"""The embedders measured: the model-free default and all-MiniLM-L6-v2 (when installed)."""

_SIGMA: Final = 0.5
"""Sensitivity from which a statement counts as sensitive (private mode's default σ)."""


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def _covers(d: Detection, kind: Kind, start: int, end: int) -> bool:
    return d.kind is kind and d.start <= start and d.end >= end


def detector_rows() -> list[dict[str, Any]]:
    """Precision and recall of each pattern detector on the labelled corpus, then of all
    of them together (the ``all`` row)."""
    tp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    for text, kind, value in DETECTOR_POSITIVES:
        start = text.index(value)
        end = start + len(value)
        found = detect(text, kinds=PATTERN_KINDS)
        hit = any(_covers(d, kind, start, end) for d in found)
        (tp if hit else fn)[kind.value] += 1
        for d in found:
            if not _covers(d, kind, start, end):
                fp[d.kind.value] += 1
    for text in DETECTOR_NEGATIVES:
        for d in detect(text, kinds=PATTERN_KINDS):
            fp[d.kind.value] += 1
    rows = []
    for name in sorted(set(tp) | set(fn) | set(fp)):
        rows.append({"detector": name, "positives": tp[name] + fn[name], "tp": tp[name],
                     "fn": fn[name], "fp": fp[name],
                     "precision": _ratio(tp[name], tp[name] + fp[name]),
                     "recall": _ratio(tp[name], tp[name] + fn[name])})
    t, n, f = sum(tp.values()), sum(fn.values()), sum(fp.values())
    rows.append({"detector": "all", "positives": t + n, "tp": t, "fn": n, "fp": f,
                 "precision": _ratio(t, t + f), "recall": _ratio(t, t + n),
                 "negatives": len(DETECTOR_NEGATIVES)})
    return rows


def embedder_named(name: str) -> Embedder | None:
    """``hashing`` or ``minilm`` (None when MiniLM is not installed).

    Raises:
        ValidationError: another name.
    """
    if name == "hashing":
        return HashingEmbedder()
    if name != "minilm":
        raise ValidationError(f"embedder must be one of {', '.join(EMBEDDERS)}, not {name!r}")
    from mars_core.embedders import MINILM, SentenceTransformerEmbedder, minilm_installed

    return SentenceTransformerEmbedder(MINILM) if minilm_installed() else None


def _pr(flags: Sequence[bool], truth: Sequence[bool]) -> dict[str, Any]:
    f, t = np.asarray(flags, dtype=bool), np.asarray(truth, dtype=bool)
    tp, fp, fn = int((f & t).sum()), int((f & ~t).sum()), int((~f & t).sum())
    return {"tp": tp, "fp": fp, "fn": fn, "precision": _ratio(tp, tp + fp),
            "recall": _ratio(tp, tp + fn)}


def _kinds(model: SemanticSensitivity, texts: Sequence[str],
           vectors: np.ndarray[Any, Any]) -> list[frozenset[Kind]]:
    from mars_core.engine.guard import TOPIC_KINDS

    out = []
    for text, verdict in zip(texts, model.verdicts(vectors), strict=True):
        found = {d.kind for d in detect(text, kinds=TOPIC_KINDS)}
        if verdict.flagged:
            found.add(verdict.kind)
        out.append(frozenset(found))
    return out


def pair_hits(model: SemanticSensitivity, embedder: Embedder,
              pairs: Sequence[tuple[str, str, bool]]) -> list[bool]:
    """Per ``(memory, text, _)`` pair, whether ``text`` is found to restate ``memory``
    (vectors, sensitive kinds and :class:`~mars_core.privacy.semantic.Anchors`, as the
    store passes them)."""
    firsts = [a for a, _, _ in pairs]
    seconds = [b for _, b, _ in pairs]
    va = np.asarray(embedder.embed(firsts), dtype=np.float64)
    vb = np.asarray(embedder.embed(seconds), dtype=np.float64)
    ka, kb = _kinds(model, firsts, va), _kinds(model, seconds, vb)
    return [restates(vb[i:i + 1], [kb[i]], va[i:i + 1], [ka[i]], model.calibration,
                     anchors=[Anchors.of(seconds[i])],
                     reference_anchors=[Anchors.of(firsts[i])])[0] is not None
            for i in range(len(pairs))]


def as_item(text: str) -> str:
    """A text as ``MarsStore`` stores a LangGraph item ``{"text": text}`` indexed whole."""
    return json.dumps({"text": text}, sort_keys=True, ensure_ascii=False)


def _same_subject(model: SemanticSensitivity, embedder: Embedder) -> dict[str, Any]:
    truth = [r for *_, r in SAME_SUBJECT_HELD_OUT]
    items = [(as_item(a), as_item(b), r) for a, b, r in SAME_SUBJECT_HELD_OUT]
    return {"pairs": len(truth), "restatements": sum(truth),
            "texts": _pr(pair_hits(model, embedder, SAME_SUBJECT_HELD_OUT), truth),
            "items": _pr(pair_hits(model, embedder, items), truth)}


def semantic_rows(embedder: Embedder) -> dict[str, Any]:
    """The classifier's and the restatement test's figures on one embedder."""
    model = semantic_for(embedder)
    cal = model.calibration
    texts = [t for _, t in SEMANTIC_HELD_OUT]
    truth = [c != ORDINARY for c, _ in SEMANTIC_HELD_OUT]
    vecs = np.asarray(embedder.embed(texts), dtype=np.float64)
    verdicts = model.verdicts(vecs)
    scorer = SensitivityScorer(analyzer=Analyzer("rules", sentiment="lexicon"))
    lexical = [scorer.score(t).score >= _SIGMA for t in texts]
    combined = [scorer.score(t, semantic=v).score >= _SIGMA
                for t, v in zip(texts, verdicts, strict=True)]
    by_cat = {}
    for cat in sorted({c for c, _ in SEMANTIC_HELD_OUT} - {ORDINARY}):
        idx = [i for i, (c, _) in enumerate(SEMANTIC_HELD_OUT) if c == cat]
        by_cat[cat] = {"n": len(idx), "flagged": sum(verdicts[i].flagged for i in idx),
                       "category_right": sum(verdicts[i].flagged and verdicts[i].category == cat
                                             for i in idx)}
    chat = [text for session in SESSIONS for pair in session.turns for text in pair]
    chat_flags = [v.flagged for v in model.verdicts(embedder.embed(chat))]
    found = pair_hits(model, embedder, PARAPHRASE_HELD_OUT)
    sens = [i for i, t in enumerate(truth) if t]
    ordi = [i for i, t in enumerate(truth) if not t]
    kinds_all = _kinds(model, texts, vecs)
    held = restates(vecs[ordi], [kinds_all[i] for i in ordi], vecs[sens],
                    [kinds_all[i] for i in sens], cal,
                    anchors=[Anchors.of(texts[i]) for i in ordi],
                    reference_anchors=[Anchors.of(texts[i]) for i in sens])
    return {
        "embedder": embedder.name,
        "calibration": {"enabled": cal.enabled, "threshold": round(cal.threshold, 3),
                        "cv_precision": round(cal.cv_precision, 3),
                        "cv_recall": round(cal.cv_recall, 3),
                        "cv_false_positive_rate": round(cal.cv_false_positive_rate, 3),
                        "paraphrase_threshold": round(cal.paraphrase_threshold, 3),
                        "topic_threshold": round(cal.topic_threshold, 3)},
        "held_out": {"sensitive": len(sens), "ordinary": len(ordi),
                     "classifier": _pr([v.flagged for v in verdicts], truth),
                     "lexical_scorer": _pr(lexical, truth),
                     "combined_scorer": _pr(combined, truth),
                     "by_category": by_cat},
        "conversation": {"turns": len(chat), "flagged": sum(chat_flags)},
        "restatements": {"pairs": len(PARAPHRASE_HELD_OUT),
                         **_pr(found, [r for *_, r in PARAPHRASE_HELD_OUT]),
                         "ordinary_held_back": sum(h is not None for h in held),
                         "ordinary": len(ordi)},
        "same_subject": _same_subject(model, embedder),
    }


def run(embedders: Sequence[str] = EMBEDDERS,
        progress: ProgressFn | None = None) -> dict[str, Any]:
    """All three measurements (``progress``: stage ``embedders``)."""
    out: dict[str, Any] = {"detectors": detector_rows(), "semantic": [], "skipped": []}
    report(progress, "embedders", 0, len(embedders))
    for i, name in enumerate(embedders, 1):
        emb = embedder_named(name)
        if emb is None:
            out["skipped"].append(f"{name}: not installed (pip install 'mars-memory[semantic]')")
        else:
            out["semantic"].append(semantic_rows(emb))
        report(progress, "embedders", i, len(embedders))
    return out


def _fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def main(out: str | os.PathLike[str] | None = None, embedders: Sequence[str] = EMBEDDERS,
         progress: ProgressFn | None = None) -> dict[str, Any]:
    """Run, print the tables (and write ``privacy.json`` to ``out``, made before the run)."""
    folder = None if out is None else results_dir(out)
    res = run(embedders, progress)
    print("detector      positives  tp  fn  fp  precision  recall")
    for r in res["detectors"]:
        print(f"{r['detector']:<13} {r['positives']:>9} {r['tp']:>3} {r['fn']:>3} {r['fp']:>3}"
              f"  {_fmt(r['precision']):>9}  {_fmt(r['recall'])}")
    for s in res["semantic"]:
        c, h, p = s["calibration"], s["held_out"], s["restatements"]
        print(f"\n{s['embedder']}: classifier {'on' if c['enabled'] else 'off'}, threshold "
              f"{c['threshold']}, cross-validated precision {c['cv_precision']} recall "
              f"{c['cv_recall']} false alarms {c['cv_false_positive_rate']}")
        for key in ("classifier", "lexical_scorer", "combined_scorer"):
            print(f"  held-out {key:<16} precision {_fmt(h[key]['precision'])} "
                  f"recall {_fmt(h[key]['recall'])}  ({h['sensitive']} sensitive, "
                  f"{h['ordinary']} ordinary)")
        print(f"  false alarms on an ordinary conversation: {s['conversation']['flagged']}/"
              f"{s['conversation']['turns']} turns")
        print(f"  restatements: precision {_fmt(p['precision'])} recall {_fmt(p['recall'])} "
              f"on {p['pairs']} pairs; {p['ordinary_held_back']}/{p['ordinary']} ordinary "
              f"statements held back (thresholds {c['paraphrase_threshold']}/"
              f"{c['topic_threshold']})")
        same = s["same_subject"]
        for form in ("texts", "items"):
            print(f"  same person, as {form}: restatements found {same[form]['tp']}/"
                  f"{same['restatements']}, other facts flagged {same[form]['fp']}/"
                  f"{same['pairs'] - same['restatements']}")
    for note in res["skipped"]:
        print(f"\nskipped {note}")
    if folder is not None:
        (folder / "privacy.json").write_text(json.dumps(res, indent=1))
    return res
