"""The analyses' reader of EvalLogs: every sample validated as contract.evallog.load validates it, none kept.

An analysis reads an item's scores, budgets and family; the samples (most of a log's bytes) are there to be
checked against them. Building a pydantic object for each of them is most of the time contract.evallog.load
takes, so this reader decodes the samples with msgspec into types generated from the EvalLog's own pydantic
models (same fields, types, bounds and unknown-field refusal), runs the real validators of ItemResult and
EvalLog on them, and returns the log with each item's samples dropped (None). Everything else is validated
by pydantic itself.

msgspec is stricter than pydantic's lax mode (it refuses 5.0 for an int, for one): whatever it refuses, or any
validator refuses, is read again by contract.evallog.load, which either words the problem (EvalLogError)
or accepts the log. Where the models hold something this reader cannot mirror (a validator of a sample, a
before-validator, a field type it does not know) it always reads through contract.evallog.load.
"""

from __future__ import annotations

import multiprocessing
import os
import types
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from itertools import chain
from operator import attrgetter
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import msgspec
import numpy as np
from pydantic import BaseModel, TypeAdapter

from contract.evallog import EvalLog, ItemResult, SampleRecord, load


class _Unsupported(Exception):
    """A part of the models the generated msgspec types cannot reproduce exactly."""


_BOUNDS = {
    annotated_types.Ge: "ge",
    annotated_types.Gt: "gt",
    annotated_types.Le: "le",
    annotated_types.Lt: "lt",
    annotated_types.MinLen: "min_length",
    annotated_types.MaxLen: "max_length",
}


def _bounded(tp: Any, metadata: list[Any]) -> Any:
    """tp with pydantic's field constraints as a msgspec.Meta."""
    if not metadata:
        return tp
    meta = {}
    for m in metadata:
        name = _BOUNDS.get(type(m))
        if name is None:
            raise _Unsupported(f"constraint {m!r}")
        meta[name] = getattr(m, name)
    return Annotated[tp, msgspec.Meta(**meta)]


def _mirror_type(tp: Any, metadata: list[Any], structs: dict[type, Any]) -> Any:
    """The msgspec type that accepts what pydantic accepts for tp (or refuses more, never less)."""
    origin = get_origin(tp)
    if tp is Any:
        if metadata:
            raise _Unsupported("a constraint on Any")
        return Any
    if tp in (int, float, str, bool):
        return _bounded(tp, metadata)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        others = [a for a in args if a is not type(None)]
        if len(others) != 1 or len(args) != 2:
            raise _Unsupported(f"union {tp!r}")
        return _mirror_type(others[0], metadata, structs) | None
    if origin is Literal and not metadata and all(type(a) is str for a in get_args(tp)):
        return tp  # both accept exactly the listed strings
    if origin is list and not metadata:
        return list[_mirror_type(get_args(tp)[0], [], structs)]
    if origin is dict and not metadata:
        key, value = get_args(tp)
        return dict[_mirror_type(key, [], structs), _mirror_type(value, [], structs)]
    if isinstance(tp, type) and issubclass(tp, BaseModel) and not metadata:
        return _mirror_struct(tp, structs)
    raise _Unsupported(f"type {tp!r}")


def _no_validators(model: type[BaseModel]) -> None:
    """Refuse a model whose instances pydantic would check beyond their fields' types and bounds."""
    decorators = model.__pydantic_decorators__
    if any(
        getattr(decorators, kind)
        for kind in ("validators", "field_validators", "root_validators", "model_validators")
    ):
        raise _Unsupported(f"{model.__name__} has validators")


def _mirror_struct(model: type[BaseModel], structs: dict[type, Any]) -> Any:
    """A msgspec Struct with the model's fields, required fields and refusal of unknown fields."""
    if model in structs:
        return structs[model]
    _no_validators(model)
    extra = model.model_config.get("extra") or "ignore"
    if extra == "allow":
        raise _Unsupported(f"{model.__name__} allows extra fields")
    fields = []
    for name, info in model.model_fields.items():
        if info.alias not in (None, name) or info.validation_alias is not None:
            raise _Unsupported(f"{model.__name__}.{name} has an alias")
        tp = _mirror_type(info.annotation, list(info.metadata), structs)
        if info.is_required():
            fields.append((name, tp))
        elif info.default_factory is not None:
            fields.append((name, tp, msgspec.field(default_factory=info.default_factory)))
        else:
            fields.append((name, tp, info.default))
    # Samples hold no reference cycles: the collector need not track them (gc=False). kw_only: pydantic allows
    # a required field after an optional one (SampleRecord's score after its seed), a positional struct not.
    struct = msgspec.defstruct(
        f"_{model.__name__}", fields, forbid_unknown_fields=extra == "forbid", gc=False, kw_only=True
    )
    structs[model] = struct
    return struct


