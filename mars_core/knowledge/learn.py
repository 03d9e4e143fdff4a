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
   decision time: the text of the memory, whether the input just before it asked a
   question, its scores against the query, the query itself.

Feature vectors (:data:`RETENTION_FEATURES`, :data:`RETRIEVAL_FEATURES`) are fixed lists
of names; a model file records the list it was trained on and is refused, with the
difference named, by a caller computing another list (a model of an older feature set
must be retrained) or of the wrong kind. The Mixed-Score prior enters as a feature
(``[ψ_on; MS]``). The file also records how training re-weighted the classes
(:attr:`EvidenceModel.odds_scale`), so :meth:`EvidenceModel.evidence_probability` undoes
it (a calibrated P(evidence), what a cost-aware retention decision needs). A model trained
on LoCoMo (CC BY-NC) is never shipped in the package: train your own with ``mars learn``.

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
from mars_core.reading.retrieval import Hit, answerability, cue_score
from mars_core.scoring.mixed import Durability, label_durability
from mars_core.scoring.reward import RewardTerms

__all__ = [
    "MODEL_FORMAT",
    "RETENTION_FEATURES",
    "RETRIEVAL_FEATURES",
    "SELECTION_BASE_FEATURES",
    "SELECTION_FEATURES",
    "TEXT_FEATURES",
    "Decision",
    "EvidenceModel",
    "FeatureLog",
    "LearnConfig",
    "Row",
    "asks_question",
    "model_summary",
    "rerank",
    "retention_features",
    "retrieval_features",
    "strip_speaker",
    "text_features",
    "train",
    "train_matrix",
]

Kind = Literal["retention", "retrieval", "selection"]
FloatArray = npt.NDArray[np.float64]

MODEL_FORMAT = "mars-evidence-learner/2"
"""Format of a saved model (``/1`` files, without :attr:`EvidenceModel.odds_scale`, still
load when their features match)."""

TEXT_FEATURES: tuple[str, ...] = (
    "log_words", "digits", "capitals", "question", "photo", "phatic", "stable", "temporal",
    "first_person", "exclaim",
)
"""Features of a memory's text alone (:func:`text_features`)."""

RETENTION_FEATURES: tuple[str, ...] = (
    *TEXT_FEATURES, "names", "event_verbs", "self_rate", "you_rate", "reaction_rate",
    "time_refs", "after_question",
)
"""Features known when a memory is written (retention decisions): its text, plus whether
the input just before it asked a question (an answer is more often evidence)."""

RETRIEVAL_FEATURES: tuple[str, ...] = (
    "dense", "dense_rel", "lexical", "entity", "speaker", "temporal_match", "cue",
    "mixed_prior", *TEXT_FEATURES,
)
"""Features of a (query, memory) pair at retrieval time, plus the memory's text features."""

SELECTION_BASE_FEATURES: tuple[str, ...] = (
    "recency", "question", "entity", "session", "speaker", "cost", "dense", "lexical",
    *TEXT_FEATURES,
)
"""ψ_on of seed 001 §3.4/§4.1 for a budgeted selection at a query: the Mixed-Score's
signals (recency ratio, question overlap, entity overlap, session locality, speaker
bonus), the cost ``s_i/B_t``, semantic and lexical overlap with the query, and the
memory's text features. The freshness proxy is left out (§4.1 evaluates the learner
without it); answer overlap is offline-only and never a feature."""

SELECTION_FEATURES: tuple[str, ...] = (*SELECTION_BASE_FEATURES, "mixed_prior")
"""φ_full = [ψ_on; MS] (seed 001 §3.4): ψ_on plus the Mixed-Score of the memory at the
budget B_t. A model on :data:`SELECTION_BASE_FEATURES` alone is the "w/o prior"
ablation (§4.3)."""

_SPEAKER = re.compile(r"^\s*[\w' \-]{1,40}:")
_FIRST = re.compile(r"\b(i|i'm|i've|my|me|mine|we|our)\b", re.I)
_TEMPORAL = re.compile(r"\b(yesterday|today|tomorrow|last|next|ago|week|month|year|"
                       r"weekend|\d{4})\b", re.I)
_NAME = re.compile(r"\b[A-Z][a-z]+")
_EVENT = re.compile(r"\b(just|went|started|got|bought|took|joined|signed|made|finished|"
                    r"adopted|moved|visited|tried|learned|found|won|ran|painted|lost|met|"
                    r"had|did|gave|received|attended|decided)\b", re.I)
_SELF = re.compile(r"\b(i|i'm|i've|i'd|my|me|we|our|us)\b", re.I)
_YOU = re.compile(r"\b(you|your|you're|you've)\b", re.I)
_REACTION = re.compile(r"\b(wow|awesome|amazing|great|cool|congrats|proud|glad|love|nice|"
                       r"sounds|thanks|thank)\b", re.I)
