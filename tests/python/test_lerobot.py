# test_lerobot.py: reel.lerobot on LeRobot-style v3.0 data the tests make (libsvtav1 g=2 episodes
# stream-copied into files, parquet tables): items, frames and pts equal lerobot 0.4.4's own
# LeRobotDataset and decode_video_frames_torchcodec (the package itself) bit for bit,
# the Loader's batches, order, sharding and resume, and bad input named.
import copy
import json
import os
import pickle
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("av")  # the data is made the way LeRobot makes it: PyAV

import reel  # noqa: E402
import reel.lerobot as rl  # noqa: E402

import lerobot_data as ld  # noqa: E402

FRONT, WRIST, SIDE = "observation.images.front", "observation.images.wrist", "observation.images.side"
DELTAS = {FRONT: [-0.2, -1 / 30, 0.0, 0.1], SIDE: [-1 / 30, 0.0], "action": [0.0, 1 / 30, 2 / 30]}


@pytest.fixture(scope="session")
def lerobot_root(tmp_path_factory):
    """4 episodes (24, 31, 20, 27 frames at 30 fps); front 64x48 in two files
    (episodes 0-1, 2-3), wrist 32x24 all in one file, side 32x24 at 60 fps
    in two files (episode 0, episodes 1-3)."""
    root = tmp_path_factory.mktemp("lerobot") / "ds"
    meta = ld.make_dataset(str(root))
    return str(root), meta


def _copy(lerobot_root, tmp_path):
    dst = tmp_path / "ds"
    shutil.copytree(lerobot_root[0], dst)
    return str(dst)


def _rewrite(path, change):
    t = pq.read_table(path)
    pq.write_table(change(t), path)


# ---------------------------------------------------------------- lerobot 0.4.4 itself
@pytest.fixture(scope="session")
def lerobot(tmp_path_factory):
    """lerobot 0.4.4's video_utils module and LeRobotDataset class (scripts/deps.sh
    --test installs them into .deps/lerobot; lerobot_data.import_lerobot says how
    they are imported), with a PtsSpy as the decoder cache its decode function
    uses by default: the frames come from lerobot's own code, the pts it chose
    are recorded beside."""
    pytest.importorskip("torchcodec")
    try:
        vu, cls = ld.import_lerobot(hf_cache=str(tmp_path_factory.mktemp("hf-datasets")))
    except ImportError as exc:
        pytest.skip(f"lerobot {ld.LEROBOT_VERSION} is not installed ({exc}); run scripts/deps.sh --test")
    spy = ld.PtsSpy(vu.VideoDecoderCache())
    old, vu._default_decoder_cache = vu._default_decoder_cache, spy
    yield vu, cls, spy
    vu._default_decoder_cache = old


def _same(item, want):
    """Every key of lerobot's item is in reel's, equal: dtype, shape, values."""
    for k, v in want.items():
        assert k in item, k
        if isinstance(v, str):
            assert item[k] == v, k
            continue
        assert item[k].dtype == v.dtype and item[k].shape == v.shape, (k, item[k].dtype, v.dtype, item[k].shape, v.shape)
        assert torch.equal(item[k], v), k


def _check_items(lerobot, lerobot_root, deltas):
    """reel.lerobot.LeRobotDataset against lerobot's own, every sample: the
    float32 items equal lerobot's bit for bit (all of lerobot's keys), the uint8
    frames / 255 too, each camera's pts (decode_near of the times the item
    asked) equal the pts lerobot's decode chose, and the frames carry the
    clamped rows' codes. Returns how many padded front frames there were."""
    root, meta = lerobot_root
    spy = lerobot[2]
    want_ds = lerobot[1]("local/reel-test", root=root, delta_timestamps=deltas, video_backend="torchcodec")
    ds32 = rl.LeRobotDataset(root, delta_timestamps=deltas, dtype="float32")
    ds8 = rl.LeRobotDataset(root, delta_timestamps=deltas)
    assert len(want_ds) == len(ds32) == 102 and ds32.video_keys == [FRONT, WRIST, SIDE]
    assert list(want_ds.meta.video_keys) == ds32.video_keys
    pads = 0
    for i in range(len(ds32)):
        spy.pts.clear()
        want = want_ds[i]
        item, item8 = ds32[i], ds8[i]
        _same(item, want)
        q = ds32.query(i)
        for k in (FRONT, WRIST, SIDE):
            path = ds32.video_path(q["episode"], k)
            assert torch.equal((item8[k] / 255.0).type(torch.float32), want[k]), k
            got = reel.decode_near({k: (path, q["times"][k])})[k]
            assert list(got.pts_seconds) == spy.pts[path], (i, k)
            rows = q["indices"].get(k, [q["abs"]])
            frames = item8[k] if item8[k].dim() == 4 else item8[k][None]
            assert [ld.read_code(f) for f in frames] == [meta["expected"][k][r] for r in rows]
        if deltas is not None:
            pads += int(want[f"{FRONT}_is_pad"].sum())
        assert item["task"] == ("pick", "place")[item["episode_index"].item() % 2]
    return pads


