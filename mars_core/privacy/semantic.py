"""Embedding-level sensitivity, and restatements of sensitive memories (seed 000 §4.3, §5.4).

Seed 000 initialises a memory's sensitivity from "rule-based detectors ..., named-entity
recognition ..., and embedding-level classifiers for categories such as health, finance,
or protected attributes", and checks output in two passes, "a fast pass over the surface
form ... followed by a semantic pass". This module is the embedding-level part of both.

**The classifier** (:class:`SemanticSensitivity`) is a multinomial logistic regression on
the store's own embeddings, fitted on the labelled statements of
:mod:`mars_core.privacy.semantic_examples` (seven sensitive categories and ordinary
statements): L2-regularised (``λ = 0.003``), classes reweighted so that sensitive and
ordinary statements weigh the same, Nesterov-accelerated full-batch gradient descent from zero
weights with a step of ``1/L`` (``L`` the loss's smoothness bound) for a fixed number of
steps — numpy only, deterministic. ``P(sensitive) = 1 − P(ordinary)``; the category is the likeliest
sensitive class.

**Calibration** is per embedder, by 5-fold cross-validation on the same statements (fold
``i`` holds every fifth statement): the threshold is the lowest at which at most 2 % of
the ordinary statements are flagged. A false-alarm *rate* rather than a precision,
because in a conversation ordinary turns far outnumber sensitive ones, and each false
alarm raises an ordinary memory's sensitivity (private mode hides it, policies penalise
it). When the recall at that threshold is below one half (:data:`MIN_RECALL`), the
classifier is **disabled**: it flags nothing. Random or constant vectors cannot carry the
signal at all, and a lexical embedder (the hashing one: 0.14) sees words, not meaning,
and labels conversation text by its surface (a self-introduction as sexuality).
Measured (``mars bench privacy``) on the held-out statements of
:mod:`mars_core.bench.privacy_corpus` and on the 308 turns of the personal-assistant
script, which hold nothing sensitive: all-MiniLM-L6-v2 is a good classifier; the hashing
embedder's is off (docs/benchmarks/reproductions.md).

**Restatements** (:func:`restates`): a text restates a sensitive memory when their
embeddings' cosine reaches ``paraphrase_threshold`` and they share a word beyond their
subject's name (:class:`Anchors`: short facts about one person are close by the name
alone), or when both fall in the same sensitive category (by this classifier or by the
lexicons) and the cosine reaches ``topic_threshold``. The cosine is taken after
subtracting the mean embedding of the fitting statements (the common direction that
function words and sentence shape share; Mu & Viswanath's "all-but-the-top", its first
step): on the held-out pairs it lifts the hashing embedder's recall of paraphrases from
0.50 to 0.75 at the same rate of ordinary statements held back. Both thresholds are
calibrated on the embedder too, against what must be let through: for each ordinary
statement of the fitting set, its highest (centred) cosine to any sensitive one;
``paraphrase_threshold`` is the 95th percentile of those (at most one ordinary statement
in twenty is held back against all the sensitive statements at once) and
``topic_threshold`` their median.

Examples:
    >>> from mars_core.embeddings import HashingEmbedder
    >>> model = SemanticSensitivity.fit(HashingEmbedder(dim=64))
    >>> model.calibration.enabled in (True, False), model.categories[-1]
    (True, 'ordinary')
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import weakref
from collections import OrderedDict
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from threading import Lock
from typing import Final

import numpy as np
import numpy.typing as npt

from mars_core.embeddings import Embedder
from mars_core.errors import ValidationError
from mars_core.knowledge.extract import NON_NAMES
from mars_core.nlp.rules import content_word, token_spans
from mars_core.nlp.rules import tokenize as rule_tokens
from mars_core.privacy.detectors import Detection, Kind
from mars_core.privacy.semantic_examples import CATEGORIES, ORDINARY, TRAIN
from mars_core.reading.analysis import terms as stems

__all__ = [
    "CATEGORY_KIND",
    "FITS",
    "L2",
    "MAX_FALSE_POSITIVE_RATE",
    "MIN_RECALL",
    "PROBE_TOLERANCE",
    "SUBJECT_STAND_INS",
    "Anchors",
    "Calibration",
    "FitKey",
    "Restatement",
    "SemanticSensitivity",
    "SemanticVerdict",
    "fit_key",
    "probe",
    "prose",
    "restates",
    "semantic_for",
    "ship_fit",
    "shipped_fit",
    "word_spans",
]

Vectors = npt.NDArray[np.float64]

CATEGORY_KIND: Final = {
    "health": Kind.HEALTH,
    "finance": Kind.FINANCE,
    "sexuality": Kind.PROTECTED,
    "religion": Kind.PROTECTED,
    "politics": Kind.PROTECTED,
    "credentials": Kind.SECRET,
    "location": Kind.ADDRESS,
}
"""The detector kind of each sensitive category: its weight is the risk of a flagged text."""

L2: Final = 0.003
"""Weight of the L2 penalty on the (non-bias) coefficients."""

STEPS: Final = 200
"""Gradient steps of a fit (Nesterov-accelerated; converged on the fitting set)."""

FOLDS: Final = 5
"""Cross-validation folds of the calibration."""

MAX_FALSE_POSITIVE_RATE: Final = 0.02
"""Share of ordinary statements a threshold may flag (cross-validated)."""

MIN_RECALL: Final = 0.5
"""Below this cross-validated recall at the chosen threshold the classifier is disabled.

