# tests/python/test_hardening.py: loud failures (issue 10): an epoch in which
# no sample loads raises instead of ending quietly, min_coverage does the same
# below a threshold, relative manifest paths resolve against the manifest's
# folder (the resolved path is in the failure), and the failure list is
# bounded while the counts per cause cover the whole run.
from __future__ import annotations

import pytest

import reel
import reel._testing


def _manifest(tmp_path, rows):
    m = tmp_path / "m.csv"
    m.write_text("path,label\n" + "".join(f"{p},{lab}\n" for p, lab in rows))
    return m


def test_an_epoch_of_nothing_raises_naming_the_failures(tmp_path):
    m = _manifest(tmp_path, [("nope/x.mp4", 0), ("nope/y.mp4", 1)])
    with reel.Loader(m, frames_per_clip=2, size=32, batch_size=2) as L:
        with pytest.raises(reel.ReelError) as e:
            for _ in L:
                pass
    assert e.value.status == reel._reel.STATUS["NO_DATA"]
    msg = str(e.value)
    assert "no sample of epoch 0 could be loaded" in msg
    assert str(tmp_path / "nope" / "x.mp4") in msg  # resolved against the manifest's folder


def test_min_coverage_and_bounded_failures(tmp_path):
    (tmp_path / "v").mkdir()
    reel._testing.write_video(str(tmp_path / "v" / "a.mp4"), frames=20)
    rows = [("v/a.mp4", 0)] + [(f"v/missing{i}.mp4", 1) for i in range(5)]
    m = _manifest(tmp_path, rows)
    # without a threshold: 1 of 6 loaded, the epoch ends normally
    with reel.Loader(m, frames_per_clip=2, size=32, batch_size=6, epochs=3, failure_log_size=4) as L:
        n = 0
        for _epoch in range(3):
            n += sum(len(b) for b in L)
        assert n == 3
        met = L.metrics()
        assert met["failure_count"] == 15
        assert len(met["failures"]) == 4  # the most recent ones
        assert {f["epoch"] for f in met["failures"]} == {2}
        assert met["failures_by_cause"] == {"file not found": 15}
    with reel.Loader(m, frames_per_clip=2, size=32, batch_size=6, min_coverage=0.5) as L:
        with pytest.raises(reel.ReelError, match="below min_coverage"):
            for _ in L:
                pass
