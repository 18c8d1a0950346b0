# tests/python/test_torch_integration.py: reel.torch.VideoDataset inside
# torch.utils.data.DataLoader: 0 and 2 workers give each sample exactly once
# per epoch, bit-identical to the plain loader's; clip mode; rank and world
# size from torch.distributed (and explicit) combined with the workers; the
# configuration pickles and is rebuilt in a spawned worker; nothing breaks
# after fork; pinned ring buffers (fallback here, and the dlopen path with a
# stand-in CUDA runtime); examples/train_linear.py alone and as a 2-process
# torchrun (gloo) run whose ranks' samples are disjoint and cover the dataset.
from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import reel
import reel._testing
from conftest import in_child

torch = pytest.importorskip("torch")
rt = pytest.importorskip("reel.torch")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train_linear.py"
KW = dict(frames_per_clip=2, size=32, batch_size=3, seed=7, crop="random", flip="random", decode_threads=2)


def interpreter() -> list:
    """This interpreter with its flags (e.g. -S), as multiprocessing starts children."""
    return [sys.executable, *subprocess._args_from_interpreter_flags()]


@pytest.fixture(scope="module")
def videos(synth):
    """12 short videos, labels 0..2."""
    return [(synth(width=64, height=48, frames=16 + i, gop=8, seed=100 + i), i % 3) for i in range(12)]


def digest(t) -> str:
    return hashlib.sha1(t.contiguous().numpy().tobytes()).hexdigest()


def loader_samples(videos, epoch=0, **kw):
    """(sample, clip, label, digest) of every clip of one epoch of a plain reel.Loader."""
    with reel.Loader(videos, **{**KW, **kw}) as loader:
        if epoch:
            st = loader.state_dict()
            st.update(epoch=epoch, samples_seen=0)
            loader.load_state_dict(st)
        return sorted((c.sample, c.clip, c.label, digest(b.frames.torch()[i]))
                      for b in loader for i, c in enumerate(b.info))


def dataset_samples(batches):
    out = []
    for b in batches:
        assert isinstance(b, rt.TorchBatch) and b.frames.shape[0] == b.labels.shape[0] == len(b.info)
        out += [(c.sample, c.clip, int(b.labels[i]), digest(b.frames[i])) for i, c in enumerate(b.info)]
    return sorted(out)


# ---------------------------------------------------------------- DataLoader, 0 and 2 workers
@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_gives_each_sample_once(videos, workers):
    ref0, ref1 = loader_samples(videos), loader_samples(videos, epoch=1)
    assert [s for s, *_ in ref0] == list(range(12))
    ds = rt.VideoDataset(videos, **KW)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                     multiprocessing_context="fork" if workers else None)
    for epoch, ref in enumerate((ref0, ref1)):
        ds.set_epoch(epoch)
        got = dataset_samples(dl)
        assert got == ref  # every sample exactly once, the same bytes as the loader alone
    if workers == 0:  # the loader lives here: its metrics too
        m = ds.metrics()
        assert m["coverage"] == 1.0 and m["ring_memory"] == "plain"
        assert ds.loader is not None and ds.loader.config["world_size"] == 1
        # without set_epoch the epoch advances by itself (here: from 1 to 2)
        ds._epoch = None
        assert dataset_samples(dl) == loader_samples(videos, epoch=2)
    else:
        assert ds.metrics() is None  # the loaders ran in the workers
    ds.close()


def test_worker_batches_give_their_ring_buffers_back(videos):
    """A worker's batches cross to this process through shared memory: each
    one's ring buffer goes back once sent, so a worker can send many more
    batches than its ring holds (20 per worker here, ring of 3)."""
    many = videos * 4
    ds = rt.VideoDataset(many, **{**KW, "batch_size": 1, "prefetch_batches": 3})
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork",
                                     prefetch_factor=4)
    kept = list(dl)  # all alive at once in this process: they are copies, not views of a ring
    assert len(kept) == 48
    assert dataset_samples(kept) == loader_samples(many, batch_size=1)


def test_clip_mode_collates(videos):
    ds = rt.VideoDataset(videos, clips=True, **KW)
    dl = torch.utils.data.DataLoader(ds, batch_size=5, num_workers=2, multiprocessing_context="fork")
    batches = list(dl)
    assert all(isinstance(b, rt.TorchClip) for b in batches)
    assert all(b.frames.shape[1:] == (2, 3, 32, 32) and b.frames.dtype == torch.uint8 for b in batches)
    got = sorted((int(s), int(y), digest(f)) for b in batches
                 for s, y, f in zip(b.sample, b.label, b.frames, strict=True))
    assert got == [(s, y, d) for s, _, y, d in loader_samples(videos)]
    assert not any(bool(p) for b in batches for p in b.padded)


