"""OSL-MR's evidence learner and its staged deployment (seed 001 §3.4, Algorithm 1).

1. **Log** online-observable features of retention and retrieval decisions
   (:class:`FeatureLog`). Labels are evidence membership: from benchmark gold evidence, or
   in production from the Recognizer's credit (``store.credit(used, offered)``; log the
   same pair with :meth:`FeatureLog.log_hits`).
2. **Train** offline (:func:`train`): a single-hidden-layer MLP, 16 hidden units, sigmoid
   output, 12 epochs, learning rate 0.03, L2 1e-4, positive class weight 4.0, negatives
   down-sampled to 6 per positive, seed 17 (seed 001 §4.1), on standardised features.
3. **Deploy frozen** (:class:`EvidenceModel`, plain numpy weights in JSON): as a retention
   policy (``policy="learned"`` with ``path=...``, :mod:`mars_core.policies.learned`) and as
   a retrieval reranker (:func:`rerank`). Only online-observable inputs are used at
   decision time: the text of the memory, its scores against the query, the query itself.

Feature vectors (:data:`RETENTION_FEATURES`, :data:`RETRIEVAL_FEATURES`) are fixed lists
of names; a model file records the list it was trained on and is refused by the wrong kind
of caller. The Mixed-Score prior enters as a feature (``[ψ_on; MS]``). A model trained on
LoCoMo (CC BY-NC) is never shipped in the package: train your own with ``mars learn``.

Examples:
    >>> log = FeatureLog()
    >>> for i in range(40):
    ...     text = f"Ana: I adopted a dog in {2000 + i}" if i % 4 == 0 else "Bo: haha ok"
    ...     log.add("retention", retention_features(text), int(i % 4 == 0))
    >>> model = train(log.rows("retention"), kind="retention")
    >>> p = model.predict_one(retention_features("Ana: we moved to Lisbon in 2021"))
    >>> q = model.predict_one(retention_features("Bo: lol"))
    >>> bool(p > q)
    True
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mars_core.errors import ValidationError
from mars_core.retrieval import Hit, answerability, cue_score
from mars_core.scoring.mixed import Durability, label_durability

__all__ = [
    "RETENTION_FEATURES",
    "RETRIEVAL_FEATURES",
    "EvidenceModel",
    "FeatureLog",
    "LearnConfig",
    "Row",
    "model_summary",
    "rerank",
    "retention_features",
    "retrieval_features",
    "train",
]

Kind = Literal["retention", "retrieval"]
FloatArray = npt.NDArray[np.float64]

RETENTION_FEATURES: tuple[str, ...] = (
    "log_words", "digits", "capitals", "question", "photo", "phatic", "stable", "temporal",
    "first_person", "exclaim",
)
"""Features of a memory alone, known when it is written (retention decisions)."""

RETRIEVAL_FEATURES: tuple[str, ...] = (
    "dense", "dense_rel", "lexical", "entity", "speaker", "temporal_match", "cue",
    "mixed_prior", *RETENTION_FEATURES,
)
"""Features of a (query, memory) pair at retrieval time, plus the memory's own."""

_FIRST = re.compile(r"\b(i|i'm|i've|my|me|mine|we|our)\b", re.I)
_TEMPORAL = re.compile(r"\b(yesterday|today|tomorrow|last|next|ago|week|month|year|"
                       r"weekend|\d{4})\b", re.I)


def retention_features(text: str) -> dict[str, float]:
    """Online-observable features of a memory's text (deterministic).

    Examples:
        >>> f = retention_features("Ana: I moved to Lisbon in 2021!")
        >>> f["digits"], f["first_person"], f["exclaim"]
        (1.0, 1.0, 1.0)
    """
    body = text.split(":", 1)[1] if re.match(r"^\s*[\w' \-]{1,40}:", text) else text
    words = body.split()
    n = max(1, len(words))
    return {
        "log_words": math.log1p(len(words)),
        "digits": float(any(c.isdigit() for c in body)),
        "capitals": sum(w[:1].isupper() for w in words[1:]) / n,
        "question": float("?" in body),
        "photo": float("[shares a photo:" in body),
        "phatic": answerability("", text).phatic,
        "stable": float(label_durability(body) is Durability.STABLE),
        "temporal": float(_TEMPORAL.search(body) is not None),
        "first_person": float(_FIRST.search(body) is not None),
        "exclaim": float("!" in body),
    }


