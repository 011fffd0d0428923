from __future__ import annotations

import pytest

from tests.constructors import CONSTRUCTORS


def pytest_generate_tests(metafunc):
    if "constructor" in metafunc.fixturenames:
        params = [pytest.param(c, id=c.name, marks=() if c.available else pytest.mark.skip(
            reason=f"{c.package} not installed")) for c in CONSTRUCTORS]
        metafunc.parametrize("constructor", params)