# ---------------------------------------------------------------- items
def test_items_equal_lerobot_with_deltas(lerobot, lerobot_root):
    """Episodes at file boundaries, a 60 fps camera, deltas reaching outside the episode."""
    assert _check_items(lerobot, lerobot_root, DELTAS) > 0  # some deltas reached outside their episode


def test_items_equal_lerobot_without_deltas(lerobot, lerobot_root):
    _check_items(lerobot, lerobot_root, None)
    item = rl.LeRobotDataset(lerobot_root[0])[0]
    assert item[FRONT].shape == (3, 48, 64) and item[SIDE].shape == (3, 24, 32)


def test_frames_near_equal_lerobot_decode(lerobot, lerobot_root):
    """lerobot's decode_video_frames_torchcodec and reel's get_frames_near on
    each camera file: each episode's row times shifted by its from_timestamp
    (as lerobot's _query_videos does), all of a file's episodes in one request
    (across the boundaries), times off by less than the tolerance, and in
    reverse order: the same frames (/ 255 as float32), bit for bit, and the
    same pts; a time 10 ms off every frame raises in both."""
    vu = lerobot[0]
    root, _ = lerobot_root
    ds = rl.LeRobotDataset(root)
    eps = pq.read_table(os.path.join(root, "meta/episodes/chunk-000/file-000.parquet")).to_pylist()
    rows = pa.concat_tables([pq.read_table(os.path.join(root, "data/chunk-000", f))
                             for f in ("file-000.parquet", "file-001.parquet")]).to_pylist()
    cache = vu.VideoDecoderCache()
    checked = 0
    for k in (FRONT, WRIST, SIDE):
        files = {}
        for ep in eps:
            e = ep["episode_index"]
            ts = [ep[f"videos/{k}/from_timestamp"] + r["timestamp"] for r in rows if r["episode_index"] == e]
            files.setdefault(ds.video_path(e, k), []).append(ts)
        for path, per_episode in files.items():
            dec = reel.VideoDecoder(path)
            whole = [t for ts in per_episode for t in ts]
            for ts in per_episode + [whole, [t + 4e-5 for t in whole], whole[::-1]]:
                spy = ld.PtsSpy(cache)
                want = vu.decode_video_frames_torchcodec(path, ts, 1e-4, decoder_cache=spy)
                got = dec.get_frames_near(ts)
                assert want.dtype == torch.float32 and want.shape[0] == len(ts)
                assert torch.equal((got.torch() / 255.0).type(torch.float32), want), (k, path)
                assert list(got.pts_seconds) == spy.pts[path], (k, path)
                checked += len(ts)
            bad = whole[:3] + [whole[3] + 0.01]
            with pytest.raises(vu.FrameTimestampError):
                vu.decode_video_frames_torchcodec(path, bad, 1e-4, decoder_cache=cache)
            with pytest.raises(reel.FrameTimestampError, match=os.path.basename(path)):
                dec.get_frames_near(bad)
    assert checked == 3 * 102 * 4


def test_reel_pts_equal_torchcodec(lerobot_root):
    """The frames' pts of a whole file equal torchcodec's (exact table vs approximate seek)."""
    tc = pytest.importorskip("torchcodec.decoders")
    root, _ = lerobot_root
    ds = rl.LeRobotDataset(root)
    for k in (FRONT, WRIST, SIDE):
        path = ds.video_path(3, k)
        dec = tc.VideoDecoder(path, seek_mode="approximate")
        n = dec.metadata.num_frames
        want = dec.get_frames_at(indices=list(range(n)))
        got = reel.VideoDecoder(path).get_frames_at(list(range(n)))
        # the same pts, in seconds to the last bit (both round pts * num / den
        # once; 11776 / 15360 is where multiplying by 1/15360 differed)
        assert list(got.pts_seconds) == want.pts_seconds.tolist()
        assert torch.equal(got.torch(), want.data)