def retrieval_features(query: str, text: str, *, dense: float, dense_top: float,
                       lexical: float, mixed_prior: float = 0.0,
                       speaker: str | None = None,
                       base: Mapping[str, float] | None = None) -> dict[str, float]:
    """Features of one candidate for one query.

    Args:
        query: the question.
        text: the memory's content.
        dense: cosine similarity to the query.
        dense_top: the best cosine among the candidates (for ``dense_rel``).
        lexical: BM25 score normalised by the best candidate's, in [0, 1].
        mixed_prior: the Mixed-Score prior of the memory (seed 001 §3.3), when known.
        speaker: the memory's speaker when not written as a ``"Name:"`` prefix.
        base: precomputed :func:`retention_features` of ``text`` (saves time).

    Examples:
        >>> f = retrieval_features("Where does Ana live?", "Ana: in Lisbon",
        ...                        dense=0.5, dense_top=0.5, lexical=1.0)
        >>> f["dense_rel"], f["speaker"]
        (1.0, 1.0)
    """
    a = answerability(query, text, speaker)
    return {
        "dense": dense,
        "dense_rel": dense / dense_top if dense_top > 0 else 0.0,
        "lexical": lexical,
        "entity": a.entity,
        "speaker": a.speaker,
        "temporal_match": a.temporal,
        "cue": cue_score(a),
        "mixed_prior": mixed_prior,
        **(base if base is not None else retention_features(text)),
    }


@dataclass(frozen=True)
class Row:
    """One logged decision: the kind, the feature values and the evidence label."""

    kind: Kind
    features: Mapping[str, float]
    label: int


