# tests/python/test_json_outputs.py: every JSON document reel writes is strict
# UTF-8 JSON, also for a file name whose bytes are not UTF-8 (legal on Linux):
# reel info --json, reel bench --json with its failure records, the Chrome
# trace of reel bench --trace and of Loader.write_trace (issue 25, defect 6).
from __future__ import annotations

import json
import os
import subprocess

import pytest

import reel
import reel._testing


def _strict(data: bytes):
    return json.loads(data.decode("utf-8", errors="strict"))


@pytest.fixture
def odd_names(tmp_path):
    """A class folder with a good video and a damaged one, both named with
    bytes that are not UTF-8 (\\xff, \\xfe), and a control character."""
    root = os.fsencode(tmp_path / "ds")
    os.makedirs(root + b"/c0")
    good = root + b"/c0/good\xff\x01.mp4"
    reel._testing.write_video(os.fsdecode(good), width=64, height=48, frames=12, gop=4)
    with open(root + b"/c0/broken\xfe.mp4", "wb") as f:
        f.write(b"\x00" * 4096)
    return root, good


def test_every_json_output_parses_for_a_name_that_is_not_utf8(odd_names, tmp_path):
    cli = os.environ.get("REEL_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("the reel CLI is not built (set REEL_CLI)")
    root, good = odd_names
    info = _strict(subprocess.run([cli, "info", "--json", good], capture_output=True, check=True, timeout=120).stdout)
    assert info["path"].endswith("good\u00ff\u0001.mp4"), info["path"]  # each byte as the code point of its value
    trace = tmp_path / "bench_trace.json"
    p = subprocess.run([cli, "bench", root, "--frames-per-clip", "2", "--size", "32", "--json", "--trace", trace],
                       capture_output=True, timeout=300)
    bench = _strict(p.stdout)
    assert [f["path"].rsplit("/", 1)[-1] for f in bench["failures"]] == ["broken\u00fe.mp4"], bench["failures"]
    _strict(trace.read_bytes())
    with reel.Loader(os.fsdecode(root), frames_per_clip=2, size=32, batch_size=1, epochs=1) as L:
        for _ in L:
            pass
        L.write_trace(str(tmp_path / "loader_trace.json"))
    _strict((tmp_path / "loader_trace.json").read_bytes())