def test_float32_and_episodes_and_size(lerobot_root):
    root, meta = lerobot_root
    full = rl.LeRobotDataset(root, delta_timestamps=DELTAS)
    ds = rl.LeRobotDataset(root, delta_timestamps=DELTAS, episodes=[3, 1], dtype="float32")
    assert len(ds) == 31 + 27 and ds.num_episodes == 2
    for i in range(len(ds)):
        item = ds[i]
        whole = full[int(item["index"])]
        for k in (FRONT, WRIST, SIDE):  # LeRobot's default: uint8 / 255 as float32
            assert torch.equal(item[k], (whole[k] / 255.0).type(torch.float32))
        assert torch.equal(item["action"], whole["action"]) and torch.equal(item[f"{FRONT}_is_pad"], whole[f"{FRONT}_is_pad"])
    small = rl.LeRobotDataset(root, size={FRONT: (24, 32)}, cameras=[FRONT, SIDE])
    item = small[5]
    assert item[FRONT].shape == (3, 24, 32) and WRIST not in item and ld.read_code(item[FRONT]) == 5


def test_pickle_and_reading_in_another_process(lerobot_root):
    root, _ = lerobot_root
    ds = rl.LeRobotDataset(root, delta_timestamps=DELTAS)
    copy_ = pickle.loads(pickle.dumps(ds))
    a, b = ds[40], copy_[40]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a if k != "task")


# ---------------------------------------------------------------- the loader
def _indices(batches):
    return [int(i) for b in batches for i in b["index"]]


def test_loader_batches_equal_items(lerobot_root):
    root, _ = lerobot_root
    ds = rl.LeRobotDataset(root, delta_timestamps=DELTAS)
    with rl.Loader(root, delta_timestamps=DELTAS, batch_size=8, seed=3) as loader:
        batches = list(loader)
        assert len(batches) == len(loader) == 13
        idx = _indices(batches)
        assert sorted(idx) == list(range(102)) and idx != list(range(102))  # shuffled, each sample once
        assert idx == reel.epoch_order(102, 0, seed=3, canonical_batch=8)
        b = batches[0]
        assert b[FRONT].shape == (8, 4, 3, 48, 64) and b[WRIST].shape == (8, 3, 24, 32)
        assert b[f"{SIDE}_is_pad"].shape == (8, 2) and b["task"][0] in ("pick", "place")
        for j in range(8):
            item = ds[int(b["index"][j])]
            for k, v in item.items():
                assert (b[k][j] == v if k == "task" else torch.equal(b[k][j], v)), k
        m = loader.metrics()
        assert m["batches"] == 13 and m["samples"] == 102 and m["failure_count"] == 0
        second = _indices(list(loader))  # the next epoch: another order
        assert sorted(second) == list(range(102)) and second != idx


def test_loader_resume_exact_and_elastic(lerobot_root):
    root, _ = lerobot_root
    kw = dict(batch_size=8, seed=5, cameras=[WRIST])
    with rl.Loader(root, **kw) as loader:
        whole = _indices(list(loader))
    with rl.Loader(root, **kw) as loader:
        it = iter(loader)
        head = _indices([next(it) for _ in range(3)])
        state = copy.deepcopy(loader.state_dict())
        it.close()
    assert state["samples_seen"] == 24 and head == whole[:24]
    with rl.Loader(root, **kw) as again:
        again.load_state_dict(json.loads(json.dumps(state)))
        assert _indices(list(again)) == whole[24:]
    # elastic: the rest of the epoch on two ranks of batch 5
    rest = []
    for rank in (0, 1):
        with rl.Loader(root, batch_size=5, seed=5, cameras=[WRIST], rank=rank, world_size=2, shard_mode="drop") as r:
            r.load_state_dict(state)
            rest += _indices(list(r))
    assert sorted(rest) == sorted(whole[24:])
    with rl.Loader(root, batch_size=8, seed=6, cameras=[WRIST]) as other:
        with pytest.raises(ValueError, match="seed"):
            other.load_state_dict(state)
    with rl.Loader(root, batch_size=8, seed=5, cameras=[WRIST], episodes=[0, 1]) as other:
        with pytest.raises(ValueError, match="another dataset"):
            other.load_state_dict(state)


