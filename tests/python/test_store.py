# tests/python/test_store.py: the packed store from Python: reel.pack with a
# progress callable, store_info and store_verify, reel.Loader over a store
# (raw: byte-identical batches to the video path with the same seed and a
# transform at the stored size), and `python -m reel.pack` as two ranks of a
# split build that wait for each other and merge.
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import reel
import reel._testing
from conftest import read_indices


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("videos")
    for c in ("cat", "dog"):
        (root / c).mkdir()
        for v in range(3):
            reel._testing.write_video(str(root / c / f"v{v}.mp4"), width=160, height=120, frames=30 + 5 * v, gop=10,
                                      seed=v + (7 if c == "dog" else 1))
    return root


def test_pack_info_verify(videos, tmp_path):
    seen = []
    rep = reel.pack(videos, tmp_path / "st", size=96, format="jpeg", progress=seen.append)
    assert rep["videos"] == 6 and rep["packed"] == 6 and rep["failed"] == 0 and rep["merged"]
    assert [p["videos_done"] for p in seen] == [1, 2, 3, 4, 5, 6]
    info = reel.store_info(tmp_path / "st")
    assert info["format"] == "jpeg" and info["records"] == 6 and info["class_names"] == ["cat", "dog"]
    assert info["sampler"] is None and info["every"] == 1  # packed without a whole-video sampler
    assert info["frames"] == sum(30 + 5 * v for v in range(3)) * 2
    v = reel.store_verify(tmp_path / "st")
    assert v["ok"] and v["bad"] == 0 and v["records"] == 6
    assert reel.dataset_info(tmp_path / "st") == {"size": 6, "class_names": ["cat", "dog"], "skipped": []}
    with pytest.raises(ValueError):
        reel.pack(videos, tmp_path / "bad", format="gif")
    with pytest.raises(reel.NotFoundError):
        reel.pack(tmp_path / "nowhere", tmp_path / "bad2")


def _epoch(source):
    # a full shuffle: the same order over videos and over stores of any shard layout
    out = []
    with reel.Loader(source, frames_per_clip=4, size=(96, 128), crop=None, batch_size=4, decode_threads=2, seed=3,
                     layout="BTHWC", flip="random", shuffle_window="full") as L:
        for b in L:
            out.append((bytes(memoryview(b.frames)), list(memoryview(b.labels)),
                        [list(i.frame_indices) for i in b.info], [i.flipped for i in b.info]))
    return out


def test_loader_over_a_raw_store_equals_the_video_path(videos, tmp_path):
    reel.pack(videos, tmp_path / "raw", size=96, format="raw")
    a, b = _epoch(videos), _epoch(tmp_path / "raw")
    assert len(a) == len(b) == 2
    assert a == b
    # the embedded index of each delivered (unflipped) frame is the sampler's choice
    with reel.Loader(tmp_path / "raw", frames_per_clip=4, size=(96, 128), crop=None, batch_size=6, seed=5,
                     layout="BTHWC") as L:
        for batch in L:
            got = read_indices(batch.frames)
            want = [i for info in batch.info for i in info.frame_indices]
            assert got == want