# ---------------------------------------------------------------- len, state_dict
@pytest.mark.parametrize("rank,world,shard,drop_last", [(0, 1, "pad", False), (1, 2, "pad", False),
                                                         (2, 5, "pad", False), (2, 5, "drop", False),
                                                         (0, 1, "pad", True), (1, 3, "drop", True)])
def test_len_is_what_one_epoch_yields(videos, rank, world, shard, drop_last):
    kw = {**KW, "shard_mode": shard, "drop_last": drop_last}
    for clips in (False, True):
        ds = rt.VideoDataset(videos, clips=clips, rank=rank, world_size=world, **kw)
        n = len(ds)
        got = sum(1 for _ in torch.utils.data.DataLoader(ds, batch_size=None))
        assert n == got > 0, (clips, n, got)
        ds.close()


def test_len_of_a_folder_and_dataset_info(tmp_path):
    for i in range(7):
        d = tmp_path / f"class_{i % 3}"
        d.mkdir(exist_ok=True)
        reel._testing.write_video(str(d / f"v{i}.mp4"), width=64, height=48, frames=12, gop=6, seed=i + 1)
    info = reel.dataset_info(tmp_path)
    assert info == {"size": 7, "class_names": ["class_0", "class_1", "class_2"], "skipped": []}
    assert reel.dataset_info([("a.mp4", 1), ("b.mp4", 0)])["size"] == 2  # a list is not opened
    ds = rt.VideoDataset(tmp_path, frames_per_clip=2, size=32, batch_size=3, decode_threads=1)
    assert len(ds) == 3 and sum(1 for _ in ds) == 3  # 7 videos, batches of 3
    ds.close()
    with pytest.raises(reel.NotFoundError):
        reel.dataset_info(tmp_path / "missing")


def test_state_dict_resumes_mid_epoch_exactly(videos):
    """Stop after 2 batches of epoch 1, save, rebuild, load: the rest of the
    epoch is the same batches, byte for byte, and epoch 2 follows."""
    def rows(batches):
        return [[(c.sample, c.clip, tuple(c.frame_indices), digest(b.frames[i])) for i, c in enumerate(b.info)]
                for b in batches]

    ref = rt.VideoDataset(videos, **KW)
    ref_dl = torch.utils.data.DataLoader(ref, batch_size=None)
    rows(ref_dl)                            # epoch 0
    epoch1, epoch2 = rows(ref_dl), rows(ref_dl)
    ref.close()

    ds = rt.VideoDataset(videos, **KW)
    assert ds.state_dict() == {"epoch": 0, "samples_seen": 0}
    dl = torch.utils.data.DataLoader(ds, batch_size=None)
    rows(dl)                                # epoch 0
    it = iter(dl)
    head = rows([next(it), next(it)])
    assert head == epoch1[:2]
    state = ds.state_dict()
    assert (state["epoch"], state["samples_seen"]) == (1, 2 * KW["batch_size"])
    del it
    ds.close()

    again = rt.VideoDataset(videos, **KW)
    again.load_state_dict(pickle.loads(pickle.dumps(state)))
    assert again.state_dict() == state      # pending until the next iter()
    dl2 = torch.utils.data.DataLoader(again, batch_size=None)
    assert rows(dl2) == epoch1[2:]
    assert rows(dl2) == epoch2
    with pytest.raises(ValueError):
        again.load_state_dict({"samples_seen": 3})
    again.close()


# ---------------------------------------------------------------- sharding: ranks x workers
@pytest.mark.parametrize("workers", [0, 2])
def test_ranks_and_workers_are_disjoint_and_cover(videos, workers):
    per_rank = []
    for rank in range(2):
        ds = rt.VideoDataset(videos, rank=rank, world_size=2, **KW)
        dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=workers,
                                         multiprocessing_context="fork" if workers else None)
        got = dataset_samples(dl)
        assert len(got) == 6, got  # 12 samples over 2 ranks (x workers): no padding
        per_rank.append(got)
        ds.close()
    assert not set(per_rank[0]) & set(per_rank[1])
    assert sorted(per_rank[0] + per_rank[1]) == loader_samples(videos)