At half the sensitive statements missed even where the false alarms are held to 2 %, the
embedder sees words rather than meaning, and what it does flag in a conversation is often
the wrong category: the hashing embedder (cross-validated recall 0.14) labelled
"Hi! I'm Maya. I live in Lisbon and I'm allergic to peanuts." as sexuality (p 0.83), which
masked the user's allergy in the quick start's context. Restatements (:func:`restates`)
are still found by similarity with such an embedder."""

WITHHOLD_QUANTILE: Final = 0.95
"""Quantile of ordinary statements' highest cosine to the sensitive ones: the paraphrase
threshold."""

TOPIC_QUANTILE: Final = 0.5
"""The same distribution's quantile for a text of the same sensitive category."""

_LABELS: Final = (*CATEGORIES, ORDINARY)


@dataclass(frozen=True, slots=True)
class Calibration:
    """What the calibration on one embedder found.

    Attributes:
        threshold: ``P(sensitive)`` at which a text is flagged.
        cv_precision: cross-validated precision at ``threshold``.
        cv_recall: cross-validated recall at ``threshold``.
        cv_false_positive_rate: share of ordinary statements flagged, cross-validated.
        enabled: whether the classifier flags anything on this embedder.
        paraphrase_threshold: cosine at which a text restates a sensitive memory.
        topic_threshold: cosine at which a text of the same sensitive category does.
        center: the mean embedding of the fitting statements; restatements compare
            vectors with it subtracted (empty: compare them as they are).
        close_threshold: cosine from which a restatement is a *close* one: no ordinary
            statement of the fitting set is that close to any sensitive one (their
            highest cosine's maximum). The output check masks the words a close
            restatement shares with what it restates (1.0: none is close).
    """

    threshold: float
    cv_precision: float
    cv_recall: float
    cv_false_positive_rate: float
    enabled: bool
    paraphrase_threshold: float
    topic_threshold: float
    center: tuple[float, ...] = ()
    close_threshold: float = 1.0

    def __repr__(self) -> str:
        return (f"Calibration(threshold={self.threshold:.3f}, cv_precision="
                f"{self.cv_precision:.3f}, cv_recall={self.cv_recall:.3f}, "
                f"cv_false_positive_rate={self.cv_false_positive_rate:.3f}, "
                f"enabled={self.enabled}, paraphrase_threshold={self.paraphrase_threshold:.3f}"
                f", topic_threshold={self.topic_threshold:.3f}, close_threshold="
                f"{self.close_threshold:.3f}, center=<{len(self.center)}>)")

    def centred(self, vectors: npt.ArrayLike) -> Vectors:
        """Unit vectors with :attr:`center` subtracted (what restatements compare)."""
        x = _unit(vectors)
        if self.center and x.size:
            x = _unit(x - np.asarray(self.center, dtype=np.float64))
        return x