_TIME_REF = re.compile(r"\b(yesterday|today|tonight|tomorrow|last (week|weekend|month|year|"
                       r"night|friday|saturday|sunday)|next (week|weekend|month|year)|ago|"
                       r"this (week|weekend|month|year)|recently|lately)\b", re.I)


def strip_speaker(text: str) -> str:
    """The text without a ``"Name:"`` speaker prefix.

    Examples:
        >>> strip_speaker("Ana: I moved to Lisbon"), strip_speaker("no prefix here")
        (' I moved to Lisbon', 'no prefix here')
    """
    return text.split(":", 1)[1] if _SPEAKER.match(text) else text


_body = strip_speaker


def asks_question(text: str) -> bool:
    """Whether a text (an input such as a dialogue turn) asks a question.

    Examples:
        >>> asks_question("Bo: how long have you been married?"), asks_question("Ana: 5 years")
        (True, False)
    """
    return "?" in _body(text)


def text_features(text: str) -> dict[str, float]:
    """Online-observable features of a memory's text alone (deterministic).

    Examples:
        >>> f = text_features("Ana: I moved to Lisbon in 2021!")
        >>> f["digits"], f["first_person"], f["exclaim"]
        (1.0, 1.0, 1.0)
    """
    body = _body(text)
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


def retention_features(text: str, *, after_question: bool = False) -> dict[str, float]:
    """Features of a memory when it is written (deterministic, online-observable).

    The :func:`text_features`, plus: names (log count of capitalised words after the
    first), the rates per word of life-event verbs, first-person and second-person words
    and reaction words ("wow", "congrats", ...), the count of time references
    ("yesterday", "last week", ...), and ``after_question``: the input just before this
    one asked a question (:func:`asks_question`) — the policy knows it because it sees
    every insert in order.

    Examples:
        >>> f = retention_features("Ana: we met in Lisbon about 5 years ago",
        ...                        after_question=True)
        >>> f["after_question"], f["event_verbs"], f["names"] > 0, f["time_refs"]
        (1.0, 0.125, True, 1.0)
        >>> retention_features("Bo: wow, congrats!")["reaction_rate"]
        1.0
    """
    body = _body(text)
    words = body.split()
    n = max(1, len(words))
    return {
        **text_features(text),
        "names": math.log1p(len(_NAME.findall(" ".join(words[1:])))),
        "event_verbs": len(_EVENT.findall(body)) / n,
        "self_rate": len(_SELF.findall(body)) / n,
        "you_rate": len(_YOU.findall(body)) / n,
        "reaction_rate": len(_REACTION.findall(body)) / n,
        "time_refs": float(sum(1 for _ in _TIME_REF.finditer(body))),
        "after_question": float(after_question),
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
        base: precomputed :func:`text_features` of ``text`` (or a superset such as
            :func:`retention_features`; saves time).

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
        **({n: base[n] for n in TEXT_FEATURES} if base is not None
           else text_features(text)),
    }


@dataclass(frozen=True)
class Row:
    """One logged decision: the kind, the feature values and the evidence label."""

    kind: Kind
    features: Mapping[str, float]
    label: int


@dataclass(frozen=True)
class Decision:
    """One retention decision of the training trace and its realised reward (seed 001 §3.2).

    Attributes:
        step: the decision's index in the trace (a query, a trigger).
        policy: the policy that decided (e.g. ``"mixed-score"`` during the cold start).
        budget: B_t in tokens.
        retained: |A_t|.
        reward: :meth:`mars_core.scoring.reward.RewardTerms.as_dict` (T_hit, T_miss,
            T_reacq, T_stale, F_t, stored tokens, raw and shifted r_t).
    """

    step: int
    policy: str
    budget: float
    retained: int
    reward: Mapping[str, float]


_REWARD_KEYS = ("hit", "miss", "reacq", "stale", "full", "stored", "raw", "shifted")


