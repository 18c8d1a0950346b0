# tests/python/test_fork.py: nothing breaks after fork: a decoder opened in the
# parent works in a child (reopened there) and still in the parent; frames
# stay readable; a Loader refuses to run in a child instead of hanging; torch
# DataLoader workers and multiprocessing (fork and spawn) work.
from __future__ import annotations

import multiprocessing as mp
import threading


import reel
from conftest import in_child, read_indices


def test_decoder_after_fork(video):
    d = reel.VideoDecoder(video, layout="HWC", threads=2)
    assert read_indices(d.get_frames_at([10, 50])) == [10, 50]  # FFmpeg threads are running
    f = d[33]
    kind, got = in_child(lambda: (read_indices(d.get_frames_at([0, 59, 20])), read_indices(f),
                                  d.metadata.num_frames))
    assert kind == "ok" and got == ([0, 59, 20], [33], 60), got
    assert read_indices(d.get_frames_at([11, 49])) == [11, 49]  # the parent's decoder is untouched


def test_file_like_and_memory_after_fork(video):
    import io
    from pathlib import Path

    data = Path(video).read_bytes()
    a = reel.VideoDecoder(io.BytesIO(data), layout="HWC")
    b = reel.VideoDecoder(data, layout="HWC")
    a[5], b[5]
    kind, got = in_child(lambda: (read_indices(a.get_frames_at([40])), read_indices(b.get_frames_at([41]))))
    assert (kind, got) == ("ok", ([40], [41]))
    assert read_indices(a.get_frames_at([3])) == [3] and read_indices(b.get_frames_at([4])) == [4]


def test_fork_while_another_thread_decodes(synth):
    big = synth(width=640, height=480, frames=120, gop=120)
    d = reel.VideoDecoder(big, layout="HWC", threads=2)
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            d.get_frames_at([100, 0])

    t = threading.Thread(target=busy)
    t.start()
    try:
        kind, got = in_child(lambda: read_indices(d.get_frames_at([7])))
    finally:
        stop.set()
        t.join()
    assert (kind, got) == ("ok", [7])


def test_closed_decoder_in_child(video):
    d = reel.VideoDecoder(video)
    d.close()
    kind, got = in_child(lambda: d[0])
    assert kind == "err" and "closed" in got


def test_loader_in_child(tmp_path, synth):
    paths = [synth(frames=20, seed=s) for s in (1, 2, 3)]
    with reel.Loader(paths, frames_per_clip=2, size=32, batch_size=1, decode_threads=1) as L:
        b = L.next_batch()
        frames = b.frames.tobytes()
        kind, got = in_child(lambda: (b.frames.tobytes() == frames, L.next_batch()))
        assert kind == "err" and "RuntimeError" in got and "another process" in got
        kind, got = in_child(lambda: len(b.frames.tobytes()))
        assert (kind, got) == ("ok", len(frames))  # batches already out stay readable
        b = None  # give the buffer back
        assert L.next_batch() is not None  # the parent's loader goes on


def _decode_in_worker(args):
    dec, idx = args
    return read_indices(dec.get_frames_at(idx))


def test_multiprocessing_fork_and_spawn(video):
    d = reel.VideoDecoder(video, layout="HWC", threads=1)
    d[0]
    work = [(d, [i, i + 1]) for i in (0, 20, 40)]
    with mp.get_context("fork").Pool(2) as pool:
        assert pool.map(_decode_in_worker, work) == [[0, 1], [20, 21], [40, 41]]
    with mp.get_context("spawn").Pool(1) as pool:  # the decoder travels pickled
        assert pool.map(_decode_in_worker, work[:1]) == [[0, 1]]


class _FrameDataset:
    """A map-style dataset holding one decoder opened in the parent."""

    def __init__(self, path):
        self.dec = reel.VideoDecoder(path, layout="HWC", threads=2)

    def __len__(self):
        return 12

    def __getitem__(self, i):
        return self.dec[i * 5].torch().clone(), i * 5


def test_torch_dataloader_workers(video, torch):
    ds = _FrameDataset(video)
    ds[0]  # used in the parent before the workers fork
    dl = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2, multiprocessing_context="fork")
    seen = []
    for x, idx in dl:
        assert x.shape == (4, 120, 160, 3)
        for frame, i in zip(x, idx.tolist()):
            f = reel._reel._frames_from_bytes(frame.numpy().tobytes(), "uint8", (120, 160, 3), None, None, None,
                                              None)
            assert read_indices(f) == [i]
            seen.append(i)
    assert sorted(seen) == list(range(0, 60, 5))


def test_clip_dataset_workers(synth, torch):
    import reel.torch as rt

    paths = [(synth(frames=30, seed=s), s) for s in (1, 2, 3, 4)]
    ds = rt.ClipDataset(paths, sampler="regular", sampler_args=dict(num_clips=2, num_frames_per_clip=3),
                        decoder_args=dict(size=(32, 32)))
    dl = torch.utils.data.DataLoader(ds, batch_size=2, num_workers=2, multiprocessing_context="fork")
    out = list(dl)
    assert len(out) == 2 and out[0][0].shape == (2, 2, 3, 3, 32, 32)
    assert sorted(int(y) for _, ys in out for y in ys) == [1, 2, 3, 4]
