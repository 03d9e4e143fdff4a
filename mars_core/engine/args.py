"""The public calls' arguments, checked before anything is read or written.

Each function takes what a caller passed to :class:`~mars_core.store.MemoryStore` and
returns the value object the collaborators work on (a namespace string, a
:class:`~mars_core.engine.writer.NewMemory`, a :class:`~mars_core.engine.writer.Turn`, a
:class:`~mars_core.reading.retrieval.Query`), or raises
:class:`~mars_core.errors.ValidationError`: a bad argument changes nothing.

Nothing is coerced: a number is never read from a bool or a string (``sensitivity=True``,
``turn="3"``, a payload's ``"priority": "0.9"``), a flag never from anything but a bool
(``pinned="yes"``), a time never from a number or a string; each is refused instead.

Examples:
    >>> namespace("maya", default="default"), namespace(None, default="default")
    ('maya', 'default')
    >>> namespace(("memories", "a/b"), default="default")
    'memories/a%2Fb'
"""

from __future__ import annotations

import builtins
import json
import numbers
import os
import re
import types as pytypes
import typing
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pydantic

from mars_core.budget import MAX_BUDGET
from mars_core.config import RetrievalTemplate, StoreConfig, parse_config
from mars_core.engine.writer import NewMemory, Turn
from mars_core.errors import ConfigError, ImportFormatError, ValidationError
from mars_core.io.checks import MAX_DATE, MIN_DATE, check_json_value
from mars_core.model import MAX_CONTENT_CHARS, MemoryType, Provenance, default_payload, utc
from mars_core.namespaces import canonical_namespace
from mars_core.reading.retrieval import Query, check_max_sensitivity
from mars_core.scope import check_jurisdictions, narrow

__all__ = ["ADD_FIELDS", "MAX_RESULT", "TURN_FIELDS", "collection", "configure",
           "conversation", "count", "cutoff", "flag", "id_list", "item", "items", "label",
           "mapping", "memory_id", "memory_type", "moment", "namespace", "path", "phrase",
           "query", "retrieval_template", "stored_moment", "turn", "turns", "unit_number"]

ADD_FIELDS = frozenset({"text", "type", "payload", "sensitivity", "provenance", "namespace",
                        "metadata", "pinned", "expires_at", "links"})
"""What an ``add_many`` item may name (the arguments of ``add``)."""

TURN_FIELDS = frozenset({"role", "text", "namespace", "conversation_id", "session_id", "turn",
                         "speaker", "at", "external_id"})
"""What an ``observe_many`` turn may name (the arguments of ``observe``)."""

MAX_RESULT = 2**31 - 1
"""The most memories a retrieval may ask for (``k``: a 32-bit count, the largest limit
every index takes); its ``budget_tokens`` is at most a budget's bound,
:data:`~mars_core.budget.MAX_BUDGET`."""
_TYPE_NAMES = frozenset(t.value for t in MemoryType)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _shown(value: object) -> str:
    """What a message says about a bad value: its type, and a short repr of a short one."""
    kind = builtins.type(value).__name__
    try:
        shown = repr(value)
    except Exception:  # an int of 4,300+ digits, a list 5,000 deep, an object whose
        return kind    # repr raises: the message names its type instead
    return kind if len(shown) > 40 else f"{kind} {shown}"


def phrase(value: object, what: str, *, max_chars: int = MAX_CONTENT_CHARS) -> str:
    """Visible text a call reads (a query, an entity, a reason): memory text's rules.

    Raises:
        ValidationError: not a string, empty or only whitespace, with a NUL or a lone
            surrogate, or longer than ``max_chars``.

    Examples:
        >>> phrase("where does Ana live?", "a query")
        'where does Ana live?'
    """
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be a string, not {_shown(value)}")
    if not value.strip():
        raise ValidationError(f"{what} must contain non-whitespace text")
    if "\x00" in value:
        raise ValidationError(f"{what} must not contain NUL characters")
    if _SURROGATE.search(value) is not None:
        raise ValidationError(f"{what} must be valid Unicode (no lone surrogates)")
    if len(value) > max_chars:
        raise ValidationError(f"{what} is {len(value)} characters long; the limit is {max_chars}")
    return value


def label(value: object, what: str, *, max_chars: int = 256) -> str:
    """An identifier or a name a caller gives (a role, a conversation, a consent id): a
    non-empty string without control characters or lone surrogates.

    Raises:
        ValidationError: anything else.
    """
    phrase(value, what, max_chars=max_chars)
    assert isinstance(value, str)
    if (bad := _CONTROL.search(value)) is not None:
        raise ValidationError(f"{what} contains the control character U+{ord(bad.group()):04X}")
    return value


