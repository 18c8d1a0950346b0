# tests/python/test_io_layers.py: src/io has no include or call circle
# (issue 17): scripts/check_io_layers.py passes on the tree, and finds a
# circle planted in a copy of it (a leaf calling the front end, a header
# including one that includes it back, a transport including io/io_internal.h).
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_io_layers.py"


def _checker():
    spec = importlib.util.spec_from_file_location("check_io_layers", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_src_io_has_no_circle():
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "src/io layers: ok" in r.stdout


def test_a_planted_circle_is_found(tmp_path):
    io = tmp_path / "io"
    shutil.copytree(ROOT / "src" / "io", io)
    check = _checker().check
    assert check(io) == []
    # the leaf calls the front end: io.c -> io_common.c -> io.c
    with open(io / "io_common.c", "a") as f:
        f.write("\nint reel__planted(const char *u)\n{\n    return reel__io_open(0, u, 0, 0);\n}\n")
    found = check(io)
    assert any(f.startswith("call cycle among") and "io.c" in f and "io_common.c" in f for f in found), found
    # a header circle, and a transport on top of the front end
    shutil.rmtree(io)
    shutil.copytree(ROOT / "src" / "io", io)
    (io / "pool.h").write_text((io / "pool.h").read_text() + '\n#include "io/http.h"\n')
    (io / "http.h").write_text((io / "http.h").read_text() + '\n#include "io/pool.h"\n')
    (io / "file.c").write_text('#include "io/io_internal.h"\n' + (io / "file.c").read_text())
    found = check(io)
    assert any(f.startswith("include cycle among http.h, pool.h") for f in found), found
    assert any("file.c is a transport but includes io/io_internal.h" in f for f in found), found
