# tests/python/test_loader.py: reel.Loader over the C pipeline: epochs, batch
# shapes and layouts, labels and clip info, exact frames, determinism across
# thread counts, state_dict resume, zero-copy batches returned to the ring,
# close semantics, error policies, sources, sharding, pickling, metrics;
# waiting: next_batch timeouts and Ctrl-C during a loader wait or a long
# VideoDecoder call.
from __future__ import annotations

import gc
import pickle
import shutil
from pathlib import Path

import pytest

import reel
import reel._testing
import reel._reel as R
from conftest import read_indices

CLASSES = ("cat", "dog", "eel")


@pytest.fixture(scope="session")
def dataset(tmp_path_factory) -> Path:
    """3 class folders x 4 videos: 160x120, 40 frames at 25 fps, keyframes every 10."""
    root = tmp_path_factory.mktemp("dataset")
    for c, name in enumerate(CLASSES):
        (root / name).mkdir()
        for v in range(4):
            reel._testing.write_video(str(root / name / f"v{v}.mp4"), width=160, height=120, frames=40, gop=10,
                           seed=10 * c + v + 1)
    return root


def loader(source, **kw):
    args = dict(frames_per_clip=4, size=64, batch_size=5, decode_threads=2, seed=1)
    args.update(kw)
    return reel.Loader(source, **args)


def test_epoch(dataset):
    with loader(dataset, prefetch_batches=3) as L:
        assert L.ring_size == 3
        assert len(L) == 3 and L.num_videos == 12 and L.class_names == list(CLASSES)
        batches = list(L)
        assert [len(b) for b in batches] == [5, 5, 2]
        assert [b.index for b in batches] == [0, 1, 2] and {b.epoch for b in batches} == {0}
        b = batches[0]
        assert isinstance(b.frames, reel.Frames) and b.frames.shape == (5, 4, 3, 64, 64)
        assert b.frames.layout == "BTCHW" and b.frames.dtype == "uint8" and not b.frames.owns_data
        assert b.labels.dtype == "int64" and b.labels.shape == (5,)
        samples = []
        for b in batches:
            labels = list(memoryview(b.labels))
            for info, label in zip(b.info, labels):
                assert info.label == label == CLASSES.index(Path(info.path).parent.name)
                assert len(info.frame_indices) == 4
                assert list(info.frame_indices) == list(range(info.frame_indices[0], info.frame_indices[0] + 4))
                assert info.pts_seconds[1] == pytest.approx(info.frame_indices[1] * 0.04)
                x, y, w, h = info.crop  # in source pixels: the centre of the frame
                assert 0 < w <= 160 and 0 < h <= 120 and abs(2 * x + w - 160) <= 2 and abs(2 * y + h - 120) <= 2
                samples.append(info.sample)
        assert sorted(samples) == list(range(12))
        with pytest.raises(RuntimeError):
            L.next_batch()  # every ring buffer is held: a clear error, not a hang
        del b, batches
        second = list(L)
        assert [b.epoch for b in second] == [1, 1, 1]
        assert sorted(i.sample for b in second for i in b.info) == list(range(12))


def test_exact_frames(dataset):
    with loader(dataset, crop=None, size=(120, 160), layout="BTHWC", frames_per_clip=6, batch_size=4) as L:
        for b in L:
            assert b.frames.shape[1:] == (6, 120, 160, 3)
            want = [i for info in b.info for i in info.frame_indices]
            assert read_indices(b.frames) == want


def test_layouts_and_dtypes(dataset, np):
    with loader(dataset, layout="BCTHW", dtype="float32", mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25)) as L:
        b = next(iter(L))
        assert b.frames.shape == (5, 3, 4, 64, 64) and b.frames.dtype == "float32"
        a = b.frames.numpy()
        assert a.min() >= -2.0 - 1e-6 and a.max() <= 2.0 + 1e-6
    with loader(dataset, dtype="bfloat16", size=(32, 48), crop="random", flip="random") as L:
        b = next(iter(L))
        assert b.frames.shape == (5, 4, 3, 32, 48) and b.frames.dtype == "bfloat16"
    with loader(dataset, crop="random_resized", size=40, clips_per_video=2) as L:
        b = next(iter(L))
        assert b.frames.shape == (10, 4, 3, 40, 40)
        assert [i.clip for i in b.info[:2]] == [0, 1]


