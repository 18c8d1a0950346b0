"""Dependencies point one way (issue 17, Checks), from the build's side:
scripts/check_layers.py reads the includes and the built objects' symbols
(nm: every call that links, macros and inline functions included) and finds
no call from a lower module into a higher one, and no circle across the
files of src/io, beyond the edges it lists as being fixed. test_layers.py
reads the same order from the sources."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import check_layers  # noqa: E402


def _build_dir() -> Path:
    cli = os.environ.get("REEL_CLI")
    return Path(cli).parent if cli else ROOT / "build"


def test_no_dependency_points_up():
    found, fixed, had_objects = check_layers.problems(_build_dir())
    assert not found, "\n".join(found)
    assert had_objects, f"no objects in {_build_dir()}: calls were not checked (build the tree first)"


def test_the_check_sees_an_upward_include_and_a_circle(tmp_path, monkeypatch):
    """Against a small fake tree: core including a pipeline header is caught."""
    for mod, text in (("core", '#include "pipeline/loader_internal.h"\n'), ("pipeline", '#include "core/x.h"\n')):
        (tmp_path / "src" / mod).mkdir(parents=True)
        (tmp_path / "src" / mod / "a.c").write_text(text)
    (tmp_path / "include" / "reel").mkdir(parents=True)
    monkeypatch.setattr(check_layers, "ROOT", tmp_path)
    monkeypatch.setattr(check_layers, "KNOWN_PENDING", {})
    found, _, _ = check_layers.problems(tmp_path / "build")
    assert any(p.startswith("include core -> pipeline") for p in found), found
    assert not any("pipeline -> core" in p for p in found)
    assert check_layers.cycles({"a.c": ["b.c"], "b.c": ["c.c"], "c.c": ["a.c"], "d.c": ["a.c"]}) == [["a.c", "b.c", "c.c"]]