def flag(value: object, what: str) -> bool:
    """A yes/no option: ``True`` or ``False`` (``"no"`` is not false).

    Raises:
        ValidationError: anything but a bool.
    """
    if not isinstance(value, bool):
        raise ValidationError(f"{what} must be True or False, not {_shown(value)}")
    return value


def count(value: object, what: str, *, low: int = 0) -> int:
    """A whole number of at least ``low`` (a bool is not a number).

    Raises:
        ValidationError: anything else.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValidationError(f"{what} must be an integer >= {low}, not {_shown(value)}")
    return value


def stored_moment(value: object, what: str) -> datetime | None:
    """A point in time a memory will keep (an expiry, a turn's time): :func:`moment`,
    within the years every stored date keeps (:data:`~mars_core.io.checks.MIN_DATE`
    1900 to :data:`~mars_core.io.checks.MAX_DATE` 2200, UTC).

    Raises:
        ValidationError: anything else.

    Examples:
        >>> stored_moment(datetime(9999, 1, 1), "expires_at")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        mars_core.errors.ValidationError: expires_at: 9999-01-01T00:00:00+00:00 is outside ...
    """
    moment(value, what)
    if value is not None:
        assert isinstance(value, datetime)
        at = utc(value)
        if not MIN_DATE <= at < MAX_DATE:
            raise ValidationError(f"{what}: {at.isoformat()} is outside the years "
                                  f"{MIN_DATE.year} to {MAX_DATE.year - 1} (UTC) a memory "
                                  "can keep")
    return value


def moment(value: object, what: str) -> datetime | None:
    """A point in time or None (a number or a string is not a datetime here), one that
    has a UTC time.

    Raises:
        ValidationError: anything else.
    """
    if value is not None and not isinstance(value, datetime):
        raise ValidationError(f"{what} must be a datetime (naive ones are UTC) or None, "
                              f"not {_shown(value)}")
    if value is not None:
        try:
            utc(value)
        except ValueError as exc:  # the last day of 9999 at UTC-5 has no UTC
            raise ValidationError(f"{what}: {exc}") from None
    return value


def mapping(value: object, what: str) -> dict[str, Any] | None:
    """A memory's metadata as a call gives it, or None: a mapping of JSON values within
    the bounds every stored memory keeps (:mod:`mars_core.io.checks`: string keys,
    integers within 64 bits, finite numbers, valid Unicode, at most 32 levels deep and
    1 MiB of JSON), copied as the JSON it is stored as (a tuple becomes a list), so what
    ``add`` returns is what a reopened store, an export and its import give back.

    Raises:
        ValidationError: anything else.

    Examples:
        >>> mapping({"tags": ("a", "b")}, "metadata")
        {'tags': ['a', 'b']}
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValidationError(f"{what} must be a mapping of JSON values such as "
                              f"{{'colour': 'red'}}, not {_shown(value)}")
    try:
        check_json_value(value, what)
    except ImportFormatError as exc:
        raise ValidationError(str(exc)) from None
    copied = json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    assert isinstance(copied, dict)
    return copied


def collection(values: object, what: str) -> list[Any]:
    """The items of a list argument (a string is not a list of its characters).

    Raises:
        ValidationError: a string, a mapping, or something that is not iterable.
    """
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise ValidationError(f"{what} must be a list, not {_shown(values)}")
    return list(values)


def id_list(values: object, what: str) -> list[str]:
    """Memory ids given as a list (a string is one id, not a list of them).

    Raises:
        ValidationError: not a collection of ids, or an item that is not an id.
    """
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise ValidationError(f"{what} must be a list of memory ids, not {_shown(values)}")
    return [memory_id(v) for v in values]


def path(value: object, what: str, error: type[ValidationError] = ValidationError) -> Path:
    """A file-system path a call reads or writes.

    Raises:
        ``error``: not a string or path, empty, or holding a NUL.
    """
    if not isinstance(value, str | os.PathLike):
        raise error(f"{what} must be a path (a str or a pathlib.Path), not {_shown(value)}")
    raw = os.fspath(value)
    if not isinstance(raw, str) or not raw:
        raise error(f"{what} must be a non-empty path")
    if "\x00" in raw:
        raise error(f"{what} must not contain NUL characters")
    return Path(raw)


def configure(config: object, overrides: Mapping[str, Any]) -> StoreConfig:
    """A configuration with keyword overrides applied, validated as a whole.

    Raises:
        ConfigError: not a ``StoreConfig``, an unknown field or a bad value (strict:
            nothing is coerced; see :mod:`mars_core.config`).

    Examples:
        >>> configure(None, {"budget": 100}).budget
        100
        >>> configure(None, {"budget": True})  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        mars_core.errors.ConfigError: invalid store configuration: budget: ...
    """
    if config is not None and not isinstance(config, StoreConfig):
        raise ConfigError(f"config must be a StoreConfig (or None), not "
                          f"{builtins.type(config).__name__}; pass fields as keywords instead")
    base = config or StoreConfig()
    return parse_config({**base.model_dump(), **overrides})


def namespace(value: object, *, default: str) -> str:
    """The canonical namespace string of a path string or a tuple of parts (``default``
    when None); see :mod:`mars_core.namespaces` for the rules."""
    return canonical_namespace(default if value is None else value)


def memory_id(value: object) -> str:
    """A memory id as a caller gives it (a string; which memory it names is the
    namespace's business).

    Raises:
        ValidationError: not a non-empty string of at most 128 characters, or one with a
            NUL or a lone surrogate (no memory can have such an id).
    """
    if not isinstance(value, str) or not value or len(value) > 128 or "\x00" in value \
            or _SURROGATE.search(value) is not None:
        raise ValidationError(f"a memory id is a string such as the 'id' of a stored memory, "
                              f"not {_shown(value)}")
    return value


def item(text: object, *, default_ns: str, type: object = MemoryType.EPISODIC,
         payload: Any = None, sensitivity: object = None, provenance: Any = None,
         namespace_: object = None, metadata: Any = None, pinned: object = False,
         expires_at: Any = None, links: object = ()) -> NewMemory:
    """One memory to add (the arguments of ``add``), nothing coerced.

    Examples:
        >>> item("x", default_ns="d", sensitivity=0.5).sensitivity
        0.5
        >>> item("x", default_ns="d", pinned="yes")  # doctest: +IGNORE_EXCEPTION_DETAIL
        Traceback (most recent call last):
        mars_core.errors.ValidationError: pinned must be True or False ...
    """
    if not isinstance(text, str):
        raise ValidationError(f"memory text must be a str, not {builtins.type(text).__name__}")
    if isinstance(links, str) or not isinstance(links, Iterable):
        raise ValidationError("links must be (predicate, target id) pairs")
    try:
        pairs = tuple((p, t) for p, t in links)
    except (TypeError, ValueError):
        raise ValidationError("links must be (predicate, target id) pairs") from None
    for _, target in pairs:
        memory_id(target)
    if sensitivity is not None:
        sensitivity = unit_number(sensitivity, "sensitivity", "or None (detected)")
    if not isinstance(pinned, bool):
        raise ValidationError(f"pinned must be True or False, not a "
                              f"{builtins.type(pinned).__name__}")
    stored_moment(expires_at, "expires_at")
    if isinstance(provenance, Mapping):
        _no_coercion(provenance, Provenance, "provenance")
    _conversation_ids(provenance)
    if isinstance(payload, Mapping) and str(type) in _TYPE_NAMES:  # else the writer refuses
        _no_coercion(payload, builtins.type(default_payload(MemoryType(str(type)))), "payload")
    return NewMemory(text, type, payload, sensitivity,  # type: ignore[arg-type]
                     provenance, namespace(namespace_, default=default_ns),
                     mapping(metadata, "metadata"), pinned, expires_at, pairs)


def conversation(value: object, what: str = "conversation") -> str:
    """A conversation (or session) id as a call names one: :func:`label`'s rules, so
    what ``observe`` and ``add`` record, ``erase(conversation=...)`` can name.

    Raises:
        ValidationError: not a non-empty string of at most 256 characters without
            control characters.

    Examples:
        >>> conversation("chat-7")
        'chat-7'
    """
    return label(value, what, max_chars=256)


def _conversation_ids(provenance: object) -> None:
    """Refuse a provenance whose conversation or session id :func:`conversation` refuses
    (``""`` included: no ``erase(conversation=...)`` could name it)."""
    fields = provenance if isinstance(provenance, Mapping) else \
        provenance.model_dump() if isinstance(provenance, Provenance) else {}
    for name in ("conversation_id", "session_id"):
        value = fields.get(name)
        if value is not None:
            conversation(value, f"provenance {name}")


def memory_type(value: object) -> MemoryType:
    """A memory type by its name (``"semantic"``) or as a :class:`MemoryType`.

    Raises:
        ValidationError: anything else.

    Examples:
        >>> memory_type("task").value
        'task'
    """
    if isinstance(value, str) and value in _TYPE_NAMES:
        return MemoryType(value)
    raise ValidationError(f"unknown memory type {_shown(value)}; use one of "
                          f"{sorted(_TYPE_NAMES)}")


def unit_number(value: object, what: str, otherwise: str = "") -> float:
    """A finite number in [0, 1] (an int or a float, not a bool or a string).

    Raises:
        ValidationError: anything else; ``otherwise`` completes the message
            (e.g. "or None").

    Examples:
        >>> unit_number(1, "sensitivity")
        1.0
    """
    # compared exactly, not through float(): 10**400 is out of range, not an OverflowError
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 0 <= typing.cast(float, value) <= 1:
        shown = builtins.type(value).__name__ if isinstance(value, bool | str) \
            else _shown(value)
        tail = f" {otherwise}" if otherwise else ""
        raise ValidationError(f"{what} must be a number in [0, 1]{tail}, not {shown}")
    return float(value)


def _scalar(annotation: object) -> builtins.type | None:
    """``bool``, ``int`` or ``float`` when a field holds one of them (or None), else None."""
    options = typing.get_args(annotation) if isinstance(annotation, pytypes.UnionType) \
        or typing.get_origin(annotation) is typing.Union else (annotation,)
    kinds = [t for t in options if t in (bool, int, float)]
    return kinds[0] if len(kinds) == 1 else None


def _no_coercion(fields: Mapping[object, object], model: builtins.type[pydantic.BaseModel],
                 what: str) -> None:
    """Refuse a bool or a string given for a number field of ``model`` (and anything but
    a bool for a bool field), which pydantic would otherwise convert."""
    for key, value in fields.items():
        field = model.model_fields.get(key) if isinstance(key, str) else None
        kind = None if field is None else _scalar(field.annotation)
        if kind is None or value is None:
            continue
        if kind is bool:
            ok = isinstance(value, bool)
        elif kind is int:
            ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        else:
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not ok:
            raise ValidationError(f"{what} field {key!r} must be a {kind.__name__}, not a "
                                  f"{builtins.type(value).__name__} (nothing is converted)")


def _listed(values: object, what: str) -> None:
    """Refuse what is not a list of items (a text or a mapping would be read item by item).

    Raises:
        ValidationError: ``what``, and what was given instead.
    """
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise ValidationError(f"{what}, not {_shown(values)}")


def items(values: Iterable[object], *, default_ns: str, namespace_: object,
          type: MemoryType | str) -> list[NewMemory]:
    """The items of ``add_many``: texts, or mappings of ``add``'s arguments."""
    _listed(values, "add_many takes a list of texts or of mappings of add()'s arguments")
    out = []
    for i, value in enumerate(values):
        fields = {"text": value} if isinstance(value, str) else value
        if not isinstance(fields, Mapping) or set(fields) - ADD_FIELDS or "text" not in fields:
            raise ValidationError(f"item {i} must be a text or a mapping with 'text' and any "
                                  f"of {sorted(ADD_FIELDS - {'text'})}")
        extra = {k: v for k, v in fields.items() if k not in ("text", "namespace", "type")}
        out.append(item(fields["text"], default_ns=default_ns, type=fields.get("type", type),
                        namespace_=fields.get("namespace", namespace_), **extra))
    return out


def turn(role: object, text: object, *, default_ns: str, namespace_: object = None,
         conversation_id: Any = None, session_id: Any = None, turn: Any = None,
         speaker: Any = None, at: Any = None, external_id: Any = None) -> Turn:
    """One conversational turn (the arguments of ``observe``)."""
    if not isinstance(role, str) or not role.strip():
        raise ValidationError("role must be a non-empty string such as 'user'")
    label(role, "role", max_chars=64)
    if not isinstance(text, str):
        raise ValidationError(f"turn text must be a str, not {builtins.type(text).__name__}")
    if speaker is not None and not isinstance(speaker, str):
        raise ValidationError("speaker must be a string or None")
    if at is not None and not isinstance(at, datetime):
        raise ValidationError("at must be a datetime (naive ones are UTC) or None")
    stored_moment(at, "at")
    for name, value in (("conversation_id", conversation_id), ("session_id", session_id)):
        if value is not None:
            conversation(value, name)
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, numbers.Integral)):
        raise ValidationError(f"turn must be an int or None, not a {builtins.type(turn).__name__}")
    try:
        prov = Provenance(source=role, conversation_id=conversation_id, session_id=session_id,
                          turn=turn, external_id=external_id)
    except pydantic.ValidationError as exc:
        raise ValidationError.from_pydantic(exc, "turn provenance") from None
    return Turn(role, text, namespace(namespace_, default=default_ns), prov, speaker, at)


