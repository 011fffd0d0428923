from __future__ import annotations

import pytest

from tests.constructors import CONSTRUCTORS


@pytest.fixture
def context():
    """The process's DataContext, given back as it was after the test (settings a test changes stay in it)."""
    import bridge

    ctx = bridge.DataContext.get_current()
    saved = ctx.copy()
    yield ctx
    bridge.DataContext._set_current(saved)


def pytest_generate_tests(metafunc):
    if "constructor" in metafunc.fixturenames:
        params = [pytest.param(c, id=c.name, marks=() if c.available else pytest.mark.skip(
            reason=f"{c.package} not installed")) for c in CONSTRUCTORS]
        metafunc.parametrize("constructor", params)