def _after_validators(model: type[BaseModel]) -> list[Any]:
    """The model's validators that see the built instance; any other kind cannot be replayed here."""
    decorators = model.__pydantic_decorators__
    if decorators.validators or decorators.root_validators:
        raise _Unsupported(f"{model.__name__} has old-style validators")
    found = []
    for d in decorators.model_validators.values():
        if d.info.mode != "after":
            raise _Unsupported(f"{model.__name__} has a {d.info.mode} model validator")
        found.append(d.func)
    return found


def _plan() -> tuple[msgspec.json.Decoder, list[Any], list[Any]] | str:
    """The decoder of a whole log and the validators to replay with samples, or why there is none."""
    try:
        sample = _mirror_struct(SampleRecord, {})
        for model, field in ((ItemResult, "samples"), (EvalLog, "items")):
            for d in model.__pydantic_decorators__.field_validators.values():
                if field in d.info.fields or "*" in d.info.fields:
                    raise _Unsupported(f"{model.__name__} validates {field} itself")
        item_validators, log_validators = _after_validators(ItemResult), _after_validators(EvalLog)
    except _Unsupported as e:
        return str(e)
    # Only samples are typed here; every other field is validated by pydantic on the way to EvalLog.
    item = msgspec.defstruct(
        "_Item",
        [("samples", list[sample] | None, msgspec.UNSET)]
        + [(name, Any, msgspec.UNSET) for name in ItemResult.model_fields if name != "samples"],
        forbid_unknown_fields=True,
    )
    log = msgspec.defstruct(
        "_Log",
        [("items", list[item], msgspec.UNSET)]
        + [(name, Any, msgspec.UNSET) for name in EvalLog.model_fields if name != "items"],
        forbid_unknown_fields=True,
    )
    return msgspec.json.Decoder(log), item_validators, log_validators


_SAMPLES_AGREE = ItemResult.__pydantic_decorators__.model_validators["_samples_agree"].func
_PLANNED = _plan()
_PLAN = None if isinstance(_PLANNED, str) else _PLANNED
_ITEMS = TypeAdapter(list[ItemResult])


def why_no_fast_path() -> str | None:
    """None when read_log decodes samples itself, else the part of the models it cannot mirror.

    Without the fast path every log is read by contract.evallog.load (correct, at that speed); extend
    _mirror_type or the validator replay to bring it back.
    """
    return _PLANNED if isinstance(_PLANNED, str) else None


def _view(model: BaseModel, **fields: Any) -> types.SimpleNamespace:
    """A validated model's field values, some replaced (the decoded samples, or items with theirs)."""
    return types.SimpleNamespace(**{**model.__dict__, **fields})


def _present(struct: Any, names: Any) -> dict[str, Any]:
    return {n: v for n in names if (v := getattr(struct, n)) is not msgspec.UNSET}


def _keep_dropped(results: list[ItemResult], flat: list[Any], lens: list[int]) -> None:
    """Keep on each item what the analyses read of its samples before they are dropped.

    Seeds, finish reasons, answers, mean log-probabilities, path verdicts and whether tool calls are
    recorded (ItemResult's private fields, read through its methods), taken from the whole log's samples
    at once: flat holds them in item order, lens how many each item has.
    """
    seeds, finish = tuple(map(attrgetter("seed"), flat)), tuple(map(attrgetter("finish_reason"), flat))
    paths = tuple(map(attrgetter("path"), flat))
    answers = tuple(map(attrgetter("answer"), flat))
    logprobs = tuple(map(attrgetter("mean_logprob"), flat))
    with_logprobs = logprobs.count(None) < len(logprobs)
    with_paths = paths.count(None) < len(paths)
    with_calls = tuple(map(attrgetter("tool_calls"), flat)).count(None) < len(flat)
    end = 0
    for result, n in zip(results, lens, strict=True):
        result._seeds, result._finish = seeds[end : end + n], finish[end : end + n]
        result._answers = answers[end : end + n]
        if with_logprobs:
            result._logprobs = logprobs[end : end + n]
        if with_paths:
            mine = paths[end : end + n]
            result._paths = None if mine.count(None) == n else mine
        if with_calls:
            result._tool_calls = any(s.tool_calls is not None for s in flat[end : end + n])
        end += n


def _agreeing(results: list[ItemResult], flat: list[Any], lens: list[int]) -> np.ndarray:
    """Per item, True where ItemResult._samples_agree surely accepts its samples (flat, lens as above).

    The validator loops sample by sample in Python; this compares every sample of the log at once in
    numpy. It is never True where the validator would refuse: where an item's lists differ in length
    from its samples, or a number does not fit 64 bits, it answers False for every item, and a False
    leaves the verdict, and the wording of a refusal, to the validator itself.
    """
    if not all(
        n > 0
        and len(r.scores) == n
        and (r.gen_tokens is None or len(r.gen_tokens) == n)
        and (r.undecided is None or len(r.undecided) == n)
        for r, n in zip(results, lens, strict=True)
    ):
        return np.zeros(len(results), dtype=bool)
    counts = np.array(lens)
    starts = np.cumsum(counts) - counts
    try:
        bad = _disagreeing(results, flat, counts, starts)
    except OverflowError:
        return np.zeros(len(results), dtype=bool)
    return ~np.logical_or.reduceat(bad, starts)