@dataclass(frozen=True, slots=True)
class SemanticVerdict:
    """The classifier's reading of one text (no text held).

    Attributes:
        probability: ``P(sensitive)`` in [0, 1].
        category: the likeliest sensitive category (even when not flagged).
        flagged: ``probability`` reached the calibrated threshold (and the classifier
            is enabled).

    Examples:
        >>> v = SemanticVerdict(0.93, "health", True)
        >>> v.kind.value, v.detection(20)
        ('health', Detection(kind='health', start=0, end=20, score=0.93))
    """

    probability: float
    category: str
    flagged: bool

    @property
    def kind(self) -> Kind:
        """The detector kind of :attr:`category`."""
        return CATEGORY_KIND[self.category]

    def detection(self, length: int) -> Detection | None:
        """A whole-text detection of :attr:`kind` scored by the probability, if flagged."""
        if not self.flagged:
            return None
        return Detection(self.kind, 0, max(1, length), min(1.0, max(0.0, self.probability)))


def _unit(matrix: npt.ArrayLike, dim: int | None = None) -> Vectors:
    x = np.asarray(matrix, dtype=np.float64)
    if x.ndim != 2 or (dim is not None and x.shape[1] != dim) or not np.all(np.isfinite(x)):
        raise ValidationError(f"expected finite vectors of shape (n, {dim or 'dim'}), "
                              f"got shape {x.shape}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out: Vectors = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    return out


def _softmax(z: Vectors) -> Vectors:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: Vectors = e / e.sum(axis=1, keepdims=True)
    return out


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """Run numpy's linear algebra on one thread inside the block (``threadpoolctl``).

    The fit is some 1,200 products of a few hundred rows by a few hundred columns: a
    second BLAS thread saves nothing there, and on a machine whose cores are busy it
    spins waiting for them — the fit took 7.5 s with OpenBLAS's threads and 0.75 s with
    one, measured side by side at load 11 on 2 cores. Only this block is limited.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def _fit_weights(x: Vectors, y: npt.NDArray[np.int64], l2: float, steps: int) -> Vectors:
    """Multinomial logistic regression by accelerated (Nesterov) gradient descent."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    target = np.zeros((n, len(_LABELS)))
    target[np.arange(n), y] = 1.0
    ordinary = y == len(_LABELS) - 1
    sample = np.ones(n)
    if ordinary.any() and (~ordinary).any():
        sample[ordinary] = n / 2 / ordinary.sum()
        sample[~ordinary] = n / 2 / (~ordinary).sum()
    smooth = 0.5 * float(np.linalg.norm(xb, 2)) ** 2 / n * float(sample.max()) + l2
    penal = np.ones((d + 1, 1))
    penal[-1] = 0.0
    w = np.zeros((d + 1, len(_LABELS)))
    ahead, t = w.copy(), 1.0
    for _ in range(steps):
        grad = xb.T @ ((_softmax(xb @ ahead) - target) * sample[:, None]) / n \
            + l2 * ahead * penal
        nxt = ahead - grad / smooth
        t_next = (1.0 + math.sqrt(1.0 + 4.0 * t * t)) / 2.0
        ahead = nxt + (t - 1.0) / t_next * (nxt - w)
        w, t = nxt, t_next
    return w


def _probabilities(w: Vectors, x: Vectors) -> Vectors:
    return _softmax(np.hstack([x, np.ones((len(x), 1))]) @ w)


def _choose_threshold(scores: Vectors, truth: npt.NDArray[np.bool_]
                      ) -> tuple[float, float, float, float]:
    """``(threshold, precision, recall, false-positive rate)`` of the lowest threshold
    that flags at most :data:`MAX_FALSE_POSITIVE_RATE` of the negatives."""
    positives, negatives = int(truth.sum()), int((~truth).sum())
    for t in np.unique(scores):
        pred = scores >= t
        tp = int((pred & truth).sum())
        fp = int((pred & ~truth).sum())
        if fp <= MAX_FALSE_POSITIVE_RATE * negatives:
            return float(t), tp / max(1, tp + fp), tp / max(1, positives), fp / max(1, negatives)
    return math.inf, 0.0, 0.0, 0.0


class SemanticSensitivity:
    """The embedding-level sensitivity classifier of one embedder (see the module).

    Build it with :meth:`fit` (or :func:`semantic_for`, which caches one per embedder).

    Examples:
        >>> from mars_core.embeddings import HashingEmbedder
        >>> emb = HashingEmbedder()
        >>> model = semantic_for(emb)
        >>> v = model.verdict(emb.embed(["My password for the bank site is my cat's name"])[0])
        >>> v.category, v.flagged  # the hashing embedder's classifier is too weak: off
        ('credentials', False)
        >>> model.calibration.enabled
        False
    """

    def __init__(self, weights: Vectors, calibration: Calibration, embedder_name: str) -> None:
        self._w = weights
        self.calibration = calibration
        self.embedder_name = embedder_name
        self.categories: tuple[str, ...] = _LABELS

    def __repr__(self) -> str:
        c = self.calibration
        return (f"SemanticSensitivity({self.embedder_name!r}, enabled={c.enabled}, "
                f"threshold={c.threshold:.3f}, paraphrase={c.paraphrase_threshold:.3f})")

    @property
    def dim(self) -> int:
        """The embedding dimension it reads."""
        return int(self._w.shape[0]) - 1

    @classmethod
    def fit(cls, embedder: Embedder,
            examples: Sequence[tuple[str, str]] = TRAIN) -> SemanticSensitivity:
        """Fit and calibrate on ``embedder``'s vectors of ``examples``.

        Args:
            embedder: the store's embedder.
            examples: ``(category, statement)`` pairs; categories from
                :data:`~mars_core.privacy.semantic_examples.CATEGORIES` or ``ordinary``.

        Raises:
            ValidationError: an unknown category, too few examples, or vectors of the
                wrong shape.
        """
        labels = [c for c, _ in examples]
        if any(c not in _LABELS for c in labels):
            raise ValidationError(f"example categories must be among {list(_LABELS)}")
        if len(examples) < 2 * FOLDS or ORDINARY not in labels or set(labels) == {ORDINARY}:
            raise ValidationError("the examples need ordinary and sensitive statements, at "
                                  f"least {2 * FOLDS} in all")
        x = _unit(embedder.embed([t for _, t in examples]), embedder.dim)
        with _one_blas_thread():  # small matrices: threads only wait on a busy machine
            y = np.array([_LABELS.index(c) for c in labels], dtype=np.int64)
            cv = np.zeros(len(y))
            folds = np.arange(len(y)) % FOLDS
            for f in range(FOLDS):
                held = folds == f
                w = _fit_weights(x[~held], y[~held], L2, STEPS)
                cv[held] = 1.0 - _probabilities(w, x[held])[:, -1]
            truth = y != len(_LABELS) - 1
            threshold, p, r, fpr = _choose_threshold(cv, truth)
            enabled = r >= MIN_RECALL
            center = x.mean(axis=0)
            xc = _unit(x - center)
            sims = (xc[~truth] @ xc[truth].T).max(axis=1)
            cal = Calibration(
                threshold=round(threshold, 6) if enabled else math.inf, cv_precision=round(p, 6),
                cv_recall=round(r, 6), cv_false_positive_rate=round(fpr, 6), enabled=enabled,
                paraphrase_threshold=round(float(np.quantile(sims, WITHHOLD_QUANTILE)), 6),
                topic_threshold=round(float(np.quantile(sims, TOPIC_QUANTILE)), 6),
                center=tuple(round(float(c), 7) for c in center),
                close_threshold=round(float(sims.max()), 6))
            weights = _fit_weights(x, y, L2, STEPS)
        return cls(weights, cal, embedder.name)

    def probabilities(self, vectors: npt.ArrayLike) -> Vectors:
        """Class probabilities, one row per vector, columns in :attr:`categories` order.

        Raises:
            ValidationError: vectors of the wrong shape or not finite.
        """
        return _probabilities(self._w, _unit(vectors, self.dim))

    def verdicts(self, vectors: npt.ArrayLike) -> list[SemanticVerdict]:
        """One :class:`SemanticVerdict` per vector."""
        probs = self.probabilities(vectors)
        cal = self.calibration
        out = []
        for row in probs:
            p = float(1.0 - row[-1])
            cat = CATEGORIES[int(np.argmax(row[:-1]))]
            out.append(SemanticVerdict(round(p, 6), cat, cal.enabled and p >= cal.threshold))
        return out

    def verdict(self, vector: npt.ArrayLike) -> SemanticVerdict:
        """The verdict of one vector."""
        return self.verdicts(np.asarray(vector, dtype=np.float64).reshape(1, -1))[0]


_CACHE: OrderedDict[tuple[str, int, str], SemanticSensitivity] = OrderedDict()
_CACHE_LOCK = Lock()
_CACHE_SIZE: Final = 8
_PROBE: Final = "mars-memory semantic sensitivity probe"

FITS: Final = Path(__file__).with_name("semantic_fits")
"""Fits shipped with the package (:func:`ship_fit`), one JSON file per embedder: a new
process reads one instead of embedding the examples and fitting (for MiniLM, the
embedding of the 278 statements was most of a first write's cost)."""
_FIT_FORMAT: Final = 3
"""The version of a shipped fit's file (2: the calibration's close threshold; 3: the probe
vector itself, matched within :data:`PROBE_TOLERANCE`)."""
PROBE_TOLERANCE: Final = 1e-4
"""How far (largest difference of a component of the unit vector) an embedder's probe
vector may lie from a shipped fit's for that fit to be its own. The same model gives
vectors that differ by ~1e-7 between machines, CPUs and library releases (their fits'
probabilities agree within 2e-7); another model, or another dimension, is far beyond it.
A digest of the rounded vector (the format before) missed whenever a component sat near
a rounding boundary."""


def semantic_for(embedder: Embedder) -> SemanticSensitivity:
    """The classifier of ``embedder``, fitted once per process and embedder — or read
    from the fit shipped for it (:data:`FITS`), when it was fitted on the same examples
    with an embedder that gives the same vector for a probe sentence.

    Embedders are told apart by name, dimension and the vector of a probe sentence, so
    two instances of one model share a fit and a differently behaving embedder that
    reuses a name does not.

    Raises:
        ValidationError: the embedder returned vectors of the wrong shape.
    """
    key, probe = _key_of(embedder)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    model = shipped_fit(key, probe) or SemanticSensitivity.fit(embedder)
    with _CACHE_LOCK:
        _CACHE[key] = model
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return model


FitKey = tuple[str, int, str]
"""An embedder as fits tell it apart (:func:`fit_key`): name, dimension, probe digest."""

_KEYS: weakref.WeakKeyDictionary[Embedder, tuple[FitKey, Vectors]] = \
    weakref.WeakKeyDictionary()
""":func:`fit_key` and probe of each embedder instance seen (embedded once, not per call)."""


def _key_of(embedder: Embedder) -> tuple[FitKey, Vectors]:
    """:func:`fit_key` of ``embedder`` and its :func:`probe`, computed once per instance
    (an instance that cannot be weakly referenced is probed each time)."""
    try:
        found = _KEYS.get(embedder)
    except TypeError:
        return fit_key(embedder), probe(embedder)
    if found is None:
        vector = probe(embedder)
        found = (_key(embedder, vector), vector)
        with _CACHE_LOCK:
            _KEYS[embedder] = found
    return found


def probe(embedder: Embedder) -> Vectors:
    """The unit vector ``embedder`` gives the probe sentence (one row).

    Raises:
        ValidationError: the embedder returned a vector of the wrong shape.
    """
    return _unit(embedder.embed([_PROBE]), embedder.dim)


def fit_key(embedder: Embedder) -> FitKey:
    """What tells embedders apart for a fit in a process: name, dimension, and a digest
    of the vector it gives a probe sentence (exact: a shipped fit is matched by the
    vector itself, within :data:`PROBE_TOLERANCE`: :func:`shipped_fit`).

    Examples:
        >>> from mars_core.embeddings import HashingEmbedder
        >>> fit_key(HashingEmbedder())[:2]
        ('hashing-v1-384-c3', 384)
    """
    return _key(embedder, probe(embedder))


def _key(embedder: Embedder, vector: Vectors) -> FitKey:
    return (embedder.name, embedder.dim,
            hashlib.blake2b(vector.tobytes(), digest_size=12).hexdigest())


def _fit_stem(name: str, dim: int, examples: Sequence[tuple[str, str]] = TRAIN) -> str:
    """The start of the files of shipped fits for an embedder's name and dimension: a
    digest of them, the examples and the format, so a fit of other examples (or another
    format) is never read."""
    text = json.dumps([_FIT_FORMAT, name, dim, [list(e) for e in examples], list(_LABELS)])
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def shipped_fit(key: FitKey, vector: Vectors) -> SemanticSensitivity | None:
    """The fit shipped for an embedder of ``key``'s name and dimension whose probe
    vector (:func:`probe`) lies within :data:`PROBE_TOLERANCE` of ``vector``, or None when
    there is none for it and the current examples (or it cannot be read)."""
    name, dim, _ = key
    for path in sorted(FITS.glob(f"{_fit_stem(name, dim)}-*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            recorded = np.asarray(doc["probe_vector"], dtype=np.float64)
            if recorded.shape != (dim,) or vector.shape != (1, dim) or not np.all(
                    np.abs(recorded - vector[0]) <= PROBE_TOLERANCE):
                continue
            weights = np.asarray(doc["weights"], dtype=np.float64)
            fields = doc["calibration"]
            if set(fields) != set(Calibration.__dataclass_fields__):
                continue  # a field missing would read as its default: fit instead
            calibration = Calibration(**{**fields, "center": tuple(fields["center"])})
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if weights.shape == (dim + 1, len(_LABELS)):
            return SemanticSensitivity(weights, calibration, name)
    return None


def ship_fit(embedder: Embedder) -> Path:
    """Fit ``embedder``'s classifier and write it to :data:`FITS` (what a release ships,
    so its users' first write does not fit it again); returns the file.

    Run it again whenever the examples or the fit change, for each embedder shipped
    (``tests/test_first_run.py`` fails while a shipped fit is stale or missing)::

        python -c "from mars_core.privacy.semantic import ship_fit; \\
        from mars_core.embeddings import HashingEmbedder; \\
        from mars_core.embedders import SentenceTransformerEmbedder; \\
        [print(ship_fit(e)) for e in (HashingEmbedder(), SentenceTransformerEmbedder())]"
    """
    vector = probe(embedder)
    key = _key(embedder, vector)
    model = SemanticSensitivity.fit(embedder)
    path = FITS / f"{_fit_stem(key[0], key[1])}-{key[2][:12]}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    cal = model.calibration
    doc = {"format": _FIT_FORMAT, "embedder": key[0], "dim": key[1], "probe": key[2],
           "probe_vector": [float(x) for x in vector[0]], "examples": len(TRAIN),
           "calibration": {f: getattr(cal, f) for f in Calibration.__dataclass_fields__},
           "weights": model._w.tolist()}
    path.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    return path


SUBJECT_STAND_INS: Final = frozenset({"user", "assistant"})
"""Words that stand for the person a memory is about ("The user takes an SSRI"): like a
name, they are the subject a restatement must say more than."""

_PREFIX_MIN: Final = 5
"""Two stems of at least this many letters, one a prefix of the other, are one word
("bankrupt" / "bankruptcy", "month" / "monthly"): the stemmer only strips inflections."""

_NOT_WORD: Final = re.compile(r"[\W_]+")


def _leaves(value: object) -> Iterator[str]:
    """The string and number values of a JSON document, without its keys."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, str):
        yield value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield str(value)


def prose(text: str) -> str:
    """What a text says: a JSON object or array (a LangGraph item indexed whole) reads as
    its values; its keys are the namespace's schema, shared by every item.

    Examples:
        >>> prose('{"text": "Ana has a cat"}'), prose("Ana has a cat")
        ('Ana has a cat', 'Ana has a cat')
    """
    s = text.strip()
    if s[:1] not in ("{", "["):
        return text
    try:
        doc = json.loads(s)
    except ValueError:
        return text
    return "\n".join(_leaves(doc)) if isinstance(doc, dict | list) else text


def _name_form(tok: str) -> bool:
    """Written as a name: capitalised, not an acronym (HIV, PIN), not a pronoun, question
    word, greeting, weekday or month (:data:`mars_core.knowledge.extract.NON_NAMES`)."""
    return (tok[:1].isupper() and not (len(tok) > 1 and tok.isupper())
            and tok.casefold().removesuffix("'s") not in NON_NAMES)


def _forms(tok: str) -> tuple[tuple[str, ...], bool]:
    """A token's anchor forms (a number without separators, a subject stand-in, or the
    stems of a content word; none for a function word) and whether they are a name."""
    low = tok.casefold()
    if any(ch.isdigit() for ch in tok):
        return (_NOT_WORD.sub("", low),), False
    if low in SUBJECT_STAND_INS:
        return (low,), True
    if content_word(tok):
        return tuple(stems(tok)), _name_form(tok)
    return (), False


@lru_cache(maxsize=4096)
def _anchors(text: str) -> Anchors:
    words: set[str] = set()
    names: set[str] = set()
    for tok in rule_tokens(prose(text)):
        forms, name = _forms(tok)
        words.update(forms)
        if name:
            names.update(forms)
    return Anchors(frozenset(words), frozenset(names))


def word_spans(text: str, words: Collection[str]) -> list[tuple[int, int]]:
    """Where ``text`` says one of ``words`` (anchor forms, as :meth:`Anchors.common`
    gives them): the ``(start, end)`` of each such token.

    Examples:
        >>> t = "Noted: 7319 disarms the alarm at your house"
        >>> [t[a:b] for a, b in word_spans(t, {"7319", "alarm"})]
        ['7319', 'alarm']
    """
    if not words:
        return []
    return [(start, end) for start, end, tok in token_spans(text)
            if any(_same_word(f, w) for f in _forms(tok)[0] for w in words)]


def _same_word(a: str, b: str) -> bool:
    if a == b:
        return True
    if min(len(a), len(b)) < _PREFIX_MIN or not (a.isalpha() and b.isalpha()):
        return False
    return a.startswith(b) or b.startswith(a)


@dataclass(frozen=True, slots=True)
class Anchors:
    """The words of a text that a restatement of it must share (beyond its subject).

    Embeddings of short texts about one person are close because of the name alone
    (all-MiniLM-L6-v2: "Ana drinks green tea" and "Ana likes jazz", centred cosine 0.42,
    above its paraphrase threshold of 0.37), and a LangGraph item indexed whole adds its
    JSON keys to every text of a namespace. So the paraphrase route of :func:`restates`
    also asks the two texts to share a word that carries content: a content word of the
    rules backend (:func:`mars_core.nlp.rules.content_word`; stemmed, and two stems of five
    letters or more where one is a prefix of the other count as one word) or a number —
    not counting *one* name both write as a name (the person they are about; a second
    shared name, a place or another person, is content), nor the keys of a JSON document.
    "user" and "assistant" count as names (:data:`SUBJECT_STAND_INS`).

    Attributes:
        words: the stemmed content words and numbers (lower case).
        names: those among them written as a name, and the subject stand-ins.

    Examples:
        >>> tea = Anchors.of("Ana drinks green tea")
        >>> tea.shares(Anchors.of("Ana likes jazz")), tea.shares(Anchors.of("Ana drinks tea"))
        (False, True)
        >>> Anchors.of("Ana moved to Lisbon").shares(Anchors.of("Ana lives in Lisbon"))
        True
        >>> Anchors.of('{"text": "Ana has a cat"}') == Anchors.of("Ana has a cat")
        True
    """

    words: frozenset[str]
    names: frozenset[str]

    @staticmethod
    def of(text: str) -> Anchors:
        """The anchors of ``text`` (cached per text)."""
        return _anchors(text)

    def shares(self, other: Anchors) -> bool:
        """Whether the two texts share a word beyond one name of their subject."""
        common = {a for a in self.words if any(_same_word(a, b) for b in other.words)}
        subject = 1 if common & self.names & other.names else 0
        return len(common) > subject

    def common(self, other: Anchors) -> frozenset[str]:
        """This text's words that ``other`` says too, leaving out the names both write as
        names (their subjects): what a restatement shares with what it restates.

        Examples:
            >>> a = Anchors.of("Ana's usual drink is green tea")
            >>> sorted(a.common(Anchors.of("Ana drinks green tea")))
            ['drink', 'green', 'tea']
        """
        return frozenset(a for a in self.words
                         if any(_same_word(a, b) for b in other.words)
                         and not (a in self.names and any(_same_word(a, b)
                                                          for b in other.names)))


@dataclass(frozen=True, slots=True)
class Restatement:
    """A text found to restate a reference memory.

    Attributes:
        index: which reference (its position in the references given).
        similarity: their cosine.
        route: ``paraphrase`` (cosine ≥ the paraphrase threshold, and a shared word
            beyond the subject's name when the texts' :class:`Anchors` are given) or
            ``topic`` (same sensitive category, cosine ≥ the topic threshold).
    """

    index: int
    similarity: float
    route: str


def restates(
    vectors: npt.ArrayLike,
    kinds: Sequence[Iterable[Kind]],
    references: npt.ArrayLike,
    reference_kinds: Sequence[Iterable[Kind]],
    calibration: Calibration,
    *,
    paraphrase_threshold: float | None = None,
    anchors: Sequence[Anchors | None] | None = None,
    reference_anchors: Sequence[Anchors | None] | None = None,
) -> list[Restatement | None]:
    """For each text, the reference it restates most closely (or ``None``).

    A pair is a paraphrase when its cosine reaches the paraphrase threshold and, where
    both texts' :class:`Anchors` are known, the texts share a word beyond their subject's
    name; it is a topic restatement when both fall in one sensitive category (a shared
    meaning of its own) and the cosine reaches the topic threshold.

    Args:
        vectors: the texts' embeddings, one row each.
        kinds: per text, its sensitive kinds (the classifier's and the lexicons').
        references: the sensitive (or erased) memories' embeddings.
        reference_kinds: per reference, its sensitive kinds.
        calibration: the embedder's thresholds.
        paraphrase_threshold: overrides the calibrated one (the store's configuration).
        anchors: per text, its :class:`Anchors` (``None``: unknown, no word asked for).
        reference_anchors: per reference, its :class:`Anchors`.

    Raises:
        ValidationError: kinds or anchors not one per text and reference, or vectors of
            another dimension than the references or the calibration's center.

    Examples:
        >>> cal = Calibration(0.5, 1.0, 1.0, 0.0, True, 0.8, 0.3)
        >>> restates([[1, 0], [0.6, 0.8], [0, 1]], [(), (Kind.HEALTH,), ()],
        ...          [[1, 0.05]], [(Kind.HEALTH,)], cal)  # doctest: +NORMALIZE_WHITESPACE
        [Restatement(index=0, similarity=0.998752, route='paraphrase'),
         Restatement(index=0, similarity=0.639201, route='topic'), None]
        >>> restates([[1, 0]], [()], [[1, 0.05]], [()], cal,
        ...          anchors=[Anchors.of("Ana likes jazz")],
        ...          reference_anchors=[Anchors.of("Ana drinks green tea")])
        [None]
    """
    x = _unit(vectors)
    n = len(x)
    if len(kinds) != n:
        raise ValidationError("one set of kinds per text")
    refs = _unit(references)
    if len(refs) == 0 or n == 0:
        return [None] * n
    if refs.shape[1] != x.shape[1] or len(reference_kinds) != len(refs):
        raise ValidationError("references must match the texts' dimension and kinds")
    if calibration.center and len(calibration.center) != x.shape[1]:
        raise ValidationError("the calibration's center has another dimension")
    mine_words: list[Anchors | None] = [None] * n if anchors is None else list(anchors)
    ref_words: list[Anchors | None] = [None] * len(refs) if reference_anchors is None \
        else list(reference_anchors)
    if len(mine_words) != n or len(ref_words) != len(refs):
        raise ValidationError("one set of anchors per text and per reference")
    x, refs = calibration.centred(x), calibration.centred(refs)
    strong = calibration.paraphrase_threshold if paraphrase_threshold is None \
        else paraphrase_threshold
    topic = min(calibration.topic_threshold, strong)
    sims = x @ refs.T
    ref_sets = [frozenset(k) for k in reference_kinds]
    out: list[Restatement | None] = []
    for i in range(n):
        mine = frozenset(kinds[i])
        found: Restatement | None = None
        for j in np.argsort(-sims[i], kind="stable"):
            s = float(sims[i, j])
            if s < topic:
                break
            a, b = mine_words[i], ref_words[j]
            anchored = a is None or b is None or a.shares(b)
            route = "paraphrase" if s >= strong and anchored \
                else "topic" if mine & ref_sets[j] else None
            if route is not None:
                found = Restatement(int(j), round(s, 6), route)
                break
        out.append(found)
    return out