def test_python_m_reel_pack_two_ranks_merge(videos, tmp_path):
    out = tmp_path / "parts"
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2")
        procs.append(subprocess.Popen([sys.executable, "-m", "reel.pack", str(videos), str(out), "--size", "96",
                                       "--part", "auto", "--wait", "120", "--json"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        o, e = p.communicate(timeout=180)
        assert p.returncode == 0, e
    assert (out / "store.idx").exists()
    v = reel.store_verify(out)
    assert v["ok"] and v["records"] == 6
    one = tmp_path / "one"
    reel.pack(videos, one, size=96)
    a, b = _epoch(one), _epoch(out)
    assert a == b


def test_loader_over_a_store_shuffle_window_state_dict_and_failures(videos, tmp_path):
    st = tmp_path / "win"
    reel.pack(videos, st, size=96, format="jpeg", shard_size=4096)  # one record per shard

    def order(**kw):
        with reel.Loader(st, frames_per_clip=2, size=(96, 128), crop=None, batch_size=2, seed=4, **kw) as L:
            return [i.sample for b in L for i in b.info]

    # blocks of 3 consecutive records in a shuffled order, each shuffled within
    a = order(shuffle_window=3)
    assert sorted(a) == list(range(6)) and a == order(shuffle_window=3)
    assert {a[0] // 3, a[1] // 3, a[2] // 3} == {a[0] // 3} and {a[3] // 3, a[4] // 3, a[5] // 3} == {a[3] // 3}
    assert order(shuffle_window=6) == order(shuffle_window="full")  # a window of the whole store: a full shuffle
    with pytest.raises(ValueError):
        order(shuffle_window=-1)
    # exact resume on a store through state_dict
    kw = dict(frames_per_clip=2, size=(96, 128), crop=None, batch_size=2, seed=4, shuffle_window=3, epochs=1)
    with reel.Loader(st, **kw) as L:
        full = [bytes(memoryview(b.frames)) for b in L]
    with reel.Loader(st, **kw) as L:
        first = L.next_batch()
        assert first is not None and bytes(memoryview(first.frames)) == full[0]
        del first
        state = L.state_dict()
    with reel.Loader(st, **kw) as L:
        L.load_state_dict(state)
        assert [bytes(memoryview(b.frames)) for b in L] == full[1:]
    with reel.Loader(st, **dict(kw, shuffle_window=2)) as L:  # another order: refused, not silently wrong
        with pytest.raises(ValueError, match="shuffle_window"):
            L.load_state_dict(state)
    # a deleted shard: a named failure under skip, the rest delivered
    shard = next(p for p in sorted(st.iterdir()) if p.suffix == ".bin")
    shard.unlink()
    with reel.Loader(st, frames_per_clip=2, size=(96, 128), crop=None, batch_size=6, seed=4, epochs=1) as L:
        clips = sum(len(b.info) for b in L)
        fails = L.metrics()["failures"]
    assert clips == 5 and len(fails) == 1
    assert all(str(st) in f["reason"] and shard.name in f["reason"] for f in fails)


def test_checksums_are_zlib_crc32_as_store_md_documents(videos, tmp_path):
    # docs/STORE.md: every checksum is zlib.crc32(x, 0xFFFFFFFF) ^ 0xFFFFFFFF. Checked here with Python's zlib on
    # one record entry, one stored frame, one record's bytes and the whole index, reading the layout the doc gives.
    import struct
    import zlib

    def crc(b: bytes) -> int:
        return zlib.crc32(b, 0xFFFFFFFF) ^ 0xFFFFFFFF

    st = tmp_path / "crc"
    reel.pack(videos, st, size=96, format="jpeg")
    idx = (st / "store.idx").read_bytes()
    assert idx[:8] == b"REELSTOR" and struct.unpack_from("<I", idx, 12)[0] == 128
    assert struct.unpack_from("<I", idx, len(idx) - 4)[0] == crc(idx[:-4])
    e = 128  # the first record entry
    marker, size = struct.unpack_from("<II", idx, e)
    assert marker == 0x43455252
    entry = idx[e:e + size]
    assert struct.unpack_from("<I", entry, size - 4)[0] == crc(entry[:-4])
    part, seq, offset, length, rec_crc = struct.unpack_from("<IIQQI", entry, 16)
    nframes = struct.unpack_from("<I", entry, 64)[0]
    shard = (st / f"shard-{part:05d}-{seq:05d}.bin").read_bytes()
    record = shard[offset:offset + length]
    assert len(record) == length and rec_crc == crc(record)
    for k in (0, nframes - 1):
        f_off, f_len, f_crc = struct.unpack_from("<III", entry, 140 + 40 * k)
        assert f_crc == crc(record[f_off:f_off + f_len])
    # and not the formula the doc once gave (initial value 0, no final xor: zlib.crc32(x) as is)
    assert rec_crc != zlib.crc32(record)


def test_verify_reports_bytes_after_the_last_record(videos, tmp_path):
    st = tmp_path / "tail"
    reel.pack(videos, st, size=96, format="jpeg")
    v = reel.store_verify(st)
    assert v["ok"] and v["shards"] == 1 and v["bad_shards"] == 0
    shard = next(p for p in st.iterdir() if p.suffix == ".bin")
    with open(shard, "ab") as f:
        f.write(os.urandom(10000))
    v = reel.store_verify(st)
    assert not v["ok"] and v["bad"] == 0 and v["bad_shards"] == 1 and v["bytes_past_records"] == 10000
    assert shard.name in v["first_problem"] and "past its last record" in v["first_problem"]


def test_pack_whole_video_samplers_store_clips_at_fps_frames(videos, tmp_path):
    """reel.pack(sampler="fps"/"count") and `reel pack --sampler` keep the
    frames reel.clips_at_fps / clips_at_count choose (qwen-vl-utils'): the
    loader reads each record whole and the embedded indices are those."""
    def store_frames(store):
        n = {r["frames"] for r in reel._reel.store_records(store)}
        assert len(n) == 1  # the videos here give every record the same length
        got = {}
        with reel.Loader(store, frames_per_clip=n.pop(), size=(96, 128), crop=None, batch_size=1, shuffle=False,
                         sampler="regular", layout="BTHWC", epochs=1) as L:
            for b in L:  # one clip of the record's whole length
                got[b.info[0].path] = read_indices(b.frames)
        return got

    def want(fn, **kw):
        out = {}
        for p in sorted(videos.glob("*/*.mp4")):
            with reel.VideoDecoder(str(p), size=(16, 16)) as d:
                out[str(p)] = list(fn(d, **kw).indices[0])
        return out

    rep = reel.pack(videos, tmp_path / "fps", size=96, format="raw", sampler="fps", fps=7.0, max_frames=9)
    assert rep["failed"] == 0
    info = reel.store_info(tmp_path / "fps")
    assert info["sampler"] == {"kind": "fps", "fps": 7.0, "min_frames": 4, "max_frames": 9, "frame_factor": 2}
    assert info["fps"] == 0  # the store-wide fps= of a store packed without a sampler; this one's rate is the sampler's
    assert reel.store_info(tmp_path / "fps").get("every") == 0
    w = want(reel.clips_at_fps, fps=7.0, max_frames=9)
    assert sorted(len(v) for v in w.values()) == [8] * 6  # 30..40 frames at 25 fps: 8.4..11.2 -> 8 (max 9)
    assert store_frames(tmp_path / "fps") == w
    cli = os.environ.get("REEL_CLI")
    if not cli:
        pytest.skip("the reel CLI is not built (set REEL_CLI)")
    out = subprocess.run([cli, "pack", str(videos), str(tmp_path / "count"), "--size", "96", "--format", "raw",
                          "--sampler", "count", "--frames", "5"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert store_frames(tmp_path / "count") == want(reel.clips_at_count, nframes=5)
    assert reel.store_info(tmp_path / "count")["sampler"] == {"kind": "count", "frames_per_clip": 5, "frame_factor": 2}
    for bad in (["--min-frames", "3"], ["--sampler", "count"], ["--sampler", "fps", "--every", "2"]):
        out = subprocess.run([cli, "pack", str(videos), str(tmp_path / "bad"), *bad], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode != 0 and out.stderr.strip(), bad