def test_loader_shards(lerobot_root):
    root, _ = lerobot_root
    seen = []
    for rank in range(3):
        with rl.Loader(root, batch_size=4, rank=rank, world_size=3, cameras=[FRONT], shuffle=False) as r:
            got = _indices(list(r))
            assert len(got) == 34
            seen += got
    assert sorted(seen) == list(range(102))


# ---------------------------------------------------------------- bad input
def test_missing_pyarrow_names_the_extra(monkeypatch):
    import sys

    from reel import _lerobot_tables

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install reel\[lerobot\]"):
        _lerobot_tables.pyarrow_modules()


def test_missing_camera_file(lerobot_root, tmp_path):
    root = _copy(lerobot_root, tmp_path)
    gone = os.path.join(root, "videos", FRONT, "chunk-000", "file-001.mp4")
    os.unlink(gone)
    with pytest.raises(reel.NotFoundError, match="file-001.mp4"):
        rl.LeRobotDataset(root)
    ds = rl.LeRobotDataset(root, check_videos=False)
    assert ds[10][FRONT].shape == (3, 48, 64)  # episodes 0-1 are in file-000
    with pytest.raises(reel.NotFoundError, match="file-001.mp4"):
        ds[60]
    with rl.Loader(root, batch_size=8, check_videos=False, on_error="skip", shuffle=False) as loader:
        idx = _indices(list(loader))
        m = loader.metrics()
    assert idx == list(range(55))  # episodes 2-3 (rows 55..101) are lost, by name
    assert m["samples_failed"] == 47 and m["failure_count"] == 47 and "file-001.mp4" in m["failures"][0]["reason"]
    with rl.Loader(root, batch_size=8, check_videos=False, shuffle=False) as loader:
        with pytest.raises(reel.NotFoundError, match="file-001.mp4"):
            list(loader)


def test_parquet_without_expected_columns(lerobot_root, tmp_path):
    root = _copy(lerobot_root, tmp_path)
    data = os.path.join(root, "data/chunk-000/file-001.parquet")
    _rewrite(data, lambda t: t.drop(["timestamp"]))
    with pytest.raises(rl.DatasetFormatError, match=r"file-001.parquet.*'timestamp'"):
        rl.LeRobotDataset(root)
    root2 = _copy(lerobot_root, tmp_path / "b")
    eps = os.path.join(root2, "meta/episodes/chunk-000/file-000.parquet")
    _rewrite(eps, lambda t: t.drop([f"videos/{SIDE}/from_timestamp"]))
    with pytest.raises(rl.DatasetFormatError, match=f"episodes.*videos/{SIDE}/from_timestamp"):
        rl.LeRobotDataset(root2)
    assert rl.LeRobotDataset(root2, cameras=[FRONT, WRIST])[3][FRONT].shape == (3, 48, 64)


def _set_episode(path, episode, column, value):
    def change(t):
        col = t.column(column).to_pylist()
        col[episode] = value
        return t.set_column(t.column_names.index(column), column, pa.array(col, t.schema.field(column).type))
    _rewrite(path, change)


def test_episode_rows_and_video_disagree(lerobot_root, tmp_path):
    root = _copy(lerobot_root, tmp_path)
    eps = os.path.join(root, "meta/episodes/chunk-000/file-000.parquet")
    _set_episode(eps, 1, f"videos/{WRIST}/to_timestamp", 0.8 + 31 / 30 - 0.2)
    with pytest.raises(rl.DatasetFormatError, match=r"episode 1, camera observation.images.wrist: its 31 frame rows"):
        rl.LeRobotDataset(root)
    root2 = _copy(lerobot_root, tmp_path / "b")
    data = os.path.join(root2, "data/chunk-000/file-000.parquet")
    _rewrite(data, lambda t: t.slice(0, t.num_rows - 1))  # episode 1 loses its last row
    with pytest.raises(rl.DatasetFormatError, match="episode 1 has 30 frame rows"):
        rl.LeRobotDataset(root2)


def test_from_timestamp_past_the_file_end(lerobot_root, tmp_path):
    root = _copy(lerobot_root, tmp_path)
    eps = os.path.join(root, "meta/episodes/chunk-000/file-000.parquet")
    _set_episode(eps, 3, f"videos/{WRIST}/from_timestamp", 9.0)
    with pytest.raises(rl.DatasetFormatError, match=r"file-000.mp4: episode 3.*from_timestamp 9.000000 s is outside"):
        rl.LeRobotDataset(root)
    ds = rl.LeRobotDataset(root, check_videos=False)  # unchecked: the decode names the file and the time
    with pytest.raises(reel.FrameTimestampError, match=r"file-000.mp4: no frame within 0.0001 s of 9.16666"):
        ds[80]