def test_zero_copy_and_ring(dataset, torch):
    with loader(dataset, batch_size=4, prefetch_batches=2) as L:
        it = iter(L)
        b = next(it)
        t = b.frames.torch()
        assert t.data_ptr() == b.frames.data_ptr and t.shape == (4, 4, 3, 64, 64)
        labels = b.labels.torch()
        assert labels.dtype == torch.int64
        keep = t.clone()
        assert L._loader.outstanding == 1
        del b
        gc.collect()
        assert L._loader.outstanding == 1  # the tensor still views the ring buffer
        for _ in range(2):
            next(it)  # the ring (2 buffers) turns over without touching t's buffer
        assert torch.equal(t, keep)
        del t
        gc.collect()
        assert L._loader.outstanding == 0


def test_a_held_ring_after_a_mid_epoch_restore_is_an_error_not_a_hang(dataset):
    """The check for a next() that would wait forever (every ring buffer held
    by the caller) reads C's consumer position (reel_loader_get_ring_size,
    reel_loader_get_batches_left), also after a mid-epoch restore, where the
    extension's own mirror of it knew no batch count and next() waited."""
    with loader(dataset, batch_size=2, prefetch_batches=2, epochs=1, shuffle=False) as L:  # 12 videos: 6 batches
        b = L.next_batch()
        state = L.state_dict()
        del b
        gc.collect()
        L.load_state_dict(state)  # samples_seen 2: 5 batches left
        held = [L.next_batch(), L.next_batch()]
        with pytest.raises(RuntimeError, match="all 2 batch buffers are held"):
            L.next_batch(timeout=5)  # a bound: without the check it would wait
        assert L._loader.position() == (0, 3)
        del held
        gc.collect()
        assert [b.position for b in L] == [6, 8, 10]  # nothing was lost
        assert L._loader.position() == (1, 0)  # the run is over
        assert L.next_batch() is None


def test_the_consumer_position_is_c_s(dataset):
    """Loader's epoch and batches left are C's (the extension counts none)."""
    with loader(dataset, batch_size=5, prefetch_batches=2, epochs=2, first_epoch=3) as L:
        assert L.ring_size == 2 and L._loader.position() == (3, 3)
        b = L.next_batch()
        assert L._loader.position() == (3, 2)
        del b
        assert len(list(L)) == 2
        assert L._loader.position() == (4, 3)
        kept = [L.next_batch(), L.next_batch()]  # the ring is full, and 1 batch is left
        with pytest.raises(RuntimeError, match="all 2 batch buffers are held"):
            L.next_batch(timeout=5)
        kept.pop()
        gc.collect()
        assert L.next_batch() is not None and L.next_batch() is None  # the end of epoch 4: no buffer needed
        assert L._loader.position() == (5, 0)


def test_determinism_and_resume(dataset):
    def run(L, n):
        out = []
        for _ in range(n):
            b = L.next_batch()
            out.append(None if b is None else ([i.sample for i in b.info], [i.frame_indices for i in b.info],
                                               b.frames.tobytes()))
        return out

    with loader(dataset, decode_threads=1, epochs=2) as a, loader(dataset, decode_threads=3, epochs=2) as b:
        assert run(a, 8) == run(b, 8)  # thread counts do not change the batches
    with loader(dataset, epochs=2) as a:
        ref = run(a, 8)
    with loader(dataset, epochs=2) as a:
        run(a, 2)
        state = a.state_dict()
        assert state["epoch"] == 0 and state["samples_seen"] == 10
        with loader(dataset, epochs=2, decode_threads=1) as b:
            b.load_state_dict(state)
            assert run(b, 6) == ref[2:]
        with loader(dataset, epochs=2, seed=2) as c, pytest.raises(ValueError):
            c.load_state_dict(state)
    with loader(dataset, epochs=1) as a:
        assert len(list(a)) == 3 and list(a) == [] and a.next_batch() is None


