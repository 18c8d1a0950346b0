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


def test_a_folder_scan_visits_each_folder_once_and_says_what_it_skipped(tmp_path):
    """Symlink loops (issue 25): a link back to its own folder listed the one
    video 32 times, two such links made ~2^32 paths and the scan never
    returned. Each folder is scanned once (by device and inode); the links
    not followed are in dataset_info's `skipped` and the loader's failures."""
    import os
    one, two = tmp_path / "one", tmp_path / "two"
    for root, links in ((one, ["self"]), (two, ["a", "b", "c"])):
        (root / "c0").mkdir(parents=True)
        reel._testing.write_video(str(root / "c0" / "v.mp4"), frames=8)
        for name in links:
            os.symlink(".", root / "c0" / name)
    os.symlink(str(one / "c0"), one / "c1")  # a second way into c0: its videos once, under the first name
    info = reel.dataset_info(str(one))
    assert info["size"] == 1, info
    assert len(info["skipped"]) == 2 and all("scanned already" in s for s in info["skipped"]), info
    info = reel.dataset_info(str(two))  # three loops: returns at once (2^96 paths before)
    assert info["size"] == 1 and len(info["skipped"]) == 3, info
    with reel.Loader(str(two), frames_per_clip=2, size=32, batch_size=1, epochs=1) as L:
        assert sum(len(b) for b in L) == 1
        fails = L.metrics()["failures"]
    assert sorted(f["path"] for f in fails) == sorted(info["skipped"])
    assert all(f["sample"] == -1 and "skipped" in f["reason"] for f in fails)


def test_a_manifest_from_a_url_refuses_local_paths_by_name(tmp_path):
    """A manifest fetched over http(s) listed absolute local paths and reel
    decoded them (and told the sender which existed). Its entries must be
    URLs or paths relative to it: a local path is refused by name, never
    opened, with the same words whether the file exists or not."""
    from servers import nginx
    www = tmp_path / "www"
    (www / "c0").mkdir(parents=True)
    reel._testing.write_video(str(www / "c0" / "ok.mp4"), frames=8)
    local = tmp_path / "local.mp4"
    reel._testing.write_video(str(local), frames=8)
    absent = tmp_path / "absent.mp4"
    (www / "m.csv").write_text(f"path,label\nc0/ok.mp4,0\n{local},0\n{absent},1\n")
    with nginx(www) as base:
        with reel.Loader(f"{base}/m.csv", frames_per_clip=2, size=32, batch_size=3, epochs=1, shuffle=False) as L:
            loaded = [c.path for b in L for c in b.info]
            fails = L.metrics()["failures"]
    assert loaded == [f"{base}/c0/ok.mp4"]
    reasons = {f["path"]: f["reason"] for f in fails}
    assert set(reasons) == {str(local), str(absent)}, fails
    for path, why in reasons.items():
        assert why == (f"{path}: a local path in a manifest read from a URL is refused ({base}/m.csv, line "
                       f"{3 if path == str(local) else 4}: its entries must be URLs or paths relative to it)")