def test_bad_timestamps_named_or_flagged(lerobot_root, tmp_path):
    meta = lerobot_root[1]
    root = _copy(lerobot_root, tmp_path)
    data = os.path.join(root, "data/chunk-000/file-001.parquet")

    def change(t):
        ts = t.column("timestamp").to_numpy().copy()
        ts[3] += 0.01      # row 58: 10 ms off every frame
        ts[4] = np.nan     # row 59
        ts[5] = np.inf     # row 60
        return t.set_column(t.column_names.index("timestamp"), "timestamp", pa.array(ts))
    _rewrite(data, change)
    ds = rl.LeRobotDataset(root)
    with pytest.raises(reel.FrameTimestampError, match=r"file-001.mp4: no frame within 0.0001 s of"):
        ds[58]
    for i in (59, 60):
        with pytest.raises(reel.InvalidArgumentError, match=r"\.mp4"):
            ds[i]
    flag = rl.LeRobotDataset(root, on_violation="flag", cameras=[FRONT, WRIST])
    item = flag[58]
    assert not item[f"{FRONT}_within_tolerance"].any() and ld.read_code(item[FRONT]) == meta["expected"][FRONT][58]
    assert flag[57][f"{FRONT}_within_tolerance"].all()
    with rl.Loader(root, batch_size=4, shuffle=False, on_error="replace", cameras=[FRONT]) as loader:
        idx = _indices(list(loader))
        m = loader.metrics()
    assert 58 not in idx and 59 not in idx and 60 not in idx and len(idx) == 102
    # 58, 59 and 60 are each replaced by the next sample that decodes (61)
    assert m["samples_replaced"] == 3 and set(m["failures_by_cause"]) == {"FrameTimestampError", "InvalidArgumentError"}
    assert idx.count(61) == 4


def test_bad_arguments(lerobot_root):
    root, _ = lerobot_root
    with pytest.raises(ValueError, match="multiples of 1/30"):
        rl.LeRobotDataset(root, delta_timestamps={FRONT: [0.01]})
    with pytest.raises(ValueError, match="unknown keys"):
        rl.LeRobotDataset(root, delta_timestamps={"nope": [0.0]})
    with pytest.raises(rl.DatasetFormatError, match="no video feature"):
        rl.LeRobotDataset(root, cameras=["observation.images.top"])
    with pytest.raises(rl.DatasetFormatError, match=r"no episode\(s\) \[7\]"):
        rl.LeRobotDataset(root, episodes=[7])
    with pytest.raises(IndexError):
        rl.LeRobotDataset(root, cameras=[WRIST])[102]


def test_depth_keys_ask_for_gray_uint16(lerobot_root, tmp_path):
    """A depth key (video.is_depth_map) is decoded with color="gray",
    dtype="uint16" (the source's codes, [1, H, W]), never as RGB: the same
    frame as the RGB item, as VideoDecoder(color="gray", dtype="uint16")
    gives it."""
    root = _copy(lerobot_root, tmp_path)
    path = os.path.join(root, "meta/info.json")
    info = json.load(open(path))
    info["features"][WRIST]["info"]["video.is_depth_map"] = True
    json.dump(info, open(path, "w"))
    ds = rl.LeRobotDataset(root)
    assert ds._mode(WRIST) == ("gray", "uint16") and ds._mode(FRONT) == ("rgb", "uint8")
    item, rgb_item = ds[3], rl.LeRobotDataset(lerobot_root[0])[3]
    depth, rgb = item[WRIST], rgb_item[WRIST]
    assert depth.dtype == torch.uint16 and tuple(depth.shape) == (1,) + tuple(rgb.shape[1:])
    assert torch.equal(item[FRONT], rgb_item[FRONT])
    video = ds.video_path(int(item["episode_index"]), WRIST)
    whole = reel.VideoDecoder(video).get_frames_at(list(range(len(reel.VideoDecoder(video))))).torch()
    k = [i for i in range(whole.shape[0]) if torch.equal(whole[i], rgb)]
    assert len(k) == 1
    gray = reel.VideoDecoder(video, color="gray", dtype="uint16").get_frames_at(k).torch()[0]
    assert torch.equal(depth, gray) and int(depth.numpy().max()) <= 255