@dataclass
class FeatureLog:
    """Rows of logged decisions (Algorithm 1, line 14); saved as JSON lines.

    Examples:
        >>> log = FeatureLog()
        >>> log.add("retention", retention_features("Ana: hi"), 0)
        >>> len(log.rows("retention")), len(log.rows("retrieval"))
        (1, 0)
    """

    items: list[Row] = field(default_factory=list)

    def add(self, kind: Kind, features: Mapping[str, float], label: int) -> None:
        """Log one decision.

        Raises:
            ValidationError: unknown kind, missing features or a label other than 0/1.
        """
        names = _names(kind)
        missing = [n for n in names if n not in features]
        if missing:
            raise ValidationError(f"{kind} row lacks features {missing}")
        if label not in (0, 1):
            raise ValidationError("label must be 0 or 1")
        self.items.append(Row(kind, {n: float(features[n]) for n in names}, int(label)))

    def log_hits(self, query: str, hits: Sequence[Hit], used: Iterable[str]) -> None:
        """Log a retrieval with the Recognizer's credit: hits in ``used`` are positives."""
        used_ids = set(used)
        top = max((h.dense for h in hits), default=0.0)
        for h in hits:
            self.add("retrieval", retrieval_features(query, h.text, dense=h.dense,
                                                     dense_top=top, lexical=h.lexical),
                     int(h.id in used_ids))

    def rows(self, kind: Kind) -> list[Row]:
        """The rows of one kind."""
        return [r for r in self.items if r.kind == kind]

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the rows as JSON lines (features and labels only, never text)."""
        with Path(path).open("w", encoding="utf-8") as fh:
            for r in self.items:
                fh.write(json.dumps({"kind": r.kind, "features": dict(r.features),
                                     "label": r.label}) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> FeatureLog:
        """Read rows written by :meth:`save`.

        Raises:
            ValidationError: missing file or malformed line.
        """
        log = cls()
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
            for line in lines:
                if line.strip():
                    rec = json.loads(line)
                    log.add(rec["kind"], rec["features"], rec["label"])
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValidationError(f"cannot read feature log {path}: {exc}") from exc
        return log


def _names(kind: str) -> tuple[str, ...]:
    if kind == "retention":
        return RETENTION_FEATURES
    if kind == "retrieval":
        return RETRIEVAL_FEATURES
    raise ValidationError(f"unknown kind {kind!r}; use 'retention' or 'retrieval'")


@dataclass(frozen=True)
class LearnConfig:
    """Hyper-parameters of the evidence learner (seed 001 §4.1 defaults).

    Examples:
        >>> LearnConfig().hidden, LearnConfig().epochs
        (16, 12)
    """

    hidden: int = 16
    epochs: int = 12
    lr: float = 0.03
    l2: float = 1e-4
    pos_weight: float = 4.0
    neg_per_pos: float = 6.0
    seed: int = 17
    batch: int = 64


@dataclass(frozen=True)
class EvidenceModel:
    """A frozen evidence learner: standardisation plus a 1-hidden-layer MLP.

    ``predict`` gives P(evidence) for rows of features in :attr:`names` order.

    Examples:
        >>> m = EvidenceModel("retention", RETENTION_FEATURES, np.zeros(10), np.ones(10),
        ...                   np.zeros((10, 2)), np.zeros(2), np.zeros(2), 0.0)
        >>> m.predict_one(retention_features("Ana: hi"))
        0.5
    """

    kind: Kind
    names: tuple[str, ...]
    mean: FloatArray
    std: FloatArray
    w1: FloatArray
    b1: FloatArray
    w2: FloatArray
    b2: float

    def matrix(self, rows: Sequence[Mapping[str, float]]) -> FloatArray:
        """Feature rows as a matrix in this model's order."""
        return np.array([[r[n] for n in self.names] for r in rows], dtype=np.float64)

    def predict(self, x: FloatArray) -> FloatArray:
        """P(evidence) of each row of ``x``."""
        h = np.tanh(((x - self.mean) / self.std) @ self.w1 + self.b1)
        return np.asarray(_sigmoid(h @ self.w2 + self.b2), dtype=np.float64)

    def predict_one(self, features: Mapping[str, float]) -> float:
        """P(evidence) of one feature mapping."""
        return float(self.predict(self.matrix([features]))[0])

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the frozen weights as JSON."""
        doc = {"format": "mars-evidence-learner/1", "kind": self.kind,
               "names": list(self.names), "b2": self.b2,
               **{k: getattr(self, k).tolist() for k in ("mean", "std", "w1", "b1", "w2")}}
        Path(path).write_text(json.dumps(doc), encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str], kind: Kind | None = None) -> EvidenceModel:
        """Read a model written by :meth:`save`.

        Raises:
            ValidationError: missing or malformed file, or a model of another kind.
        """
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
            names = tuple(doc["names"])
            arr = {k: np.asarray(doc[k], dtype=np.float64)
                   for k in ("mean", "std", "w1", "b1", "w2")}
            model = cls(doc["kind"], names, arr["mean"], arr["std"], arr["w1"], arr["b1"],
                        arr["w2"], float(doc["b2"]))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValidationError(f"cannot read evidence model {path}: {exc}") from exc
        if names != _names(model.kind) or model.w1.shape != (len(names), len(model.b1)) \
                or model.w2.shape != model.b1.shape:
            raise ValidationError(f"{path}: features or weight shapes do not match")
        if kind is not None and model.kind != kind:
            raise ValidationError(f"{path} holds a {model.kind} model, not a {kind} model")
        return model


def _sigmoid(z: FloatArray) -> FloatArray:
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -30, 30))), dtype=np.float64)


def train(rows: Sequence[Row], *, kind: Kind, config: LearnConfig | None = None
          ) -> EvidenceModel:
    """Fit the evidence learner on logged rows (weighted BCE, Adam, seed 001 §4.1).

    Raises:
        ValidationError: no rows of ``kind``, or only one class.
    """
    cfg = config or LearnConfig()
    names = _names(kind)
    mine = [r for r in rows if r.kind == kind]
    y = np.array([r.label for r in mine], dtype=np.float64)
    if len(mine) == 0 or y.min() == y.max():
        raise ValidationError(f"training needs {kind} rows of both labels")
    x = np.array([[r.features[n] for n in names] for r in mine], dtype=np.float64)
    rng = np.random.default_rng(cfg.seed)
    x, y = _downsample(x, y, cfg.neg_per_pos, rng)
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std < 1e-9] = 1.0
    params = _fit((x - mean) / std, y, cfg, rng)
    return EvidenceModel(kind, names, mean, std, params[0], params[1], params[2],
                         float(params[3][0]))


def _downsample(x: FloatArray, y: FloatArray, ratio: float, rng: np.random.Generator
                ) -> tuple[FloatArray, FloatArray]:
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    keep = int(min(len(neg), math.ceil(ratio * len(pos))))
    idx = np.sort(np.concatenate([pos, rng.choice(neg, keep, replace=False)]))
    return x[idx], y[idx]


def _fit(x: FloatArray, y: FloatArray, cfg: LearnConfig, rng: np.random.Generator
         ) -> list[FloatArray]:
    d = x.shape[1]
    params = [rng.normal(0, 1 / math.sqrt(d), (d, cfg.hidden)), np.zeros(cfg.hidden),
              rng.normal(0, 1 / math.sqrt(cfg.hidden), cfg.hidden), np.zeros(1)]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    t = 0
    for _ in range(cfg.epochs):
        order = rng.permutation(len(y))
        for start in range(0, len(y), cfg.batch):
            b = order[start:start + cfg.batch]
            grads = _grads(params, x[b], y[b], cfg)
            t += 1
            for i, g in enumerate(grads):  # Adam
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                params[i] -= cfg.lr * (m[i] / (1 - 0.9 ** t)) / (
                    np.sqrt(v[i] / (1 - 0.999 ** t)) + 1e-8)
    return params


def _grads(params: list[FloatArray], x: FloatArray, y: FloatArray, cfg: LearnConfig
           ) -> list[FloatArray]:
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    p = _sigmoid(h @ w2 + b2[0])
    weight = np.where(y == 1, cfg.pos_weight, 1.0)
    dz = weight * (p - y) / len(y)
    dh = np.outer(dz, w2) * (1 - h * h)
    return [x.T @ dh + cfg.l2 * w1, dh.sum(axis=0), h.T @ dz + cfg.l2 * w2,
            np.array([dz.sum()])]


def rerank(model: EvidenceModel, query: str, hits: Sequence[Hit]) -> list[Hit]:
    """Reorder retrieved hits by the frozen model's P(evidence) (the retrieval reranker).

    The score of each returned hit is the model's probability; ties keep the input order.

    Raises:
        ValidationError: ``model`` is not a retrieval model.
    """
    if model.kind != "retrieval":
        raise ValidationError("rerank needs a retrieval model (kind='retrieval')")
    if not hits:
        return []
    top = max(h.dense for h in hits)
    x = model.matrix([retrieval_features(query, h.text, dense=h.dense, dense_top=top,
                                         lexical=h.lexical) for h in hits])
    p = model.predict(x)
    order = sorted(range(len(hits)), key=lambda i: (-p[i], i))
    return [Hit(hits[i].node, float(p[i]), hits[i].dense, hits[i].lexical, hits[i].archived)
            for i in order]


def model_summary(model: EvidenceModel) -> dict[str, Any]:
    """A JSON-able description (kind, features, hidden units) for reports."""
    return {"kind": model.kind, "features": list(model.names), "hidden": len(model.b1)}
