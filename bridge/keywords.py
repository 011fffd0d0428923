"""Keyword arguments a call does not take, refused with what to do instead (Ray Data's above all).

A Ray Data user calls ``bridge.read_csv(path, delimiter=";")``, ``ds.select_columns(cols,
concurrency=1)`` or ``ds.iter_batches(prefetch_blocks=2)`` as they would there; Python's own
``TypeError: read_csv() got an unexpected keyword argument 'delimiter'`` named no way forward.
:func:`checked_keywords` wraps a public function so that such a call raises
:class:`~bridge.errors.BridgeTypeError` naming the call, the arguments it takes, and the way
to say the same thing here (or the nearest spelling).  A call with known keywords costs one
set comparison.

Example:
    >>> @checked_keywords("demo")
    ... def demo(path, *, override_num_blocks=None):
    ...     return path
    >>> demo("x", override_num_blocks=2)
    'x'
    >>> demo("x", parallelism=2)
    Traceback (most recent call last):
    ...
    bridge.errors.BridgeTypeError: demo: unexpected keyword argument(s) ['parallelism']; it takes ['override_num_blocks', 'path']
    Hint: parallelism=: Ray Data's name before 2.10; pass override_num_blocks=
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])

#: Ray Data keywords with no counterpart of the same name here, and what does that here
#: (``parallelism=`` is answered in :func:`_hint`: its way depends on the call).
RAY_DATA_KEYWORDS: dict[str, str] = {
    "concurrency": "reads and column steps run as many tasks at once as the cluster has CPUs; drop it "
                   "(pass override_num_blocks= to a read to set how many blocks it makes)",
    "num_cpus": "this step's tasks take 1 CPU each; drop it (map_batches(num_cpus=) sets a function's)",
    "num_gpus": "only map_batches / map / flat_map / filter take num_gpus=",
    "ray_remote_args": "only map_batches / map / flat_map / filter take Ray options (as keywords: memory=, "
                       "resources=); drop it",
    "ray_remote_args_fn": "pass the Ray options to map_batches as keywords (memory=, resources=)",
    "ignore_missing_paths": "a missing path raises, naming it: pass only paths that exist "
                            "([p for p in paths if os.path.exists(p)])",
    "meta_provider": "file sizes and row counts are read from the files themselves; drop it",
    "arrow_open_stream_args": "pass a configured filesystem= (pyarrow.fs or fsspec) instead",
    "arrow_open_file_args": "pass a configured filesystem= (pyarrow.fs or fsspec) instead",
    "arrow_parquet_args": "pass the pyarrow options themselves: columns=, filter=, schema=",
    "dataset_kwargs": "pass partitioning=, filesystem= and schema= directly",
    "tensor_column_schema": "read the column as it is stored, then reshape it in map_batches "
                            "(batch['x'].reshape(-1, *shape))",
    "delimiter": "pass parse_options=pyarrow.csv.ParseOptions(delimiter=';')",
    "locality_hints": "splits are not placed by node here; drop it",
    "num_partitions": "the exchange sizes its reduce side from the data; drop it",
    "fetch_if_missing": "schema() runs the plan up to its first block only when the plan does not say; drop it",
    "additional_columns": "name those columns in feature_columns= or label_columns=",
    "prefetch_blocks": "pass prefetch_batches= (Ray Data's name since 2.5)",
    "batch_size": "set batch_size= where the Dataset is consumed (iter_batches, map_batches); a read's "
                  "blocks follow the files (row groups)",
    "shuffle": "call ds.random_shuffle() first, or pass local_shuffle_buffer_size= to the iterator",
}


def _hint(unknown: list[str], taken: list[str]) -> str:
    import difflib

    hints = []
    for key in unknown:
        if key == "parallelism" and "override_num_blocks" in taken:
            hints.append("parallelism=: Ray Data's name before 2.10; pass override_num_blocks=")
        elif key in RAY_DATA_KEYWORDS:
            hints.append(f"{key}=: {RAY_DATA_KEYWORDS[key]}")
        else:
            near = difflib.get_close_matches(key, taken, n=1, cutoff=0.6)
            if near:
                hints.append(f"{key}=: did you mean {near[0]}=?")
    return "; ".join(hints) if hints else "check the spelling against the arguments it takes"


def refuse_unknown(where: str, given: Any, taken: Any, hints: dict[str, str] | None = None) -> None:
    """Raise :class:`~bridge.errors.BridgeTypeError` for the keywords of ``given`` not in ``taken`` (no-op
    without any), each with ``hints[key]``, else Ray Data's way here, else the nearest spelling."""
    unknown = [k for k in given if k not in taken]
    if not unknown:
        return
    from bridge.errors import BridgeTypeError

    names = sorted(set(taken) - {"self", "ds", "it"})  # (an adapter function's Dataset or iterator: the method's self)
    own = [f"{k}=: {hints[k]}" for k in unknown if hints and k in hints]
    rest = [k for k in unknown if not (hints and k in hints)]
    hint = "; ".join(own + ([_hint(rest, names)] if rest else []))
    raise BridgeTypeError(f"{where}: unexpected keyword argument(s) {unknown}; it takes {names}", hint)


def checked_keywords(where: str) -> Callable[[F], F]:
    """Wrap ``fn`` so that an unknown keyword raises :class:`~bridge.errors.BridgeTypeError` naming ``where``."""

    def wrap(fn: F) -> F:
        params = inspect.signature(fn).parameters.values()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            return fn  # it takes any keyword: checks its own
        named = frozenset(p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                                inspect.Parameter.KEYWORD_ONLY))

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            if kwargs and not named.issuperset(kwargs):
                refuse_unknown(where, kwargs, named)
            return fn(*args, **kwargs)

        return cast(F, checked)

    return wrap


__all__ = ["RAY_DATA_KEYWORDS", "checked_keywords", "refuse_unknown"]