def turns(values: Iterable[object], *, default_ns: str, namespace_: object,
          conversation_id: str | None) -> list[Turn]:
    """The turns of ``observe_many``: mappings of ``observe``'s arguments."""
    _listed(values, "observe_many takes a list of mappings of observe()'s arguments")
    out = []
    for i, t in enumerate(values):
        if not isinstance(t, Mapping) or set(t) - TURN_FIELDS or not {"role", "text"} <= set(t):
            raise ValidationError(f"turn {i} must be a mapping with 'role' and 'text' and any "
                                  f"of {sorted(TURN_FIELDS - {'role', 'text'})}")
        extra = {k: v for k, v in t.items()
                 if k not in ("role", "text", "namespace", "conversation_id")}
        out.append(turn(t["role"], t["text"], default_ns=default_ns,
                        namespace_=t.get("namespace", namespace_),
                        conversation_id=t.get("conversation_id", conversation_id), **extra))
    return out


def cutoff(ratio: object, config: StoreConfig) -> float:
    """A call's relative cut-off: the config's when None, else a number in [0, 1]."""
    if ratio is None:
        return config.retrieval.relative_cutoff
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not 0.0 <= ratio <= 1.0:
        raise ValidationError("relative_cutoff must be a number in [0, 1] or None")
    return float(ratio)


