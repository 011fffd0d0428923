"""The local cluster ``ensure_ray`` starts frees dropped objects sooner than Ray's once a second."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bridge._ray import FREE_OBJECTS_PERIOD_ENV, FREE_OBJECTS_PERIOD_MS

# In a fresh process: let raybridge start Ray, then read the setting from the raylet it spawned and from
# this process's own environment (which must not keep it).
PROBE = f"""
import os, psutil, bridge
from bridge._ray import ensure_ray
ensure_ray()
raylets = [p for p in psutil.Process().children(recursive=True) if p.name().startswith("raylet")]
assert len(raylets) == 1, [p.name() for p in psutil.Process().children(recursive=True)]
print(raylets[0].environ().get({FREE_OBJECTS_PERIOD_ENV!r}), os.environ.get({FREE_OBJECTS_PERIOD_ENV!r}))
assert bridge.from_items([{{"x": 1}}]).take_all() == [{{"x": 1}}]
"""


def _probe(**env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", FREE_OBJECTS_PERIOD_ENV)}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300,
                         env={**clean, **env})
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()[-2:]


@pytest.mark.parametrize(("env", "raylet", "driver"), [
    ({}, str(FREE_OBJECTS_PERIOD_MS), "None"),
    ({FREE_OBJECTS_PERIOD_ENV: "700"}, "700", "700"),  # the user's own setting wins
])
def test_a_cluster_started_by_raybridge_frees_dropped_objects_sooner(env, raylet, driver):
    assert FREE_OBJECTS_PERIOD_MS < 1000  # Ray's default, the reason the setting exists
    assert _probe(**env) == [raylet, driver]
