# tests/python/test_ray.py: reel on Ray (issue 15) against a real local Ray
# cluster on 127.0.0.1, started here and stopped even on failure: read_clips
# rows equal the Loader's clips for a seed and epoch (videos and a store, the
# store read shard by shard), block sizes, failures as rows and on_error
# "raise", a killed read task retried to the same rows, the task order (the
# C epoch order of seed and epoch), variable samples (sampler="fps" with a
# size_policy: one row per video of its own length and size, equal to the
# Loader's, ragged columns, failures as rows), ClipDecoder in map_batches and its crops,
# flips and pixels equal to the Loader's, TorchTrainer workers getting disjoint clips whose union is the
# epoch, the audio columns equal to the Loader's audio (videos and a store with audio). Ray missing:
# skipped, or failed in strict mode (REEL_STRICT=1).
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import reel
import reel._testing
from conftest import ROOT, read_indices

# Ray reads this when it is imported: nodes then bind to 127.0.0.1, not the machine's address
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = pytest.importorskip("ray", reason="could not import 'ray' (pip install 'reel[ray]')")
np = pytest.importorskip("numpy")
import reel.ray as rray  # noqa: E402

OPTS = dict(frames_per_clip=4, frame_stride=2, size=48, crop="random", flip="random", seed=11)


def _ray_processes() -> list:
    out = subprocess.run(["ps", "-eo", "pid,ppid,args"], capture_output=True, text=True).stdout.splitlines()
    mine = str(os.getpid())
    return [l for l in out if ("raylet" in l or "gcs_server" in l) and mine in l.split()[1:2]]


def _init(**kw):
    """ray.init, tried again when the node timed out starting (Ray waits 30 s, fixed, on a loaded machine)."""
    for attempt in range(3):
        try:
            return ray.init(**kw)
        except Exception as exc:
            ray.shutdown()
            if attempt == 2 or "timed out during startup" not in str(exc):
                raise


@pytest.fixture(scope="module")
def cluster():
    """A one-node Ray cluster on 127.0.0.1 (4 logical CPUs on this 2-core machine), no dashboard."""
    assert not ray._private.ray_constants.ENABLE_RAY_CLUSTER  # loopback only
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}  # Ray replaces them
    _init(address="local", num_cpus=4, include_dashboard=False, object_store_memory=256 << 20,
          log_to_driver=False, configure_logging=False)
    try:
        assert ray.util.get_node_ip_address() == "127.0.0.1"
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        yield ray
    finally:
        ray.shutdown()
        for s, h in handlers.items():
            signal.signal(s, h)
    assert not _ray_processes(), "Ray processes left behind"


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    """Kinetics layout: 2 classes x 4 videos whose frames carry their index, and one damaged file."""
    root = tmp_path_factory.mktemp("rayvideos")
    for c, cls in enumerate(("archery", "bowling")):
        (root / cls).mkdir()
        for v in range(4):
            reel._testing.write_video(str(root / cls / f"v{v}.mp4"), width=96, height=72, frames=30 + 4 * v, gop=8,
                                      seed=1 + v + 10 * c)
    bad = root / "bowling" / "zz_damaged.mp4"
    bad.write_bytes((root / "archery" / "v0.mp4").read_bytes()[:700])
    return root