@dataclass
class FeatureLog:
    """Rows of logged decisions (Algorithm 1, line 14); saved as JSON lines.

    Besides the per-memory feature rows, the log keeps one :class:`Decision` per
    retention decision with its reward terms (:meth:`log_decision`), so a training
    trace says what each decision earned under the §3.2 reward.

    Examples:
        >>> from mars_core.scoring.reward import step_reward
        >>> log = FeatureLog()
        >>> log.add("retention", retention_features("Ana: hi"), 0)
        >>> len(log.rows("retention")), len(log.rows("retrieval"))
        (1, 0)
        >>> log.log_decision(0, "mixed-score", 32, 1, step_reward(["a"], {"a": 8}, {"a": 8}))
        >>> log.decisions[0].reward["raw"]
        88.0
    """

    items: list[Row] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)

    def log_decision(self, step: int, policy: str, budget: float, retained: int,
                     reward: RewardTerms | Mapping[str, float]) -> None:
        """Log one retention decision with its reward terms.

        Raises:
            ValidationError: a negative step, budget or count, or reward terms missing.
        """
        terms = reward.as_dict() if isinstance(reward, RewardTerms) else dict(reward)
        lacking = [k for k in _REWARD_KEYS if k not in terms]
        if lacking or step < 0 or retained < 0 or not budget >= 0:
            raise ValidationError(f"bad decision: step {step}, budget {budget}, retained "
                                  f"{retained}, reward terms lacking {lacking}")
        self.decisions.append(Decision(int(step), str(policy), float(budget), int(retained),
                                       {k: float(terms[k]) for k in _REWARD_KEYS}))

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
        """Write the rows and decisions as JSON lines (numbers only, never text)."""
        with Path(path).open("w", encoding="utf-8") as fh:
            for r in self.items:
                fh.write(json.dumps({"kind": r.kind, "features": dict(r.features),
                                     "label": r.label}) + "\n")
            for d in self.decisions:
                fh.write(json.dumps({"kind": "decision", "step": d.step, "policy": d.policy,
                                     "budget": d.budget, "retained": d.retained,
                                     "reward": dict(d.reward)}) + "\n")

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
                if not line.strip():
                    continue
                rec = json.loads(line)
                if rec["kind"] == "decision":
                    log.log_decision(rec["step"], rec["policy"], rec["budget"],
                                     rec["retained"], rec["reward"])
                else:
                    log.add(rec["kind"], rec["features"], rec["label"])
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValidationError(f"cannot read feature log {path}: {exc}") from exc
        return log


