"""The conformance suite's constructors: a dict of columns -> each framework's native object.

Every adapter adds one entry; every test in ``test_conformance.py`` then runs for it.
``to_pydict`` reads a native object back into ``{column: [values]}`` so the
reverse direction (``adapter.from_dataset``) is checked by the same tests.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass
class Constructor:
    name: str
    package: str
    make: Callable[[dict[str, list[Any]]], Any]
    to_pydict: Callable[[Any], dict[str, list[Any]]]
    #: Adapter used for the reverse direction; None where only the capsule door exists.
    adapter: str | None
    #: Pass to from_dataset.
    back_options: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def available(self) -> bool:
        return importlib.util.find_spec(self.package) is not None


def _pandas_make(d):
    import pandas as pd

    return pd.DataFrame(d)


def _pandas_back(df):
    return {c: df[c].tolist() for c in df.columns}


def _arrow_make(d):
    import pyarrow as pa

    return pa.table(d)


def _numpy_make(d):
    import numpy as np

    return {k: np.asarray(v) for k, v in d.items()}


def _numpy_back(d):
    return {k: v.tolist() for k, v in d.items()}


def _polars_make(d):
    import polars as pl

    if any(type(v).__module__.startswith("pandas") for v in d.values()):  # a pandas Categorical, say
        import pandas as pd

        return pl.from_pandas(pd.DataFrame(d))
    return pl.DataFrame(d)


def _duckdb_make(d):
    import duckdb
    import pyarrow as pa

    t = pa.table(d)  # noqa: F841 - referenced by the SQL below
    return duckdb.sql("SELECT * FROM t").arrow()


CONSTRUCTORS: list[Constructor] = [
    Constructor("pandas", "pandas", _pandas_make, _pandas_back, "pandas"),
    Constructor("arrow", "pyarrow", _arrow_make, lambda t: t.to_pydict(), "arrow"),
    Constructor("numpy", "numpy", _numpy_make, _numpy_back, "numpy"),
    Constructor("polars-capsule", "polars", _polars_make, lambda df: df.to_dict(as_series=False), None),
    Constructor("duckdb-capsule", "duckdb", _duckdb_make, lambda r: r.read_all().to_pydict()
                if hasattr(r, "read_all") else r.to_pydict(), None),
]


def register(c: Constructor) -> None:
    CONSTRUCTORS.append(c)


# Adapters with their own constructor modules add themselves here.
for _mod in ("tests.constructors_engines",):
    if importlib.util.find_spec(_mod) is not None:
        importlib.import_module(_mod)