@pytest.fixture(scope="module")
def good_videos(videos, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("raygood")
    for f in videos.rglob("v*.mp4"):
        (root / f.parent.name).mkdir(exist_ok=True)
        shutil.copy(f, root / f.parent.name / f.name)
    return root


def _loader_epoch(source, epoch, **opts):
    """{(sample, clip): (frame_indices, crop, flipped, frames bytes, label)} of Loader epoch `epoch`, and
    its failures; the frames' shapes too (a 6th item) with `shapes=True` (variable batches: one a sample)."""
    out = {}
    shapes = opts.pop("shapes", False)
    with reel.Loader(source, epochs=epoch + 1, batch_size=3, decode_threads=2, **opts) as L:
        for _ in range(epoch):
            for _b in L:
                pass
        for b in L:
            frames = [f.numpy() for f in b.frames] if isinstance(b.frames, list) else b.frames.numpy()
            for i, c in enumerate(b.info):
                out[(c.sample, c.clip)] = (tuple(c.frame_indices), tuple(c.crop), bool(c.flipped),
                                           frames[i].tobytes(), c.label) + ((frames[i].shape,) if shapes else ())
        failures = {f["sample"] for f in L.metrics()["failures"] if f["epoch"] == epoch}
    return out, failures


def _rows(rows):
    clips = {}
    for r in rows:
        if r["failure"]:
            continue
        key = (int(r["sample"]), int(r["clip"]))
        assert key not in clips, f"clip {key} twice"
        clips[key] = (tuple(int(v) for v in r["frame_indices"]), tuple(int(v) for v in r["crop"]), bool(r["flipped"]),
                      np.asarray(r["frames"]).tobytes(), int(r["label"]))
    return clips


def test_import_reel_does_not_import_ray():
    code = "import sys, reel; assert 'ray' not in sys.modules, 'reel imported ray'; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_read_clips_rows_are_the_loaders_clips_for_the_seed_and_epoch(cluster, videos):
    want, failed = _loader_epoch(str(videos), 1, **OPTS)
    ds = rray.read_clips(videos, epoch=1, videos_per_task=3, **OPTS)
    rows = ds.take_all()
    got = _rows(rows)
    assert set(got) == set(want)
    for k in want:
        assert got[k] == want[k], f"clip {k} differs from the Loader's"
    # one row per clip; the damaged video is one failure row naming it
    fails = [r for r in rows if r["failure"]]
    assert {int(r["sample"]) for r in fails} == failed and len(fails) == 1
    assert "zz_damaged.mp4" in fails[0]["failure"] and fails[0]["path"].endswith("zz_damaged.mp4")
    assert int(fails[0]["clip"]) == -1 and not np.asarray(fails[0]["frames"]).any()
    # columns, shapes, pts
    r = next(r for r in rows if not r["failure"])
    assert tuple(r.keys()) == rray.COLUMNS
    assert np.asarray(r["frames"]).shape == (4, 3, 48, 48) and np.asarray(r["frames"]).dtype == np.uint8
    assert int(r["epoch"]) == 1 and r["path"].endswith(".mp4")
    fi, pts = [int(v) for v in r["frame_indices"]], [float(v) for v in r["pts_seconds"]]
    assert fi == list(range(fi[0], fi[0] + 8, 2)) and pts == pytest.approx([i / 25 for i in fi])
    # another epoch gives other clips; the same epoch again the same rows
    assert _rows(rray.read_clips(videos, epoch=0, videos_per_task=3, **OPTS).take_all()) != got
    assert _rows(rray.read_clips(videos, epoch=1, videos_per_task=5, **OPTS).take_all()) == got


def test_read_clips_over_several_epochs_is_the_loaders_epochs_in_one_dataset(cluster, videos):
    ds = rray.read_clips(videos, epochs=2, first_epoch=1, videos_per_task=3, **OPTS)
    rows = ds.take_all()
    assert len(rows) == 2 * 9  # 8 clips and one failure row per epoch
    for e in (1, 2):
        want, failed = _loader_epoch(str(videos), e, **OPTS)
        mine = [r for r in rows if int(r["epoch"]) == e]
        assert _rows(mine) == want, f"epoch {e} differs from the Loader's"
        assert {int(r["sample"]) for r in mine if r["failure"]} == failed
    # epoch= is first_epoch's one-epoch name: the same rows as that epoch of the longer dataset
    assert _rows(rray.read_clips(videos, epoch=2, videos_per_task=3, **OPTS).take_all()) == \
        _rows([r for r in rows if int(r["epoch"]) == 2])
    # the tasks come epoch after epoch, each epoch in its own order
    src = rray.ClipDatasource(videos, epochs=2, first_epoch=1, videos_per_task=3, **OPTS)
    tasks = src.get_read_tasks(1)
    assert [t.read_fn.config["first_epoch"] for t in tasks] == [1, 1, 1, 2, 2, 2]
    assert src.num_read_tasks() == 6
    one = rray.ClipDatasource(videos, first_epoch=2, videos_per_task=3, **OPTS).get_read_tasks(1)
    assert [t.read_fn.config["samples"] for t in tasks[3:]] == [t.read_fn.config["samples"] for t in one]
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        rray.read_clips(videos, epochs=0, **OPTS)
    with pytest.raises(TypeError, match="not both"):
        rray.read_clips(videos, epoch=1, first_epoch=1, **OPTS)


def test_selected_columns_are_built_by_the_read_tasks(cluster, videos, good_videos):
    ds = rray.read_clips(videos, videos_per_task=4, **OPTS).select_columns(list(rray.TENSOR_COLUMNS))
    done = ds.materialize()
    assert "ReadReelClips" in done.stats() and "Project" not in done.stats()  # no operator after the read
    rows = done.take_all()
    assert len(rows) == 9 and all(tuple(r) == rray.TENSOR_COLUMNS for r in rows)
    assert sum(int(r["clip"]) == -1 for r in rows) == 1  # the failure row stays, clip -1
    # the projection reaches the read function, which makes only those columns
    src = rray.ClipDatasource(good_videos, **OPTS).apply_projection({"sample": "sample", "frames": "frames"})
    tasks = src.get_read_tasks(1)
    block = next(iter(tasks[0].read_fn()))
    assert block.column_names == ["sample", "frames"]
    # and the whole thing iterates as tensors with no string column to drop
    batch = next(iter(ds.iter_torch_batches(batch_size=4)))
    assert tuple(batch["frames"].shape[1:]) == (4, 3, 48, 48)


def test_blocks_are_the_planned_ones(cluster, good_videos):
    # Ray splits read outputs into more blocks when there are fewer read tasks than its default
    # parallelism; read_clips asks for exactly its tasks, so each block is one loader batch
    src = rray.ClipDatasource(good_videos, **OPTS)
    ds = rray.read_clips(good_videos, **OPTS).materialize()
    assert ds.num_blocks() == src.num_read_tasks() and ds.count() == 8
    # two tasks per task slot (4 CPUs here) over all the epochs, each at most a task's clips
    for epochs, per_epoch in ((1, 8), (2, 4), (4, 2), (8, 1), (16, 1)):
        assert rray.ClipDatasource(good_videos, epochs=epochs, **OPTS).num_read_tasks() == epochs * per_epoch
    # block sizes: a multiple of 32 clips where that many fit, else a power of two; block_rows sets it
    ctx = ray.data.DataContext.get_current().copy()
    clip = 4 * 3 * 48 * 48
    for fit, rows, kw in ((70, 64, {}), (40, 32, {}), (20, 16, {}), (20, 5, {"block_rows": 5}),
                          (20, 20, {"block_rows": 50})):
        ctx.target_max_block_size = fit * clip + 10
        assert rray.ClipDatasource(good_videos, **kw, **OPTS)._block_videos(ctx) == rows, (fit, kw)
    ctx.target_max_block_size = 20 * clip + 10
    assert rray.ClipDatasource(good_videos, clips_per_video=2, **OPTS)._block_videos(ctx) == 8  # 16 rows


def test_split_failures_and_on_error_raise(cluster, videos):
    clips, failures = rray.split_failures(rray.read_clips(videos, videos_per_task=4, **OPTS))
    f = failures.take_all()
    assert len(f) == 1 and set(f[0]) == {"path", "sample", "epoch", "failure"}
    assert "zz_damaged.mp4" in f[0]["failure"]
    assert clips.count() == 8
    with pytest.raises(Exception) as e:
        rray.read_clips(videos, videos_per_task=4, on_error="raise", **OPTS).take_all()
    assert "zz_damaged.mp4" in str(e.value)


def test_read_clips_audio_columns_are_the_loaders_audio(cluster, tmp_path):
    from audio_clips import MONO16K, make_video
    root = tmp_path / "av"
    root.mkdir()
    make_video(root, "a", 1)
    make_video(root, "late", 2, delay=0.25)
    for f in root.glob("*_v.mp4"):
        f.unlink()
    (root / "zz_damaged.mp4").write_bytes((root / "a.mp4").read_bytes()[:700])
    opts = dict(frames_per_clip=4, frame_stride=2, size=32, seed=3, clips_per_video=2, audio=MONO16K)
    store = tmp_path / "st"
    reel.pack(root, store, size=32, shard_size=1 << 16, audio=MONO16K)
    for source in (root, store):  # videos, and a store packed with audio
        want = {}
        with reel.Loader(str(source), epochs=1, batch_size=2, **opts) as L:
            for b in L:
                plane, lengths, valid = np.asarray(b.audio), np.asarray(b.audio_lengths), np.asarray(b.audio_valid)
                for i, c in enumerate(b.info):
                    want[(c.sample, c.clip)] = (plane[i, :, :lengths[i]].copy(), c.audio_first_sample, tuple(valid[i]))
        rows = rray.read_clips(source, videos_per_task=2, **opts).take_all()
        assert tuple(rows[0].keys()) == rray.COLUMNS + rray.AUDIO_COLUMNS
        got = {(int(r["sample"]), int(r["clip"])): r for r in rows if not r["failure"]}
        assert set(got) == set(want) and len(want) == 4
        for k, (a, first, valid) in want.items():
            r = got[k]
            assert a.shape[0] == 1 and a.shape[1] > 0 and np.array_equal(np.asarray(r["audio"]), a)
            assert int(r["audio_first_sample"]) == first and tuple(int(v) for v in r["audio_valid"]) == valid
            assert int(r["audio_sample_rate"]) == 16000
        fails = [r for r in rows if r["failure"]]
        assert len(fails) == 1 and np.asarray(fails[0]["audio"]).shape == (1, 0)


def test_read_tasks_of_a_store_are_its_shards(cluster, good_videos, tmp_path):
    probe = tmp_path / "probe"
    reel.pack(good_videos, probe, size=64, format="jpeg")
    biggest = max(reel.store_info(probe)["bytes"] // 8, 1)  # about one record
    store = tmp_path / "st"
    reel.pack(good_videos, store, size=64, format="jpeg", shard_size=max(4096, biggest // 3))
    shards = reel.store_info(store)["shards"]
    assert shards >= 3
    src = rray.ClipDatasource(store, **OPTS)
    blocks = reel._reel.read_blocks(str(store))
    assert len(blocks) - 1 == shards
    tasks = src.get_read_tasks(1)
    assert len(tasks) == shards  # whole shards, one task each
    runs = sorted(sorted(t.read_fn.config["samples"]) for t in tasks)
    assert runs == [list(range(a, b)) for a, b in zip(blocks[:-1], blocks[1:])]
    want, _ = _loader_epoch(str(store), 2, **OPTS)
    assert _rows(rray.read_clips(store, epoch=2, **OPTS).take_all()) == want
    # the tasks' samples, in order, are the Loader's own epoch order of the store (shards shuffled, then records)
    with reel.Loader(store, epochs=1, first_epoch=2, batch_size=1, decode_threads=1, **OPTS) as L:
        order = [c.sample for b in L for c in b.info]
    src = rray.ClipDatasource(store, epoch=2, **OPTS)
    assert sum((t.read_fn.config["samples"] for t in src.get_read_tasks(1)), []) == order


def test_blocks_stay_under_the_target_size(good_videos):
    # the read function runs in-process here; Ray gives get_read_tasks its DataContext
    ctx = ray.data.DataContext.get_current().copy()
    clip_bytes = 4 * 3 * 48 * 48 * 4  # float32
    ctx.target_max_block_size = 3 * clip_bytes + 100
    src = rray.ClipDatasource(good_videos, dtype="float32", clips_per_video=2, **OPTS)
    tasks = src.get_read_tasks(1, data_context=ctx)
    assert len(tasks) == 1
    sizes = []
    for block in tasks[0].read_fn():
        t = block.column("frames")
        sizes.append(len(t))
        assert t.nbytes <= ctx.target_max_block_size
    assert sum(sizes) == 16 and max(sizes) == 2  # one video (2 clips) per block: 3 clips would pass the bound


class _KillOnce:
    """A read function that kills its worker process after its first block, once (a marker file)."""

    def __init__(self, fn, marker):
        self.fn, self.marker = fn, marker

    def __call__(self):
        for i, block in enumerate(self.fn()):
            yield block
            if i == 0:
                try:
                    os.rename(self.marker, self.marker + ".taken")
                except OSError:
                    continue
                os.kill(os.getpid(), signal.SIGKILL)


class _KillingSource(rray.ClipDatasource):
    marker = ""

    def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
        tasks = super().get_read_tasks(parallelism, per_task_row_limit, data_context)
        return [ray.data.datasource.ReadTask(_KillOnce(t.read_fn, self.marker), t.metadata) for t in tasks]


def test_a_killed_read_task_is_retried_and_gives_the_same_rows(cluster, good_videos, tmp_path):
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ctx = ray.data.DataContext.get_current()
    old = ctx.target_max_block_size
    ctx.target_max_block_size = 2 * 4 * 3 * 48 * 48  # two clips a block: the task dies mid-way
    try:
        want = _rows(rray.read_clips(good_videos, videos_per_task=4, **OPTS).take_all())
        marker = tmp_path / "kill-once"
        marker.write_text("x")
        src = _KillingSource(good_videos, videos_per_task=4, **OPTS)
        src.marker = str(marker)
        got = ray.data.read_datasource(src).take_all()
    finally:
        ctx.target_max_block_size = old
    assert (tmp_path / "kill-once.taken").exists() and not marker.exists()  # a worker did die
    assert len(got) == 8 and _rows(got) == want


def test_clip_decoder_in_map_batches(cluster, good_videos):
    paths = sorted(str(p) for p in good_videos.rglob("*.mp4"))
    items = [{"path": p, "frame_indices": [i, i + 3, i + 6]} for i, p in enumerate(paths)]
    items.append({"path": str(good_videos / "missing.mp4"), "frame_indices": [0, 1, 2]})
    ds = ray.data.from_items(items).map_batches(rray.ClipDecoder, fn_constructor_kwargs={"size": None, "layout": "HWC"},
                                                batch_size=4, concurrency=1)
    rows = sorted(ds.take_all(), key=lambda r: r["path"])
    assert len(rows) == len(items)
    for r in rows:
        if r["path"].endswith("missing.mp4"):
            assert "missing.mp4" in r["failure"] and not np.asarray(r["frames"]).any()
            continue
        assert r["failure"] == ""
        assert read_indices(np.ascontiguousarray(r["frames"])) == [int(v) for v in r["frame_indices"]]
    # timestamps work too, and resize
    ds = ray.data.from_items([{"path": paths[0], "timestamps": [0.0, 0.4]}])
    r = ds.map_batches(rray.ClipDecoder, fn_constructor_kwargs={"size": 32}, batch_size=1, concurrency=1).take_all()[0]
    assert np.asarray(r["frames"]).shape == (2, 3, 32, 32)


@pytest.mark.parametrize("geometry", [dict(crop="random", flip="random"),
                                      dict(crop="random_resized", flip="random", flip_probability=0.7),
                                      dict(crop="center", resize=60, flip=True)])
def test_clip_decoder_gives_the_loaders_crops_flips_and_pixels(good_videos, geometry):
    # ClipDecoder is a plain callable: no cluster needed to compare it with the Loader
    opts = dict(frames_per_clip=4, frame_stride=2, size=48, seed=11, clips_per_video=2, **geometry)
    want = []
    with reel.Loader(good_videos, epochs=1, first_epoch=3, batch_size=3, decode_threads=2, **opts) as L:
        for b in L:
            frames = b.frames.numpy()
            want += [(c, frames[i].copy()) for i, c in enumerate(b.info)]
    assert len(want) == 16 and len({c.flipped for c, _ in want}) == (1 if geometry["flip"] is True else 2)
    dec = rray.ClipDecoder(size=48, seed=11, epoch=3, **geometry)
    batch = {"path": np.array([c.path for c, _ in want], dtype=object),
             "frame_indices": np.array([c.frame_indices for c, _ in want]),
             "sample": np.array([c.sample for c, _ in want]), "clip": np.array([c.clip for c, _ in want])}
    out = dec(batch)
    assert list(out["failure"]) == [""] * len(want)
    for i, (c, frames) in enumerate(want):
        assert tuple(int(v) for v in out["crop"][i]) == tuple(c.crop), f"crop of clip {(c.sample, c.clip)}"
        assert bool(out["flipped"][i]) == bool(c.flipped)
        assert out["frames"][i].shape == frames.shape
        assert np.array_equal(out["frames"][i], frames), f"pixels of clip {(c.sample, c.clip)}"
    # another epoch (a column this time) draws other crops
    other = dec(dict(batch, epoch=np.full(len(want), 4)))
    if geometry["crop"] != "center":
        assert [tuple(r) for r in other["crop"]] != [tuple(r) for r in out["crop"]]


# Variable samples (issue 18 section 4 on Ray): whole videos sampled at an fps, each sized by a pixel budget
VOPTS = dict(sampler="fps", fps=4.0, min_frames=4, max_frames=32, seed=3,
             size_policy={"factor": 28, "min_pixels": 28 * 28 * 4, "max_pixels": 28 * 28 * 16,
                          "total_pixels": 28 * 28 * 200})


@pytest.fixture(scope="module")
def vlm_videos(tmp_path_factory) -> Path:
    """Three videos of different lengths and sizes (one portrait), and one damaged file."""
    root = tmp_path_factory.mktemp("rayvlm")
    for i, (w, h, n) in enumerate(((96, 72, 40), (64, 96, 60), (80, 48, 25))):
        reel._testing.write_video(str(root / f"v{i}.mp4"), width=w, height=h, frames=n, gop=8, seed=20 + i)
    (root / "zz_damaged.mp4").write_bytes((root / "v0.mp4").read_bytes()[:700])
    return root


def _loader_samples(source, epoch, **opts):
    """{sample: (frame_indices, (h, w), frames bytes, label)} of Loader epoch `epoch` (variable batches), and its failures."""
    clips, failures = _loader_epoch(source, epoch, shapes=True, **opts)
    return {k[0]: (v[0], tuple(v[5][2:]), v[3], v[4]) for k, v in clips.items()}, failures


def test_variable_samples_are_the_loaders_samples(cluster, vlm_videos):
    want, failed = _loader_samples(str(vlm_videos), 1, **VOPTS)
    ds = rray.read_clips(vlm_videos, epoch=1, **VOPTS).materialize()
    rows = ds.take_all()
    clips, failures = rray.split_failures(ds)
    assert sorted(int(r["sample"]) for r in clips.take_all()) == sorted(want)
    assert [int(r["sample"]) for r in failures.take_all()] == sorted(failed)
    assert len(rows) == 4 and len(want) == 3 and len(failed) == 1
    got = {}
    for r in rows:
        f, fi, pts = np.asarray(r["frames"]), np.asarray(r["frame_indices"]), np.asarray(r["pts_seconds"])
        assert tuple(r) == rray.COLUMNS and f.dtype == np.uint8 and f.ndim == 4 and fi.dtype == np.int64
        if r["failure"]:  # the damaged video: a row of no frames (rank and channels kept), no indices
            assert int(r["sample"]) in failed and "zz_damaged.mp4" in r["failure"] and int(r["clip"]) == -1
            assert f.shape == (0, 3, 0, 0) and fi.shape == (0,) and pts.shape == (0,)
            continue
        assert f.shape[:2] == (len(fi), 3) and len(pts) == len(fi) and pts == pytest.approx(fi / 25)
        got[int(r["sample"])] = (tuple(int(v) for v in fi), tuple(f.shape[2:]), f.tobytes(), int(r["label"]))
    assert got == want  # frame indices, sizes and pixels of each sample
    assert len({v[0][-1] for v in got.values()}) == 3 and len({len(v[0]) for v in got.values()}) == 3
    assert len({v[1] for v in got.values()}) >= 2  # lengths and sizes do differ


def test_variable_samples_batch_as_ragged_columns(cluster, vlm_videos):
    want, _ = _loader_samples(str(vlm_videos), 0, **VOPTS)
    ds = rray.read_clips(vlm_videos, **VOPTS).select_columns(list(rray.TENSOR_COLUMNS))
    done = ds.materialize()
    assert "Project" not in done.stats()  # the projection is pushed into the read tasks
    assert done.num_blocks() == 4  # one sample a block
    shapes, lengths = {}, {}
    for batch in done.iter_batches(batch_size=4, batch_format="numpy"):
        assert batch["frames"].dtype == object and batch["frame_indices"].dtype == object
        for s, f, fi in zip(batch["sample"], batch["frames"], batch["frame_indices"]):
            shapes[int(s)], lengths[int(s)] = f.shape, len(fi)
    assert {s: v for s, v in shapes.items() if s in want} == \
        {s: (len(w[0]), 3) + w[1] for s, w in want.items()}
    assert len(shapes) == 4 and sorted(lengths.values())[0] == 0  # the failure row too
    # docs/python.md's Qwen-style collate (a NumpyBatchCollateFn, as Ray wants
    # since 2.47): each sample's 2x14x14 patches, concatenated, and its (t, h, w) grid
    torch = pytest.importorskip("torch")
    from ray.data.collate_fn import NumpyBatchCollateFn

    class QwenCollate(NumpyBatchCollateFn):
        def __call__(self, batch):
            patches, grids = [], []
            for f in batch["frames"]:
                t, c, h, w = f.shape
                p = f.reshape(t // 2, 2, c, h // 14, 14, w // 14, 14).transpose(0, 3, 5, 2, 1, 4, 6)
                patches.append(p.reshape(-1, c * 2 * 14 * 14))
                grids.append((t // 2, h // 14, w // 14))
            return torch.from_numpy(np.concatenate(patches)), torch.tensor(grids)

    clips, _ = rray.split_failures(rray.read_clips(vlm_videos, **VOPTS))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # RayDeprecationWarning is one
        (pixel_values, grids), = clips.select_columns(["frames"]).iter_torch_batches(batch_size=4,
                                                                                     collate_fn=QwenCollate())
    assert sorted(tuple(g) for g in grids.tolist()) == sorted((len(w[0]) // 2, w[1][0] // 14, w[1][1] // 14)
                                                             for w in want.values())
    assert tuple(pixel_values.shape) == (int(grids.prod(1).sum()), 3 * 2 * 14 * 14)


def test_pad_collate_pads_each_batch_and_gives_the_shapes(cluster, vlm_videos):
    torch = pytest.importorskip("torch")
    want, failed = _loader_samples(str(vlm_videos), 0, **VOPTS)
    ds = rray.read_clips(vlm_videos, **VOPTS).select_columns(list(rray.TENSOR_COLUMNS))
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        batches = list(ds.iter_torch_batches(batch_size=3, collate_fn=rray.PadCollate(pad_value=7)))
    assert [len(b["sample"]) for b in batches] == [3, 1]
    for b in batches:
        assert set(b) == set(rray.TENSOR_COLUMNS) | {"frames_shapes", "frame_indices_shapes", "pts_seconds_shapes"}
        frames, shapes = b["frames"], b["frames_shapes"]
        assert frames.dtype == torch.uint8 and shapes.dtype == torch.int64 and shapes.shape == (len(b["sample"]), 4)
        assert tuple(frames.shape[1:]) == tuple(int(v) for v in shapes.max(0).values)  # the batch's largest
        for i, s in enumerate(b["sample"].tolist()):
            t, c, h, w = shapes[i].tolist()
            n = int(b["frame_indices_shapes"][i][0])
            assert b["pts_seconds_shapes"][i].tolist() == [n] and n == t
            real = frames[i, :t, :c, :h, :w]
            pad = frames[i].clone()
            pad[:t, :c, :h, :w] = 7
            assert bool((pad == 7).all()), "the padding is pad_value"
            if s in failed:
                assert (t, h, w) == (0, 0, 0)
                continue
            assert b["frame_indices"][i, :n].tolist() == list(want[s][0]) and (h, w) == want[s][1]
            assert real.contiguous().numpy().tobytes() == want[s][2]  # the sample's pixels, in the corner
            seen.add(s)
    assert seen == set(want) and len(seen) == 3
    # strings are refused by name
    with pytest.raises(Exception, match="'path' holds strings"):
        list(rray.read_clips(vlm_videos, **VOPTS).iter_torch_batches(batch_size=2, collate_fn=rray.PadCollate()))


def test_variable_samples_options_and_planning(vlm_videos):
    with pytest.raises(ValueError, match="pad=True is not taken"):
        rray.ClipDatasource(vlm_videos, pad=True, **VOPTS)
    src = rray.ClipDatasource(vlm_videos, **VOPTS)
    assert src._block_videos(None) == 1 and rray.ClipDatasource(vlm_videos, block_rows=3, **VOPTS)._block_videos(None) == 3
    want, _ = _loader_samples(str(vlm_videos), 0, **VOPTS)
    assert all(len(w[2]) <= src._clip_bytes for w in want.values())  # the estimate bounds each sample
    assert src.estimate_inmemory_data_size() == 4 * src._clip_bytes
    # layout BTHWC: rows [T, H, W, C] whose frames carry the indices of their frame_indices
    src = rray.ClipDatasource(vlm_videos, layout="BTHWC", shuffle=False, **VOPTS)
    seen = 0
    for t in src.get_read_tasks(1):
        for b in t.read_fn():
            batch = ray.data.block.BlockAccessor.for_block(b).to_batch_format("numpy")
            for f, fi, fail in zip(batch["frames"], batch["frame_indices"], batch["failure"]):
                if fail:
                    assert f.shape == (0, 0, 0, 3) and fi.shape == (0,)
                    continue
                assert f.shape[-1] == 3 and read_indices(np.ascontiguousarray(f)) == fi.tolist()
                seen += 1
    assert seen == 3
    # the fps sampler alone (no size policy): fixed size, lengths differ, rows still per sample
    tasks = rray.ClipDatasource(vlm_videos, sampler="fps", fps=4.0, size=32, seed=3, shuffle=False).get_read_tasks(1)
    rows = [b for t in tasks for b in t.read_fn()]
    frames = [f for b in rows for f in ray.data.block.BlockAccessor.for_block(b).to_batch_format("numpy")["frames"]]
    assert sorted(f.shape for f in frames) == sorted([(0, 3, 0, 0), (4, 3, 32, 32), (6, 3, 32, 32), (8, 3, 32, 32)])


def test_task_order_is_the_c_epoch_order_of_seed_and_epoch(good_videos):
    def order(epoch, seed=11, **kw):
        src = rray.ClipDatasource(good_videos, epoch=epoch, videos_per_task=3, **dict(OPTS, seed=seed, **kw))
        return [t.read_fn.config["samples"] for t in src.get_read_tasks(8)]

    a = order(2)
    assert sorted(len(t) for t in a) == [2, 3, 3] and sorted(sum(a, [])) == list(range(8))
    for t in a:  # each task a run of the dataset, read in a shuffled order
        assert sorted(t) == list(range(min(t), min(t) + len(t))) and min(t) % 3 == 0
    entries = reel._loader._dataset_entries(str(good_videos))
    assert sum(a, []) == reel._reel.epoch_order(entries, 2, 11, True, 3, 1, 1)  # the C order, window one task
    assert order(2) == a  # a pure function of (seed, epoch)
    assert order(3) != a and order(2, seed=12) != a
    assert order(2, shuffle=False) == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_torch_trainer_workers_get_disjoint_clips_whose_union_is_the_epoch(cluster, good_videos, tmp_path):
    pytest.importorskip("torch")
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import ray_train
    finally:
        sys.path.pop(0)
    ray.cloudpickle.register_pickle_by_value(ray_train)  # the workers cannot import examples/
    out = tmp_path / "seen"
    out.mkdir()
    ray_train.train(str(good_videos), storage=str(tmp_path / "runs"), seen_dir=str(out), epochs=1, batch_size=2,
                    frames_per_clip=4, size=48, seed=5)
    seen = [[int(v) for v in p.read_text().split()] for p in sorted(out.glob("epoch0-*.txt"))]
    assert len(seen) == 2 and all(seen)
    assert not set(seen[0]) & set(seen[1])
    assert sorted(seen[0] + seen[1]) == list(range(8))