def test_padding_evens_out_the_shares(videos):
    """11 samples over 2 ranks x 2 workers: every share gets 3, one repeat is padded."""
    ds = rt.VideoDataset(videos[:11], rank=1, world_size=2, **KW)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
    infos = [c for b in dl for c in b.info]
    assert len(infos) == 6 and sum(c.padded for c in infos) == 1


def test_rank_and_world_from_torch_distributed(videos, monkeypatch):
    dist = torch.distributed
    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda *a, **k: 1)
    monkeypatch.setattr(dist, "get_world_size", lambda *a, **k: 3)
    ds = rt.VideoDataset(videos, **KW)
    assert ds.distributed() == (1, 3) and ds.shard() == (1, 3)
    got = dataset_samples(torch.utils.data.DataLoader(ds, batch_size=None))
    assert got == loader_samples(videos, rank=1, world_size=3)
    assert ds.loader.config["rank"] == 1 and ds.loader.config["world_size"] == 3
    copy = pickle.loads(pickle.dumps(ds))  # a spawned worker gets them without the process group
    assert (copy.rank, copy.world_size) == (1, 3) and copy.loader is None
    ds.close()


def test_bad_arguments(videos):
    with pytest.raises(TypeError, match="epochs"):
        rt.VideoDataset(videos, epochs=2)
    with pytest.raises(TypeError, match="unknown loader argument"):
        rt.VideoDataset(videos, frames=8)
    with pytest.raises(ValueError, match="both"):
        rt.VideoDataset(videos, rank=1)
    with pytest.raises(ValueError, match="rank"):
        rt.VideoDataset(videos, rank=2, world_size=2)


# ---------------------------------------------------------------- pickling, spawn, fork
def _in_spawned_worker(blob: bytes):
    """Rebuilds a dataset, a loader and a decoder from their pickles and uses them."""
    ds, loader, dec = pickle.loads(blob)
    import reel.torch  # noqa: F401 - the dataset's class

    got = dataset_samples(torch.utils.data.DataLoader(ds, batch_size=None))
    resumed = [c.sample for b in loader for c in b.info]
    return got, resumed, dec.metadata.num_frames, os.getpid()


@pytest.mark.slow
def test_configuration_pickles_and_is_rebuilt_in_a_spawned_worker(videos):
    import multiprocessing as mp

    ds = rt.VideoDataset(videos, **KW)
    first = next(iter(ds))  # a running loader in this process: not part of the pickle
    loader = reel.Loader(videos, **KW)
    b = loader.next_batch()  # the loader pickles as its configuration plus its position
    skipped = [c.sample for c in b.info]
    dec = reel.VideoDecoder(videos[0][0], size=(24, 32))
    blob = pickle.dumps((ds, loader, dec))
    del first, b
    with mp.get_context("spawn").Pool(1) as pool:
        got, resumed, nframes, pid = pool.apply(_in_spawned_worker, (blob,))
    assert pid != os.getpid()
    assert got == loader_samples(videos)
    with reel.Loader(videos, **KW) as fresh:
        order = [c.sample for bb in fresh for c in bb.info]
    assert order == skipped + resumed  # the copy went on where the original was
    assert nframes == 16
    loader.close()
    ds.close()


def test_nothing_breaks_after_fork(videos):
    ref = loader_samples(videos)
    ds = rt.VideoDataset(videos, **KW)
    it = iter(ds)
    held = next(it)  # this process's loader runs, a batch is held
    # a forked child builds its own loader over the same configuration
    assert in_child(lambda: dataset_samples(iter(ds))) == ("ok", ref)
    # fork-based DataLoader workers, while this loader's threads run
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork")
    ds.set_epoch(0)
    assert dataset_samples(dl) == ref
    # and the parent's own iteration goes on, its held batch intact
    assert sorted(dataset_samples([held]) + dataset_samples(it)) == ref
    ds.close()


# ---------------------------------------------------------------- pinned ring buffers
def test_pin_memory_falls_back_to_plain(videos):
    with reel.Loader(videos, pin_memory=True, **KW) as pinned, reel.Loader(videos, **KW) as plain:
        assert plain.metrics()["ring_memory"] == "plain"
        got = [(c.sample, digest(b.frames.torch()[i])) for b in pinned for i, c in enumerate(b.info)]
        assert got == [(c.sample, digest(b.frames.torch()[i])) for b in plain for i, c in enumerate(b.info)]
        mem = pinned.metrics()["ring_memory"]
    if not torch.cuda.is_available():  # no GPU: no page-locked memory, whatever runtime is installed
        assert mem == "plain"
    else:
        assert mem in ("pinned", "plain")
    ds = rt.VideoDataset(videos, pin_memory=True, **KW)
    assert dataset_samples(ds) == loader_samples(videos)
    assert ds.metrics()["ring_memory"] == mem
    ds.close()