def _disagreeing(
    results: list[ItemResult], flat: list[Any], counts: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """Per sample of the log, True where its index, score, verdict or tokens differ from its item's lists."""
    total = len(flat)
    position = np.arange(total) - np.repeat(starts, counts)
    bad = np.fromiter(map(attrgetter("index"), flat), np.int64, count=total) != position
    bad |= np.fromiter(map(attrgetter("score"), flat), np.float64, count=total) != np.fromiter(
        chain.from_iterable(r.scores for r in results), np.float64, count=total
    )
    verdicts = list(map(attrgetter("verdict"), flat))
    if verdicts.count(None) < total:
        flagged = chain.from_iterable(r.undecided or [False] * len(r.scores) for r in results)
        bad |= [v is not None and (v == "undecided") != f for v, f in zip(verdicts, flagged, strict=True)]
    has = np.repeat([r.gen_tokens is not None for r in results], counts)
    if not has.any():
        return bad
    tokens = list(map(attrgetter("gen_tokens"), flat))
    expected = chain.from_iterable(r.gen_tokens or [None] * len(r.scores) for r in results)
    if has.all() and None not in tokens:
        return bad | (np.array(tokens, dtype=np.int64) != np.fromiter(expected, np.int64, count=total))
    # A sample without tokens is not compared (as the validator does).
    return bad | [g is not None and e is not None and g != e for g, e in zip(tokens, expected, strict=True)]


def _read(data: bytes) -> EvalLog:
    """The log without samples, or ValueError / msgspec.ValidationError for a log to read in full."""
    assert _PLAN is not None
    decoder, item_validators, log_validators = _PLAN
    raw = decoder.decode(data)
    header = _present(raw, [n for n in EvalLog.model_fields if n != "items"])
    views = []
    if raw.items is not msgspec.UNSET:
        names = [n for n in ItemResult.model_fields if n != "samples"]
        header["items"] = _ITEMS.validate_python([_present(it, names) for it in raw.items])
        samples = [None if it.samples is msgspec.UNSET else it.samples for it in raw.items]
        held = [(r, x) for r, x in zip(header["items"], samples, strict=True) if x is not None]
        results, lens = [r for r, _ in held], [len(x) for _, x in held]
        flat = list(chain.from_iterable(x for _, x in held))
        _keep_dropped(results, flat, lens)
        agree = iter(_agreeing(results, flat, lens) if held else [])
        # The one validator replayed by a faster equivalent where it surely accepts; any other as it is.
        others = [check for check in item_validators if check is not _SAMPLES_AGREE]
        for result, x in zip(header["items"], samples, strict=True):
            if x is None:
                views.append(result)
                continue
            view = _view(result, samples=x)
            for check in others if next(agree) else item_validators:
                check(view)
            views.append(view)
    log = EvalLog.model_validate(header)
    seen = _view(log, items=views)
    for check in log_validators:
        check(seen)
    return log


def read_log(path: str | Path) -> EvalLog:
    """Read and validate one EvalLog in full (as contract.evallog.load) and return it without its samples.

    A log that does not validate raises EvalLogError naming the file, item and field, worded as load words it.
    """
    if _PLAN is None or not Path(path).is_file():
        return _without_samples(load(path))
    try:
        return _read(Path(path).read_bytes())
    except (msgspec.ValidationError, msgspec.DecodeError, ValueError):
        # Refused here (msgspec refuses more than pydantic's lax mode): load words the problem, or reads
        # a log that only msgspec refused.
        return _without_samples(load(path))


def _without_samples(log: EvalLog) -> EvalLog:
    for it in log.items:
        it._seeds = it.sample_seeds()
        it._finish = it.sample_finish_reasons()
        it._paths = it.sample_paths()
        it._tool_calls = it.records_tool_calls()
        it._answers = it.sample_answers()
        it._logprobs = it.sample_mean_logprobs()
        it.samples = None
    return log


def read_logs(paths: Sequence[str | Path]) -> list[EvalLog]:
    """read_log of several logs at once: each beyond the first in a forked process, one per spare CPU.

    Decoding and validating a 60 MB log is about half a second of one CPU; the logs of one report are
    independent, so a second core halves the wait. A log without samples pickles back in a tenth of its
    reading time. Errors come back as read_log raises them. Falls back to reading in turn where fork is
    not available (Windows; a spawned process would import everything again).
    """
    paths = list(paths)
    workers = min(len(paths) - 1, (os.cpu_count() or 1) - 1)
    if workers < 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [read_log(p) for p in paths]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        others = [pool.submit(read_log, p) for p in paths[1:]]
        first = read_log(paths[0])
        return [first, *(f.result() for f in others)]