def query(text: object, config: StoreConfig, *, namespace_: object,
          types: Iterable[Any] | None = None, max_sensitivity: object = None,
          since: object = None, until: object = None, conversation: object = None,
          budget_tokens: object = None, k: object = None, jurisdiction: object = None,
          template: object = None) -> tuple[Query, int]:
    """A retrieval's query and token budget; a template (``config.retrieval_templates``)
    narrows the call's types, sensitivity cap and jurisdictions."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("a query must be a non-empty string")
    phrase(text, "a query")
    budget = config.retrieval.default_budget_tokens if budget_tokens is None else budget_tokens
    if isinstance(budget, bool) or not isinstance(budget, int) or not 0 < budget <= MAX_BUDGET:
        raise ValidationError(f"budget_tokens must be a positive integer of at most "
                              f"{MAX_BUDGET:,}")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int)
                          or not 0 < k <= MAX_RESULT):
        raise ValidationError(f"k must be a positive integer of at most {MAX_RESULT:,}")
    cap = check_max_sensitivity(max_sensitivity)
    for name, when in (("since", since), ("until", until)):
        if when is not None and not isinstance(when, datetime):
            raise ValidationError(f"{name} must be a datetime (naive ones are UTC) or None")
        moment(when, name)
    if conversation is not None and not isinstance(conversation, str):
        raise ValidationError('conversation must be a string ("": no conversation) or None')
    tset = None if types is None else frozenset(
        memory_type(t) for t in collection(types, "types"))
    ns = namespace(namespace_, default=config.default_namespace)
    codes = check_jurisdictions(jurisdiction)
    if template is not None:
        tpl = retrieval_template(template, config)
        tset = tpl.types if tset is None else (tset if tpl.types is None else tset & tpl.types)
        cap = tpl.max_sensitivity if cap is None else (
            cap if tpl.max_sensitivity is None else min(cap, tpl.max_sensitivity))
        codes = narrow(codes, tpl.jurisdictions)
    return Query(text, ns, tset, cap, since, until,  # type: ignore[arg-type]
                 conversation, codes), budget


def retrieval_template(name: object, config: StoreConfig) -> RetrievalTemplate:
    """The store's retrieval template called ``name``.

    Raises:
        ValidationError: not a string, or no such template (the message lists them).
    """
    if not isinstance(name, str):
        raise ValidationError("template must be the name of a retrieval template (a string) "
                              "or None")
    found = config.retrieval_templates.get(name)
    if found is None:
        known = sorted(config.retrieval_templates)
        raise ValidationError(f"no retrieval template {name[:80]!r}; this store has "
                              f"{known or 'none'} (StoreConfig.retrieval_templates)")
    return found

