"""The Python side's conventions, checked against the tree and the built
extension: ruff (pyflakes, pycodestyle, bugbear), mypy over python/reel, and
mypy's stubtest of the shipped stubs (_reel.pyi, _synth.pyi) against the
extension modules that were actually built."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list, what: str) -> None:
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{what} failed:\n{r.stdout[-6000:]}\n{r.stderr[-3000:]}"


def _module(name: str) -> None:
    if subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True).returncode != 0:
        pytest.skip(f"{name} is not installed (make test installs it)")


def test_ruff_clean():
    exe = shutil.which("ruff")
    if not exe:
        _module("ruff")
        exe = None
    cmd = [exe] if exe else [sys.executable, "-m", "ruff"]
    _run(cmd + ["check", "python", "tests/python", "tests/wheel", "bench", "examples"], "ruff")


def test_mypy_clean():
    _module("mypy")
    _run([sys.executable, "-m", "mypy"], "mypy")


def test_stubs_match_the_built_extension():
    _module("mypy")
    _run([sys.executable, "-m", "mypy.stubtest", "reel._reel", "reel._synth",
          "--allowlist", str(ROOT / "tests/python/stubtest_allowlist.txt")], "stubtest")


def test_mypy_and_ruff_target_the_oldest_supported_python():
    """mypy's python_version and ruff's target-version are requires-python's floor."""
    tomllib = pytest.importorskip("tomllib")
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    floor = cfg["project"]["requires-python"]
    assert floor.startswith(">="), floor
    version = floor[2:].strip()
    assert cfg["tool"]["mypy"]["python_version"] == version
    assert cfg["tool"]["ruff"]["target-version"] == "py" + version.replace(".", "")
    cmake = (ROOT / "CMakeLists.txt").read_text()
    assert f"find_package(Python {version} REQUIRED" in cmake


def test_gil_macros_stand_alone():
    """Py_BEGIN/END_ALLOW_THREADS are statements (.clang-format's
    StatementMacros): no statement is glued onto one, which clang-format did
    before it knew them (`Py_END_ALLOW_THREADS decoder_release(self);`)."""
    import re
    style = (ROOT / ".clang-format").read_text()
    assert re.search(r"StatementMacros:.*Py_END_ALLOW_THREADS", style)
    glued = []
    for p in sorted((ROOT / "python" / "reel").glob("*.c")):
        for k, line in enumerate(p.read_text().splitlines(), 1):
            if re.search(r"\bPy_(BEGIN|END)_ALLOW_THREADS\b\s*\S", line):
                glued.append(f"{p.name}:{k}: {line.strip()}")
    assert not glued, glued
