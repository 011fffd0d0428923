"""What a pip user gets besides the code: the tested pins, the license."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_packaged_constraints_are_the_repo_constraints():
    # bridge/constraints.txt ships in the wheel; the top-level file is what make test installs.
    assert (ROOT / "bridge" / "constraints.txt").read_text() == (ROOT / "constraints.txt").read_text()


def test_python_m_bridge_constraints_prints_the_pins():
    out = subprocess.run([sys.executable, "-m", "bridge.constraints"], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    assert out.stdout == (ROOT / "constraints.txt").read_text()
    assert "\nray==" in out.stdout


def test_license_is_apache_2():
    assert "Apache License" in (ROOT / "LICENSE").read_text()[:200]