def _names(kind: str) -> tuple[str, ...]:
    if kind == "retention":
        return RETENTION_FEATURES
    if kind == "retrieval":
        return RETRIEVAL_FEATURES
    if kind == "selection":
        return SELECTION_FEATURES
    raise ValidationError(f"unknown kind {kind!r}; use 'retention', 'retrieval' or "
                          "'selection'")


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

    ``predict`` gives the network's P(evidence) for rows of features in :attr:`names`
    order — a score, inflated by the positive class weight and the negative down-sampling
    of training; ``evidence_probability`` undoes both through :attr:`odds_scale` (the
    true odds are the network's odds times ``odds_scale``).

    Examples:
        >>> d = len(RETENTION_FEATURES)
        >>> m = EvidenceModel("retention", RETENTION_FEATURES, np.zeros(d), np.ones(d),
        ...                   np.zeros((d, 2)), np.zeros(2), np.zeros(2), 0.0, 0.25)
        >>> m.predict_one(retention_features("Ana: hi"))
        0.5
        >>> m.evidence_probability(m.matrix([retention_features("Ana: hi")])).tolist()
        [0.2]
    """

    kind: Kind
    names: tuple[str, ...]
    mean: FloatArray
    std: FloatArray
    w1: FloatArray
    b1: FloatArray
    w2: FloatArray
    b2: float
    odds_scale: float = 1.0

    def matrix(self, rows: Sequence[Mapping[str, float]]) -> FloatArray:
        """Feature rows as a matrix in this model's order."""
        return np.array([[r[n] for n in self.names] for r in rows], dtype=np.float64)

    def predict(self, x: FloatArray) -> FloatArray:
        """The network's P(evidence) of each row of ``x`` (a ranking score)."""
        h = np.tanh(((x - self.mean) / self.std) @ self.w1 + self.b1)
        return np.asarray(_sigmoid(h @ self.w2 + self.b2), dtype=np.float64)

    def predict_one(self, features: Mapping[str, float]) -> float:
        """The network's P(evidence) of one feature mapping."""
        return float(self.predict(self.matrix([features]))[0])

    def evidence_probability(self, x: FloatArray) -> FloatArray:
        """P(evidence) of each row with training's class re-weighting undone."""
        p = self.predict(x)
        odds = self.odds_scale * p / np.maximum(1.0 - p, 1e-12)
        return np.asarray(odds / (1.0 + odds), dtype=np.float64)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the frozen weights as JSON."""
        doc = {"format": MODEL_FORMAT, "kind": self.kind,
               "names": list(self.names), "b2": self.b2, "odds_scale": self.odds_scale,
               **{k: getattr(self, k).tolist() for k in ("mean", "std", "w1", "b1", "w2")}}
        Path(path).write_text(json.dumps(doc), encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str], kind: Kind | None = None) -> EvidenceModel:
        """Read a model written by :meth:`save`.

        Raises:
            ValidationError: missing or malformed file, an unknown format, a model of
                another kind, or one trained on another feature list (e.g. by an older
                version: the message names the features that differ; retrain it).
        """
        try:
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
            fmt = doc.get("format")
            names = tuple(doc["names"])
            arr = {k: np.asarray(doc[k], dtype=np.float64)
                   for k in ("mean", "std", "w1", "b1", "w2")}
            model = cls(doc["kind"], names, arr["mean"], arr["std"], arr["w1"], arr["b1"],
                        arr["w2"], float(doc["b2"]), float(doc.get("odds_scale", 1.0)))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError,
                AttributeError) as exc:
            raise ValidationError(f"cannot read evidence model {path}: {exc}") from exc
        if fmt not in ("mars-evidence-learner/1", MODEL_FORMAT):
            raise ValidationError(f"{path}: unknown evidence model format {fmt!r}")
        if kind is not None and model.kind != kind:
            raise ValidationError(f"{path} holds a {model.kind} model, not a {kind} model")
        expected = _names(model.kind)
        if model.kind == "selection" and names == SELECTION_BASE_FEATURES:
            expected = names  # the "w/o prior" ablation
        if names != expected:
            missing = [n for n in expected if n not in names]
            unknown = [n for n in names if n not in expected]
            raise ValidationError(
                f"{path}: a {model.kind} model trained on other features than this version "
                f"computes (missing {missing}, unknown {unknown}"
                f"{', other order' if not missing and not unknown else ''}); "
                "retrain it with `mars learn` on a log of the current features")
        d = (len(names),)
        if model.w1.shape != (len(names), len(model.b1)) or model.w2.shape != model.b1.shape \
                or model.mean.shape != d or model.std.shape != d \
                or not model.odds_scale > 0:
            raise ValidationError(f"{path}: weight shapes or odds scale do not match")
        return model


def _sigmoid(z: FloatArray) -> FloatArray:
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(z, -30, 30))), dtype=np.float64)


def train(rows: Sequence[Row], *, kind: Kind, config: LearnConfig | None = None
          ) -> EvidenceModel:
    """Fit the evidence learner on logged rows (weighted BCE, Adam, seed 001 §4.1).

    Raises:
        ValidationError: no rows of ``kind``, or only one class.
    """
    names = _names(kind)
    mine = [r for r in rows if r.kind == kind]
    y = np.array([r.label for r in mine], dtype=np.float64)
    x = np.array([[r.features[n] for n in names] for r in mine], dtype=np.float64)
    return train_matrix(x.reshape(len(mine), len(names)), y, kind=kind, names=names,
                        config=config)


def train_matrix(x: FloatArray, y: FloatArray, *, kind: Kind, names: Sequence[str],
                 config: LearnConfig | None = None) -> EvidenceModel:
    """Fit the evidence learner on a feature matrix (columns in ``names`` order).

    The same fit as :func:`train`, for callers that build features in bulk (the Table 2
    reproduction: every memory of the pool at every query). ``y`` holds the 0/1 labels:
    evidence membership for OSL-MR, the teacher's selection for the BC-learner.

    Raises:
        ValidationError: shapes that do not match, labels other than 0/1, or one class.

    Examples:
        >>> x = np.array([[0.0], [1.0]] * 10)
        >>> m = train_matrix(x, np.array([0.0, 1.0] * 10), kind="retrieval", names=["a"])
        >>> bool(m.predict(np.array([[1.0]]))[0] > m.predict(np.array([[0.0]]))[0])
        True
    """
    cfg = config or LearnConfig()
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    if x.ndim != 2 or x.shape != (len(y), len(names)):
        raise ValidationError(f"x must be ({len(y)}, {len(names)}), got {x.shape}")
    if len(y) == 0 or not np.isin(y, (0.0, 1.0)).all() or y.min() == y.max():
        raise ValidationError(f"training needs {kind} rows of both labels (0/1)")
    rng = np.random.default_rng(cfg.seed)
    x, y, kept = _downsample(x, y, cfg.neg_per_pos, rng)
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std < 1e-9] = 1.0
    params = _fit((x - mean) / std, y, cfg, rng)
    return EvidenceModel(kind, tuple(names), mean, std, params[0], params[1], params[2],
                         float(params[3][0]), odds_scale=kept / cfg.pos_weight)


def _downsample(x: FloatArray, y: FloatArray, ratio: float, rng: np.random.Generator
                ) -> tuple[FloatArray, FloatArray, float]:
    """Keep every positive and at most ``ratio`` negatives per positive; also returns the
    share of negatives kept (for the calibration)."""
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    keep = int(min(len(neg), math.ceil(ratio * len(pos))))
    idx = np.sort(np.concatenate([pos, rng.choice(neg, keep, replace=False)]))
    return x[idx], y[idx], keep / len(neg)


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
    """A JSON-able description (kind, features, hidden units, odds scale) for reports."""
    return {"kind": model.kind, "features": list(model.names), "hidden": len(model.b1),
            "odds_scale": model.odds_scale}