FAKE_CUDART = r"""
#include <stdlib.h>
static int allocs, frees;
int cudaHostAlloc(void **p, size_t n, unsigned int flags)
{ (void)flags; if (posix_memalign(p, 4096, n)) return 2; allocs++; return 0; }
int cudaFreeHost(void *p) { free(p); frees++; return 0; }
int fake_allocs(void) { return allocs; }
int fake_frees(void) { return frees; }
"""

PIN_CHILD = r"""
import ctypes, json, os, sys
import reel
reel.set_ffmpeg_log_level(0)
paths, kw = json.loads(sys.argv[1])
with reel.Loader(paths, pin_memory=True, **kw) as L:
    mem, ring = L.metrics()["ring_memory"], L.ring_size
    clips = sum(len(b) for b in L)
out = {"mem": mem, "ring": ring, "clips": clips}
cudart = os.environ["REEL_CUDART"]
if cudart != "none":
    lib = ctypes.CDLL(cudart)  # the same library the loader opened
    out.update(allocs=lib.fake_allocs(), frees=lib.fake_frees())
print(json.dumps(out))
"""


def test_pin_memory_through_a_cuda_runtime_found_at_run_time(videos, tmp_path):
    """A stand-in libcudart (cudaHostAlloc = posix_memalign) shows the dlopen
    path: the ring is reported pinned and every buffer goes back through
    cudaFreeHost; REEL_CUDART=none turns the lookup off."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler for the stand-in CUDA runtime")
    src = tmp_path / "fake_cudart.c"
    src.write_text(FAKE_CUDART)
    lib = tmp_path / "libcudart.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    arg = json.dumps([[p for p, _ in videos], KW])
    results = {}
    for cudart in (str(lib), "none"):
        env = dict(os.environ, REEL_CUDART=cudart)
        r = subprocess.run([*interpreter(), "-c", PIN_CHILD, arg], env=env, capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr[-3000:]
        results[cudart] = json.loads(r.stdout.strip().splitlines()[-1])
    fake = results[str(lib)]
    assert fake["mem"] == "pinned" and fake["clips"] == 12
    assert fake["allocs"] == fake["frees"] == fake["ring"]
    assert results["none"]["mem"] == "plain" and results["none"]["clips"] == 12


# ---------------------------------------------------------------- examples/train_linear.py
def kinetics_set(root: Path, n: int = 8) -> Path:
    """A Kinetics-like folder: 2 classes x n/2 small videos."""
    for i in range(n):
        d = root / f"class_{i % 2}"
        d.mkdir(parents=True, exist_ok=True)
        reel._testing.write_video(str(d / f"video_{i:03d}.mp4"), width=64, height=48, frames=20 + i, gop=10, seed=i + 1)
    return root


EXAMPLE_ARGS = ["--epochs", "1", "--batch", "2", "--frames", "4", "--size", "32", "--threads", "1"]


@pytest.mark.slow
def test_train_linear_example(tmp_path):
    data = kinetics_set(tmp_path / "k")
    r = subprocess.run([*interpreter(), str(EXAMPLE), "--data", str(data), *EXAMPLE_ARGS, "--device", "cpu"],
                       capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    out = r.stdout
    for needle in ("Linear(4x3x32x32 = 12,288 -> 2)", "throughput:", "frames/s", "coverage: 1.000 (",
                   "data time:", "model time:", "done: 4 steps, 8 clips, 32 frames"):
        assert needle in out, out


@pytest.mark.slow
def test_torchrun_ddp_ranks_are_disjoint_and_cover(tmp_path):
    """2 processes, gloo: each rank trains on its own half; together, all of it."""
    data = kinetics_set(tmp_path / "k")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cmd = [*interpreter(), "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "--no-python",
           *interpreter(), "-u", str(EXAMPLE), "--ddp", "--data", str(data), *EXAMPLE_ARGS]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired as exc:  # pragma: no cover - a hang is the failure
        pytest.fail(f"torchrun did not finish in 180 s: {exc.stdout!r} {exc.stderr!r}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "2 ranks (DDP)" in r.stdout, r.stdout
    assert "ranks disjoint: True, coverage of dataset: 8/8" in r.stdout, r.stdout
    assert "clips per rank [4, 4]" in r.stdout, r.stdout