def test_shuffle_and_seed(dataset):
    def order(**kw):
        with loader(dataset, batch_size=12, **kw) as L:
            return [i.sample for i in next(iter(L)).info]

    assert order(shuffle=False) == list(range(12))
    assert order(seed=5) == order(seed=5) != order(seed=6)


def test_sharding(dataset):
    def samples(rank):
        with loader(dataset, rank=rank, world_size=2, batch_size=3) as L:
            return sorted(i.sample for b in L for i in b.info)

    a, b = samples(0), samples(1)
    assert len(a) == len(b) == 6 and not set(a) & set(b) and sorted(a + b) == list(range(12))


def test_close_with_held_batch(dataset, np):
    L = loader(dataset)
    b = next(iter(L))
    data = b.frames.numpy().copy()
    L.close()
    assert L.closed
    with pytest.raises(ValueError):
        next(iter(L))
    assert np.array_equal(b.frames.numpy(), data)  # still valid until freed
    del b
    gc.collect()
    assert L._loader.outstanding == 0
    L.close()  # idempotent


def test_sources(dataset):
    paths = sorted(str(p) for p in dataset.rglob("*.mp4"))
    with loader(paths, shuffle=False, batch_size=12) as L:
        b = next(iter(L))
        assert [i.path for i in b.info] == paths and list(memoryview(b.labels)) == [-1] * 12
    with loader([(p, k % 3) for k, p in enumerate(paths)], shuffle=False, batch_size=12) as L:
        assert list(memoryview(next(iter(L)).labels)) == [k % 3 for k in range(12)]
    named = [{"path": p, "label": Path(p).parent.name} for p in paths]
    with loader(named, shuffle=False, batch_size=12) as L:
        assert L.class_names == list(CLASSES)
        assert list(memoryview(next(iter(L)).labels)) == [k // 4 for k in range(12)]
    # segments: clips come from [start, end) seconds only
    with loader([(paths[0], 0, 0.8, 1.2)], batch_size=1, frames_per_clip=2, sampler="regular") as L:
        info = next(iter(L)).info[0]
        assert 20 <= info.frame_indices[0] and info.frame_indices[-1] < 30
    manifest = dataset.parent / "manifest.csv"
    manifest.write_text("path,label\n" + "".join(f"{p},{k % 2}\n" for k, p in enumerate(paths)))
    with loader(manifest, shuffle=False, batch_size=12) as L:
        assert list(memoryview(next(iter(L)).labels)) == [k % 2 for k in range(12)]


def test_samplers(dataset):
    with loader(dataset, sampler="regular", clips_per_video=3, frames_per_clip=2, frame_stride=5,
                shuffle=False, batch_size=1) as L:
        b = next(iter(L))
        assert [i.frame_indices for i in b.info] == [(0, 5), (17, 22), (34, 39)]
    with loader(dataset, sampler="random_time", seconds_between_frames=0.2, frames_per_clip=3) as L:
        for info in next(iter(L)).info:
            assert [b - a for a, b in zip(info.frame_indices, info.frame_indices[1:])] == [5, 5]


def test_errors_in_dataset(dataset, tmp_path):
    bad = tmp_path / "ds"
    shutil.copytree(dataset, bad)
    (bad / "dog" / "broken.mp4").write_bytes(b"\x00" * 5000)
    with loader(bad, on_error="skip", batch_size=13, shuffle=False) as L:
        b = next(iter(L))
        assert len(b) == 12 and b.num_failed == 1
        m = L.metrics()
        assert m["failures"][0]["path"].endswith("broken.mp4")
        assert m["failures"][0]["reason"].startswith(m["failures"][0]["path"] + ": ")
        assert m["coverage"] < 1.0
    with loader(bad, on_error="replace", batch_size=13, shuffle=False) as L:
        b = next(iter(L))
        assert len(b) == 13 and any(i.sample != i.requested for i in b.info)
    with loader(bad, on_error="raise", batch_size=4, shuffle=False) as L:
        with pytest.raises(reel.CorruptError) as e:
            list(L)
        assert e.value.path.endswith("broken.mp4") and str(e.value).startswith(e.value.path + ": ")


def test_bad_settings(dataset, tmp_path):
    with pytest.raises(reel.InvalidArgumentError):
        loader(dataset, batch_size=0)
    for bad in (dict(sampler="sometimes"), dict(crop="left"), dict(flip="maybe"), dict(layout="TBCHW"),
                dict(on_error="ignore"), dict(dtype="int8")):
        with pytest.raises(ValueError):
            loader(dataset, **bad)
    with pytest.raises(reel.NotFoundError):
        loader(tmp_path / "nothing-here")
    (tmp_path / "empty").mkdir()
    with pytest.raises(reel.ReelError) as e:
        loader(tmp_path / "empty")
    assert e.value.status == reel.Status.EMPTY


def test_unknown_c_setting(dataset):
    with pytest.raises(ValueError):
        R.Loader(str(dataset), {"no.such.setting": 1})
    defaults = R.loader_defaults()
    assert defaults["batch_size"] == 32 and defaults["sampler.frames_per_clip"] == 8


def test_pickle_and_config(dataset):
    with loader(dataset, epochs=3) as L:
        next(iter(L))
        cfg = L.config
        assert cfg["batch_size"] == 5 and cfg["size"] == 64
        L2 = pickle.loads(pickle.dumps(L))
        try:
            assert L2.config == cfg and L2.state_dict() == L.state_dict()
            assert [i.sample for i in L2.next_batch().info] == [i.sample for i in L.next_batch().info]
        finally:
            L2.close()


def test_metrics_and_trace(dataset, tmp_path):
    with loader(dataset, trace=True) as L:
        list(L)
        m = L.metrics()
        for k in ("frames", "clips", "batches", "frames_per_second", "coverage", "data_time_s", "model_time_s",
                  "rss_bytes", "ring_bytes", "stages", "bottleneck", "failures", "decode_amplification"):
            assert k in m
        assert m["clips"] == 12 and m["frames"] == 48 and m["coverage"] == 1.0
        assert [s["name"] for s in m["stages"]] == ["open", "decode", "collate"]
        L.write_trace(tmp_path / "trace.json")
        assert (tmp_path / "trace.json").stat().st_size > 0
    assert "closed" in repr(L)


def test_torch_loader(dataset, torch):
    import reel.torch as rt

    with loader(dataset) as L:
        batches = list(rt.TorchLoader(L))
        assert len(batches) == 3
        frames, labels, info = batches[0]
        assert isinstance(frames, torch.Tensor) and frames.shape == (5, 4, 3, 64, 64)
        assert labels.tolist() == [i.label for i in info]
        x, y = batches[1].frames, batches[1].labels
        assert x.dtype == torch.uint8 and y.dtype == torch.int64


# ---------------------------------------------------------------- waiting: timeout and Ctrl-C
@pytest.fixture(scope="module")
def slow_video(synth):
    """One long GOP: its last frame needs every frame before it decoded."""
    return synth(width=640, height=360, frames=800, gop=800, bframes=0)


def _slow_loader(slow_video):
    # the last frame of the long GOP, decoded by one thread with one FFmpeg thread
    return reel.Loader([(slow_video, 0)], frames_per_clip=1, size=(360, 640), crop=None, layout="BTHWC",
                       batch_size=1, shuffle=False,
                       sampler="regular", sampling_range_start=-1, decode_threads=1, decoder_threads=1,
                       open_threads=1)


def test_next_batch_timeout_raises_and_loses_nothing(slow_video):
    with _slow_loader(slow_video) as loader:
        with pytest.raises(TimeoutError, match="no batch within 0.001 s"):
            loader.next_batch(timeout=0.001)  # 800 frames of 640x360 take far longer
        for bad in (-1, float("nan")):  # C's refusal, naming the timeout
            with pytest.raises(reel.InvalidArgumentError, match="timeout .* must be >= 0"):
                loader.next_batch(timeout=bad)
        b = loader.next_batch(timeout=120)   # the same batch, still coming
        assert b is not None and [c.frame_indices for c in b.info] == [(799,)]
        assert read_indices(b.frames) == [799]
        del b
        assert loader.next_batch(timeout=120) is None  # end of the epoch
        assert loader.metrics()["batches"] == 1


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler for the test: a shell that starts the run in
    the background leaves SIGINT ignored, and then no KeyboardInterrupt comes."""
    import signal

    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def _sigint_when_held(proxy, main):
    """A thread that sends SIGINT to `main` once the proxy holds a request
    (the call it interrupts is then waiting for bytes the test has not let
    through), and tells whether it did (bounded: 60 s)."""
    import signal
    import threading

    sent = threading.Event()

    def run():
        for _ in range(1200):
            if proxy.held:
                signal.pthread_kill(main, signal.SIGINT)
                sent.set()
                return
            threading.Event().wait(0.05)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, sent


def test_ctrl_c_stops_a_long_wait(slow_video, tmp_path, python_sigint):
    """SIGINT while waiting for a batch raises KeyboardInterrupt at once, not
    after the batch is ready (the GIL is taken back every 0.1 s). The video
    comes through a proxy that holds its requests until the test releases
    them, so the batch cannot be ready when the interrupt comes: no clock in
    the test, only events."""
    import threading

    from faultproxy import fault_proxy
    from servers import nginx

    www = tmp_path / "www"
    www.mkdir()
    shutil.copy(slow_video, www / "slow.mp4")
    main = threading.get_ident()
    with nginx(www) as base, fault_proxy(base) as proxy:
        proxy.hold = ("slow.mp4",)
        loader = reel.Loader([(f"{proxy.base}/slow.mp4", 0)], frames_per_clip=1, size=(360, 640), crop=None,
                             layout="BTHWC", batch_size=1, shuffle=False, sampler="regular",
                             sampling_range_start=-1, open_threads=1, decoder_threads=1)
        with loader:
            t, sent = _sigint_when_held(proxy, main)
            with pytest.raises(KeyboardInterrupt):
                loader.next_batch(timeout=120)
            t.join()
            assert sent.is_set() and not proxy.release.is_set()  # raised while the video's bytes were held
            assert loader.metrics()["batches"] == 0
            proxy.release.set()
            b = loader.next_batch(timeout=120)  # the loader goes on
            assert [c.frame_indices for c in b.info] == [(799,)]
            assert read_indices(b.frames) == [799]
            del b


def test_ctrl_c_stops_a_long_decoder_call(slow_video, tmp_path, python_sigint):
    """SIGINT during one long VideoDecoder call raises KeyboardInterrupt
    while the call still waits (its reads are polled every 50 ms), and the
    decoder still works. As above, the proxy holds the call's requests until
    the test releases them: the call cannot have finished."""
    import threading

    from faultproxy import fault_proxy
    from servers import nginx

    www = tmp_path / "www"
    www.mkdir()
    shutil.copy(slow_video, www / "slow.mp4")
    with reel.VideoDecoder(slow_video, threads=1, size=(36, 64), layout="HWC") as dec:
        want = bytes(memoryview(dec.get_frames_at([799])))
    main = threading.get_ident()
    # a held request that were not cut short by the interrupt would time out
    # (5 s, no retry) and count as a failure
    remote = {"whole_object_max": 0, "readahead_min": 4096, "readahead_max": 8192, "request_timeout": 5,
              "max_retries": 0}
    with nginx(www) as base, fault_proxy(base) as proxy:
        with reel.VideoDecoder(f"{proxy.base}/slow.mp4", threads=1, size=(36, 64), layout="HWC",
                               remote=remote) as dec:
            proxy.hold = ("slow.mp4",)  # opened: the frames' reads wait
            t, sent = _sigint_when_held(proxy, main)
            with pytest.raises(KeyboardInterrupt):
                dec.get_frames_at([799])
            t.join()
            assert sent.is_set() and not proxy.release.is_set()  # raised while its bytes were held
            assert dec.remote_stats["failures"] == 0  # every poll saw the stop: no read waited out its timeout
            proxy.release.set()
            got = dec.get_frames_at([799])  # usable after the interrupt
            assert got.shape == (1, 36, 64, 3) and bytes(memoryview(got)) == want
            assert dec.stats.frames_returned == 1
