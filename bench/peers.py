#!/usr/bin/env python3
"""Side-by-side benchmark (issue 4, section 6): reel against torchcodec, decord and PyAV.

    python3 bench/peers.py [--install] [--videos 16] [--workers 2] [--rounds 2]
                           [--gops 250,16] [--tools reel,torchcodec,decord,pyav]
                           [--clips 128] [--no-doc]

Every tool runs on the same videos, on the same machine, in the same run,
interleaved round by round (the order rotates each round). Each tool gets a
fresh process per dataset and workload (started side by side, then kept for
the rounds), so that its memory is its own. The best of the rounds is kept
for speed; accuracy is summed over every round. About 10 minutes with the
defaults on 2 busy cores.

What it does:
  1. Generates the datasets with `build/reel synth --dataset DIR --videos N
     --seconds 10 --size 340x256 --fps 25 [--gop G]` (H.264, 2 B-frames,
     keyframes every G frames; the dataset default is G = 250, i.e. one
     keyframe per video) into build/bench-data/peers-gopG (kept and reused).
     Every frame carries its own index in a block pattern that survives
     resizing; reel._testing.read_indices reads it back.
  2. With --install, installs the peers from PyPI into this Python with pip:
     av and decord as they come; torchcodec with --no-deps (so that pip
     never replaces the installed torch), newest first, keeping the first
     version that imports and decodes with the installed torch. A peer that
     cannot be installed or imported is skipped, with the reason.
  3. Runs the workloads, each tool in a fresh process (`--worker`), with the
     same budget of 2 cores:
       reel        defaults (VideoDecoder threads=0: one per core; Loader:
                   its default thread counts); extra rows: --workers Python
                   threads over videos with threads=1 each (a DataLoader's
                   parallelism), and one dec[:] call per video in (c)
       torchcodec  on the CPU, seek_mode="exact", its samplers and its
                   decoder-native Resize transform, inside a torch
                   DataLoader with --workers worker processes (1 FFmpeg
                   thread each, torchcodec's default)
       decord      VideoReader(num_threads=--workers), get_batch; resizing
                   by VideoReader(width=, height=) (decord's own resize)
       pyav        thread_type="AUTO", seek (to the keyframe before), decode
                   forward, reformat
     Workloads, over every video of the dataset:
       (a) random  10 distinct random frames per video (seeded, the same for
                   every tool), full size (340x256) RGB, one decoder per video
       (b) loader  the Kinetics-like loader: clips of 8 consecutive frames
                   from a random start, resized to 224x224 (no crop), batches
                   of 32 clips as [32, 8, 3, 224, 224] uint8 tensors; --clips
                   samples (the videos repeated), one epoch
       (c) seq     a sequential full decode of every video, full-size RGB
  4. Reports frames/s (returned frames over the wall time of the workload,
     from opening the first video to the last frame; interpreter start and
     imports excluded; the time spent checking accuracy excluded where the
     tool waits for it), the ratio reel ÷ peer, CPU time per frame (the
     process's threads and its DataLoader workers), peak memory of the
     process tree,
     and accuracy: the share of returned frames whose embedded index is the
     frame requested. Writes the "## Peers (issue 4)" section of
     docs/BENCHMARKS.md (the rest of the file is left alone) and the raw
     results as JSON lines in build/bench-data/results-peers.jsonl.
"""
import argparse
import datetime
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from _common import (ROOT, command_line, cpu_model, die, find_built, fmt_fps, load_summary, log, reel_version,
                     sample_load, write_doc, write_results)

SECTION = "## Peers (issue 4)"
TOOLS = ["reel", "torchcodec", "decord", "pyav"]
WORKLOADS = ["random", "loader", "seq"]
WORKLOAD_TITLE = {
    "random": "(a) 10 random frames per video",
    "loader": "(b) Kinetics-like loader: 8 frames per clip at 224x224, batches of 32",
    "seq": "(c) sequential full decode",
}
SECONDS = 10
FPS = 25
SIZE = (340, 256)
RANDOM_COUNT = 10
CLIP_FRAMES = 8
OUT = 224
BATCH = 32
SEED = 2024
PEER_PIP = {"torchcodec": "torchcodec", "decord": "decord", "pyav": "av"}
PEER_MODULE = {"torchcodec": "torchcodec", "decord": "decord", "pyav": "av", "reel": "reel"}
TORCHCODEC_TRIES = 8


# ====================================================================== worker side
# `peers.py --worker TOOL --workload W --data DIR ...` runs one measurement and
# prints one JSON line. torch is imported by every worker before the clock
# starts, as in a training process, so the memory figures compare like with like.

class Checker:
    """Reads the embedded index of returned frames and compares with the request;
    keeps the time it spends, to take it out of the measurement where the tool
    waits for it (a serial consumer); where decoding runs on in the background
    during the check (threads, DataLoader workers), the check's time is left in."""

    def __init__(self):
        from reel import _reel, _testing
        import numpy as np
        self._reel, self._testing, self.np = _reel, _testing, np
        self.checked = self.correct = self.unreadable = 0
        self.seconds = 0.0                  # wall time spent checking
        self.cpu = 0.0                      # CPU time of the checking thread
        self.buffers = {}
        self.wrong = []                     # a few (requested, got) pairs, for the report

    def check(self, frames, requested, layout):
        """frames: numpy/torch/reel array [..., C, H, W] (layout "CHW") or [..., H, W, C]."""
        t0, c0 = time.perf_counter(), time.thread_time()
        np = self.np
        a = frames.numpy() if hasattr(frames, "numpy") and not isinstance(frames, np.ndarray) else frames
        a = np.asarray(a)
        a = a.reshape((-1,) + a.shape[-3:])
        req = [int(r) for r in requested]
        if len(req) != a.shape[0]:
            raise RuntimeError(f"{a.shape[0]} frames returned for {len(req)} requested")
        for k in range(0, a.shape[0], 8):       # 8 at a time: a small buffer
            self._check(a[k:k + 8], req[k:k + 8], layout)
        self.seconds += time.perf_counter() - t0
        self.cpu += time.thread_time() - c0

    def _check(self, a, req, layout):
        np = self.np
        chw = layout == "CHW"
        h, w = (a.shape[2], a.shape[3]) if chw else (a.shape[1], a.shape[2])
        # The pattern lies in the top quarter of the frame: copy just that band
        # into a zeroed full-size HWC array (the reader needs the full geometry),
        # kept per shape so that its other rows stay zero and fault no pages in.
        band = min(h, h // 4 + 2)
        shape = (a.shape[0], h, w, 3)
        hwc = self.buffers.get(shape)
        if hwc is None:
            hwc = self.buffers[shape] = np.zeros(shape, dtype=np.uint8)
        if chw:
            for c in range(3):                  # per plane: much faster than one transposing copy
                hwc[:, :band, :, c] = a[:, c, :band, :]
        else:
            hwc[:, :band] = a[:, :band]
        got = self._testing.read_indices(hwc)
        for r, g in zip(req, got):
            self.checked += 1
            if g == r:
                self.correct += 1
            else:
                if g < 0:
                    self.unreadable += 1
                if len(self.wrong) < 5:
                    self.wrong.append((r, g))

    def merge(self, other):
        self.checked += other["checked"]
        self.correct += other["correct"]
        self.unreadable += other["unreadable"]
        self.seconds += other["seconds"]
        self.cpu += other["cpu"]
        self.wrong += [tuple(w) for w in other["wrong"]][: max(0, 5 - len(self.wrong))]

    def state(self):
        return {"checked": self.checked, "correct": self.correct, "unreadable": self.unreadable,
                "seconds": self.seconds, "cpu": self.cpu, "wrong": self.wrong}


def read_videos(data):
    """(path, label) per video from DIR/manifest.csv, labels as class indices."""
    rows = []
    with open(Path(data) / "manifest.csv") as f:
        next(f)
        for line in f:
            parts = line.strip().split(",")
            if len(parts) >= 2 and parts[0]:
                rows.append((str(Path(data) / parts[0]), parts[1]))
    classes = sorted({r[1] for r in rows})
    return [(p, classes.index(c)) for p, c in rows]


def random_requests(videos, num_frames):
    """Workload (a): 10 distinct frames per video, in random order, seeded per video."""
    return [random.Random(SEED + 7919 * i).sample(range(num_frames), RANDOM_COUNT) for i in range(len(videos))]


def loader_samples(videos, clips):
    """Workload (b): the dataset repeated up to `clips` samples."""
    return [videos[i % len(videos)] for i in range(clips)]


# ---------------------------------------------------------------- reel

def w_reel(args, videos, chk):
    import reel
    n_frames = 0
    extra = {}
    if args.workload == "random":
        reqs = random_requests(videos, SECONDS * FPS)
        t0 = time.perf_counter()
        if args.variant == "threads":
            # one decoder (1 FFmpeg thread) per video, --workers Python threads (the GIL is released)
            from concurrent.futures import ThreadPoolExecutor

            def one(i):
                with reel.VideoDecoder(videos[i][0], threads=1) as dec:
                    return dec.get_frames_at(reqs[i])
            with ThreadPoolExecutor(args.workers) as pool:
                for i, fr in enumerate(pool.map(one, range(len(videos)))):
                    chk.check(fr, reqs[i], "CHW")
                    n_frames += fr.shape[0]
            extra["check_overlaps"] = True
        else:
            for (path, _), req in zip(videos, reqs):
                with reel.VideoDecoder(path) as dec:
                    fr = dec.get_frames_at(req)
                chk.check(fr, req, "CHW")
                n_frames += fr.shape[0]
    elif args.workload == "loader":
        samples = loader_samples(videos, args.clips)
        t0 = time.perf_counter()
        with reel.Loader(samples, frames_per_clip=CLIP_FRAMES, size=OUT, batch_size=BATCH, crop=None,
                         shuffle=True, seed=0, epochs=1) as loader:
            for batch in loader:
                x, y = batch.torch()            # [B, 8, 3, 224, 224] uint8, [B] int64
                chk.check(x, [i for c in batch.info for i in c.frame_indices], "CHW")
                n_frames += x.shape[0] * x.shape[1]
                del x, y, batch
        extra["check_overlaps"] = True
    elif args.variant == "threads":  # seq, one video per Python thread, like a DataLoader's workers
        from concurrent.futures import ThreadPoolExecutor

        def one(path):
            c = Checker()               # per thread; decoding goes on in the other thread meanwhile
            n = 0
            with reel.VideoDecoder(path, threads=1) as dec:
                for i, fr in enumerate(dec):
                    c.check(fr, [i], "CHW")
                    n += 1
            return n, c.state()
        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.workers) as pool:
            check_wall = 0.0
            for n, state in pool.map(one, [p for p, _ in videos]):
                n_frames += n
                check_wall += state["seconds"]
                chk.merge(state)
        chk.seconds = check_wall / max(1, args.workers)      # as for torchcodec's workers
    else:  # seq
        t0 = time.perf_counter()
        for path, _ in videos:
            with reel.VideoDecoder(path) as dec:
                if args.variant == "onecall":
                    fr = dec[:]
                    chk.check(fr, range(fr.shape[0]), "CHW")
                    n_frames += fr.shape[0]
                    del fr
                else:
                    for i, fr in enumerate(dec):
                        chk.check(fr, [i], "CHW")
                        n_frames += 1
    return n_frames, time.perf_counter() - t0, extra


# ---------------------------------------------------------------- torchcodec

class _TCRandom:
    def __init__(self, videos, reqs):
        self.videos, self.reqs = videos, reqs

    def __len__(self):
        return len(self.videos)

    def __getitem__(self, i):
        from torchcodec.decoders import VideoDecoder
        import torch
        dec = VideoDecoder(self.videos[i][0], device="cpu", seek_mode="exact")
        return dec.get_frames_at(self.reqs[i]).data, torch.tensor(self.reqs[i])


def _tc_recording_decoder():
    from torchcodec.decoders import VideoDecoder

    class RecordingDecoder(VideoDecoder):
        """Records the indices torchcodec's sampler asks for (the sampler calls get_frames_at)."""
        requested = None

        def get_frames_at(self, indices):
            self.requested = [int(i) for i in indices]
            return super().get_frames_at(indices)
    return RecordingDecoder


class _TCLoader:
    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        import torch
        from torchcodec.samplers import clips_at_random_indices
        from torchcodec.transforms import Resize
        path, label = self.samples[i]
        dec = _tc_recording_decoder()(path, device="cpu", seek_mode="exact", transforms=[Resize((OUT, OUT))])
        clips = clips_at_random_indices(dec, num_clips=1, num_frames_per_clip=CLIP_FRAMES)
        return clips.data[0], label, torch.tensor(dec.requested)


class _TCSeq:
    """Decodes a whole video in the worker and checks every frame there (sending
    65 MB per video back through shared memory would measure the pipe)."""

    def __init__(self, videos):
        self.videos = videos

    def __len__(self):
        return len(self.videos)

    def __getitem__(self, i):
        from torchcodec.decoders import VideoDecoder
        chk = Checker()
        dec = VideoDecoder(self.videos[i][0], device="cpu", seek_mode="exact")
        n = 0
        for k, frame in enumerate(dec):
            chk.check(frame, [k], "CHW")
            n += 1
        return n, chk.state()


def w_torchcodec(args, videos, chk):
    import torch
    from torch.utils.data import DataLoader
    n_frames = 0
    extra = {}
    if args.workload == "random":
        reqs = random_requests(videos, SECONDS * FPS)
        t0 = time.perf_counter()
        dl = DataLoader(_TCRandom(videos, reqs), batch_size=None, shuffle=False, num_workers=args.workers)
        for frames, req in dl:
            chk.check(frames, req.tolist(), "CHW")
            n_frames += frames.shape[0]
        extra["check_overlaps"] = True
    elif args.workload == "loader":
        samples = loader_samples(videos, args.clips)
        g = torch.Generator()
        g.manual_seed(0)
        t0 = time.perf_counter()
        dl = DataLoader(_TCLoader(samples), batch_size=BATCH, shuffle=True, num_workers=args.workers, generator=g)
        for x, _y, req in dl:                      # [B, 8, 3, 224, 224], [B], [B, 8]
            chk.check(x, req.reshape(-1).tolist(), "CHW")
            n_frames += x.shape[0] * x.shape[1]
        extra["check_overlaps"] = True
    else:  # seq
        t0 = time.perf_counter()
        dl = DataLoader(_TCSeq(videos), batch_size=None, shuffle=False, num_workers=args.workers)
        worker_check = 0.0
        for n, state in dl:
            n_frames += n
            worker_check += state["seconds"]
            chk.merge(state)
        # the workers' check time ran in parallel: take out its share per worker
        chk.seconds = worker_check / max(1, args.workers)
        extra["check_in_workers"] = True
    return n_frames, time.perf_counter() - t0, extra


# ---------------------------------------------------------------- decord and PyAV

def _run_serial(args, videos, chk, frames_at, read_clip, frames_of):
    """The three workloads in this process, for the tools without a loader of their
    own (decord, PyAV), given the tool's three ways of reading:
      frames_at(path, req)  (a): the frames at the indices req, in that order, [N, H, W, 3]
      read_clip(path, rng)  (b): (one clip [CLIP_FRAMES, OUT, OUT, 3] uint8 from a start
                            it draws with rng, that start); the samples go in a seeded
                            random order, BATCH clips stacked into a [B, 8, 3, 224, 224] tensor
      frames_of(path)       (c): every frame of the video in order, [H, W, 3] each
    Returns (frames, wall seconds, {}) as the w_* functions do."""
    n_frames = 0
    if args.workload == "random":
        reqs = random_requests(videos, SECONDS * FPS)
        t0 = time.perf_counter()
        for (path, _), req in zip(videos, reqs):
            fr = frames_at(path, req)
            chk.check(fr, req, "HWC")
            n_frames += fr.shape[0]
    elif args.workload == "loader":
        import numpy as np
        import torch
        samples = loader_samples(videos, args.clips)
        rng = random.Random(0)
        order = list(range(len(samples)))
        rng.shuffle(order)
        t0 = time.perf_counter()
        for b in range(0, len(order), BATCH):
            clips, labels, reqs = [], [], []
            for s in order[b:b + BATCH]:
                path, label = samples[s]
                clip, start = read_clip(path, rng)
                clips.append(clip)
                labels.append(label)
                reqs += range(start, start + CLIP_FRAMES)
            x = torch.from_numpy(np.stack(clips)).permute(0, 1, 4, 2, 3).contiguous()   # [B, 8, 3, 224, 224]
            y = torch.tensor(labels)
            chk.check(x, reqs, "CHW")
            n_frames += x.shape[0] * x.shape[1]
            del x, y, clips
    else:  # seq
        t0 = time.perf_counter()
        for path, _ in videos:
            for k, fr in enumerate(frames_of(path)):
                chk.check(fr[None], [k], "HWC")
                n_frames += 1
    return n_frames, time.perf_counter() - t0, {}


def w_decord(args, videos, chk):
    import numpy as np
    import decord

    def frames_at(path, req):
        vr = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=args.workers)
        # sorted: decord decodes forward through sorted indices, and seeks back
        # for each step back (in the request order it is about 3x slower on GOP 250)
        order = sorted(range(len(req)), key=req.__getitem__)
        fr = vr.get_batch([req[k] for k in order]).asnumpy()     # [10, H, W, 3]
        return fr[np.argsort(order)]                              # back to the request order

    def read_clip(path, rng):
        vr = decord.VideoReader(path, ctx=decord.cpu(0), width=OUT, height=OUT, num_threads=args.workers)
        start = rng.randint(0, len(vr) - CLIP_FRAMES)
        return vr.get_batch(list(range(start, start + CLIP_FRAMES))).asnumpy(), start    # [8, 224, 224, 3]

    def frames_of(path):
        vr = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=args.workers)
        for _ in range(len(vr)):
            yield vr.next().asnumpy()

    return _run_serial(args, videos, chk, frames_at, read_clip, frames_of)


# ---------------------------------------------------------------- PyAV

def _av_open(av, path):
    c = av.open(path)
    s = c.streams.video[0]
    s.thread_type = "AUTO"
    start = s.start_time or 0

    def pts_of(i):
        from fractions import Fraction
        return start + round(Fraction(i) / s.average_rate / s.time_base)
    return c, s, pts_of


def _av_frames_at(av, path, req, width=None, height=None):
    """Frames at the indices `req` (in request order): sorted, then for each one
    seek (to the keyframe before it) unless it is at most one second ahead of
    the decoder's position, where decoding forward is cheaper; decode forward
    to it; reformat to RGB24 (and the size)."""
    c, s, pts_of = _av_open(av, path)
    out = {}
    it = None
    pos = None                      # pts of the last decoded frame
    one_second = pts_of(FPS) - pts_of(0)
    try:
        for i in sorted(set(req)):
            target = pts_of(i)
            if it is None or pos is None or target < pos or target - pos > one_second:
                c.seek(target, stream=s, backward=True, any_frame=False)
                it = c.decode(s)
            for frame in it:
                pos = frame.pts
                if frame.pts is not None and frame.pts >= target:
                    out[i] = frame.reformat(width=width, height=height, format="rgb24").to_ndarray()
                    break
            else:
                raise RuntimeError(f"{path}: frame {i} not reached")
    finally:
        c.close()
    return [out[i] for i in req]


def w_pyav(args, videos, chk):
    import numpy as np
    import av

    def frames_at(path, req):
        return np.stack(_av_frames_at(av, path, req))

    def read_clip(path, rng):
        c, st, pts_of = _av_open(av, path)
        start = rng.randint(0, st.frames - CLIP_FRAMES)
        c.seek(pts_of(start), stream=st, backward=True, any_frame=False)
        clip = []
        for frame in c.decode(st):
            if frame.pts is not None and frame.pts >= pts_of(start):
                clip.append(frame.reformat(width=OUT, height=OUT, format="rgb24").to_ndarray())
                if len(clip) == CLIP_FRAMES:
                    break
        c.close()
        return np.stack(clip), start

    def frames_of(path):
        c, s, _ = _av_open(av, path)
        for frame in c.decode(s):
            yield frame.to_ndarray(format="rgb24")
        c.close()

    return _run_serial(args, videos, chk, frames_at, read_clip, frames_of)


WORKERS = {"reel": w_reel, "torchcodec": w_torchcodec, "decord": w_decord, "pyav": w_pyav}


def run_one(args, videos):
    """One measurement in this process: wall and CPU time of the workload (CPU of
    this process's threads plus that of child processes reaped meanwhile, i.e.
    DataLoader workers), minus the accuracy check where it can be taken out."""
    import gc
    import resource
    gc.collect()
    chk = Checker()
    cpu0 = time.process_time()
    ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    n, wall, extra = WORKERS[args.worker](args, videos, chk)
    gc.collect()
    ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (time.process_time() - cpu0) + (ch1.ru_utime - ch0.ru_utime) + (ch1.ru_stime - ch0.ru_stime)
    check_cpu = chk.cpu
    seconds = wall if extra.get("check_overlaps") else max(1e-9, wall - chk.seconds)
    return {"frames": n, "wall": wall, "check_s": chk.seconds, "seconds": seconds,
            "cpu": max(1e-9, cpu - check_cpu), "cpu_raw": cpu,
            "checked": chk.checked, "correct": chk.correct, "unreadable": chk.unreadable,
            "wrong": chk.wrong, **extra}


def worker_main(args):
    """Server mode: imports once, says READY, then runs one measurement per
    command line read from stdin ({"workload", "variant", "data"} as JSON),
    answering one RESULT line each, until "quit". The driver keeps one such
    process per tool and workload alive and interleaves the tools' runs."""
    import torch  # noqa: F401  (as in a training process; see above)
    __import__(PEER_MODULE[args.worker])
    build = reel_build()
    print("READY", flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line or line == "quit":
            break
        cmd = json.loads(line)
        a = argparse.Namespace(**vars(args))
        a.workload, a.variant, a.data = cmd["workload"], cmd.get("variant"), cmd["data"]
        videos = read_videos(a.data)[: a.videos or None]
        try:
            res = run_one(a, videos)
        except Exception as e:  # reported, and the process goes on serving
            import traceback
            traceback.print_exc()
            res = {"error": f"{type(e).__name__}: {e}"}
        res["reel_build"] = build
        print("RESULT " + json.dumps(res), flush=True)


def reel_build():
    """A fingerprint of the reel extension this process loaded (path, size,
    mtime): a rebuild during the run would mix two builds in one table."""
    from reel import _reel
    st = os.stat(_reel.__file__)
    return f"{_reel.__file__}:{st.st_size}:{int(st.st_mtime)}"


# ====================================================================== driver side

def tree_pids(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def mem_kb(pid):
    """(RSS, PSS) of one process in kB, from /proc/PID/smaps_rollup."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


class Server:
    """One worker process (`--worker TOOL`) kept alive for the runs of one tool
    (row) on one dataset and workload; its process tree's memory is sampled
    while it runs."""

    def __init__(self, tool, args):
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", tool,
               "--workers", str(args.workers), "--clips", str(args.clips), "--videos", str(args.videos)]
        env = dict(os.environ)
        env.setdefault("PYTHONWARNINGS", "ignore")
        self.tool = tool
        self.err = []
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env, bufsize=1)
        self._t_err = threading.Thread(target=self._drain_err, daemon=True)
        self._t_err.start()

    def _drain_err(self):
        for line in self.proc.stderr:
            self.err.append(line)
            del self.err[:-40]

    def _readline(self, prefix):
        for line in self.proc.stdout:
            if line.startswith(prefix):
                return line[len(prefix):].strip()
        return None

    def ready(self):
        if self._readline("READY") is None:
            self.proc.wait()
            return "exit %s: %s" % (self.proc.returncode, "".join(self.err[-6:]).strip())
        return None

    def run(self, workload, variant, data):
        peak = {"rss": 0, "pss": 0, "procs": 1}
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                pids = tree_pids(self.proc.pid)
                tot_rss = tot_pss = 0
                for p in pids:
                    r, ps = mem_kb(p)
                    tot_rss += r
                    tot_pss += ps
                peak["rss"] = max(peak["rss"], tot_rss)
                peak["pss"] = max(peak["pss"], tot_pss)
                peak["procs"] = max(peak["procs"], len(pids))
                stop.wait(0.05)
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        try:
            self.proc.stdin.write(json.dumps({"workload": workload, "variant": variant, "data": str(data)}) + "\n")
            self.proc.stdin.flush()
            line = self._readline("RESULT ")
        except (BrokenPipeError, OSError):
            line = None
        stop.set()
        th.join()
        if line is None:
            self.proc.wait()
            return {"error": "exit %s: %s" % (self.proc.returncode, "".join(self.err[-6:]).strip())}
        res = json.loads(line)
        if "error" not in res:
            res.update({"peak_rss_kb": peak["rss"], "peak_pss_kb": peak["pss"], "procs": peak["procs"]})
        return res

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ---------------------------------------------------------------- setup

def pip(*a):
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", *a]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, (r.stderr or r.stdout)


PROBE = {
    "reel": "import reel; d = reel.VideoDecoder(P); d.get_frames_at([5]); print(reel.__version__)",
    "torchcodec": ("import torch, torchcodec; from torchcodec.decoders import VideoDecoder; "
                   "from torchcodec.transforms import Resize; "
                   "d = VideoDecoder(P, device='cpu', transforms=[Resize((224, 224))]); d.get_frames_at([5]); "
                   "print(torchcodec.__version__)"),
    "decord": "import decord; vr = decord.VideoReader(P); vr.get_batch([5]).asnumpy(); print(decord.__version__)",
    "pyav": ("import av; c = av.open(P); s = c.streams.video[0]; next(iter(c.decode(s))).to_ndarray(format='rgb24'); "
             "lv = av.library_versions['libavcodec']; print(av.__version__ + ' (its own FFmpeg, libavcodec ' "
             "+ '.'.join(map(str, lv)) + ')')"),
}


def probe(tool, video):
    code = PROBE[tool].replace("P", repr(str(video)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if r.returncode == 0:
        return True, r.stdout.strip().splitlines()[-1]
    return False, short_error(r.stderr)


def short_error(text):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    errs = [l for l in lines if re.match(r"^[\w.]*(Error|Exception)\b", l)]
    # the deepest distinct causes, e.g. "OSError: libnvrtc.so.13: cannot open shared object file"
    uniq = []
    for l in errs:
        if l not in uniq:
            uniq.append(l)
    pick = [l for l in uniq if "cannot open" in l or "undefined symbol" in l] or uniq[-1:] or lines[-1:]
    msg = "; ".join(pick[:2])
    return msg[:300]


def pip_versions(name):
    r = subprocess.run([sys.executable, "-m", "pip", "index", "versions", name], capture_output=True, text=True)
    m = re.search(r"Available versions: (.*)", r.stdout)
    return [v.strip() for v in m.group(1).split(",")] if m else []


def install_peers(tools, video):
    """pip-installs the peers; returns {tool: note} describing what happened."""
    notes = {}
    for tool in ("pyav", "decord"):         # as they come from PyPI
        if tool in tools:
            ok, info = probe(tool, video)
            if not ok:
                rc, err = pip(PEER_PIP[tool])
                notes[tool] = f"pip install {PEER_PIP[tool]}: " + ("ok" if rc == 0 else "failed: " + short_error(err))
            else:
                notes[tool] = "already installed"
    if "torchcodec" in tools:
        r = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
        if r.returncode != 0:
            notes["torchcodec"] = "torch is not installed (pip install torch==2.13.0 for the CPU build); not installing torchcodec"
            return notes
        torch_ver = r.stdout.strip()
        ok, info = probe("torchcodec", video)
        if ok:
            notes["torchcodec"] = f"already installed ({info}), works with torch {torch_ver}"
            return notes
        tried = []
        for v in pip_versions("torchcodec")[:TORCHCODEC_TRIES]:
            rc, err = pip("--no-deps", f"torchcodec=={v}")
            if rc != 0:
                tried.append(f"{v}: pip failed: {short_error(err)}")
                continue
            ok, info = probe("torchcodec", video)
            if ok:
                cuda = any("nvrtc" in t or "cuda" in t for t in tried)
                notes["torchcodec"] = (f"pip install --no-deps torchcodec=={v}: the newest that works with torch "
                                       f"{torch_ver}" + (" (tried first: " + " | ".join(tried) + ")" if tried else "")
                                       + (": those newer wheels link CUDA libraries (libnvrtc, libtorch_cuda) and "
                                          "need a CUDA build of torch" if cuda else ""))
                return notes
            tried.append(f"{v}: {info}")
            log(f"  torchcodec {v} does not work with torch {torch_ver}: {info}")
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "-q", "torchcodec"], capture_output=True)
        notes["torchcodec"] = f"no torchcodec version works with torch {torch_ver}: " + " | ".join(tried)
    return notes


def make_dataset(reel_exe, data, videos, gop):
    man = data / "manifest.csv"
    if man.exists() and sum(1 for _ in open(man)) - 1 >= videos:
        return
    cmd = [str(reel_exe), "synth", "--dataset", str(data), "--videos", str(videos), "--seconds", str(SECONDS),
           "--size", f"{SIZE[0]}x{SIZE[1]}", "--fps", str(FPS), "--gop", str(gop)]
    log("generating: " + " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed:\n{r.stderr}")


def ffmpeg_of_reel():
    r = subprocess.run([sys.executable, "-c", "import reel; print(reel.ffmpeg_versions())"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "?"


# ---------------------------------------------------------------- report

ROWS = {
    # workload: [(row key, tool, variant, label)]; the first reel row is the one ratios use
    "random": [("reel", "reel", None, "reel (`VideoDecoder(path).get_frames_at(idx)`, default threads)"),
               ("reel-threads", "reel", "threads", "reel, {w} Python threads over videos, `threads=1` each"),
               ("torchcodec", "torchcodec", None, "torchcodec (`get_frames_at`, DataLoader {w} workers)"),
               ("decord", "decord", None, "decord (`get_batch`, `num_threads={w}`)"),
               ("pyav", "pyav", None, "PyAV (seek, decode, `to_ndarray(format=\"rgb24\")`)")],
    "loader": [("reel", "reel", None, "reel (`Loader(..., size=224, crop=None, batch_size=32)`)"),
               ("torchcodec", "torchcodec", None, "torchcodec (`clips_at_random_indices` + `Resize`, DataLoader {w} workers)"),
               ("decord", "decord", None, "decord (`VideoReader(width=224, height=224)`, `get_batch`)"),
               ("pyav", "pyav", None, "PyAV (seek, decode, `reformat(224, 224)`)")],
    "seq": [("reel", "reel", None, "reel (`for frame in VideoDecoder(path)`)"),
            ("reel-onecall", "reel", "onecall", "reel, one call per video (`dec[:]`)"),
            ("reel-threads", "reel", "threads", "reel, {w} Python threads over videos, `threads=1` each"),
            ("torchcodec", "torchcodec", None, "torchcodec (`for frame in decoder`, DataLoader {w} workers)"),
            ("decord", "decord", None, "decord (`vr.next()`, `num_threads={w}`)"),
            ("pyav", "pyav", None, "PyAV (`container.decode`, `to_ndarray(format=\"rgb24\")`)")],
}


def summarize(results, gops, tools_ok):
    """{(gop, workload, row): summary} from the per-round results."""
    out = {}
    for gop in gops:
        for wl in WORKLOADS:
            for key, tool, _variant, _label in ROWS[wl]:
                if tool not in tools_ok:
                    continue
                rs = [r for r in results if r["gop"] == gop and r["workload"] == wl and r["row"] == key]
                good = [r for r in rs if "error" not in r]
                s = {"runs": len(rs), "errors": [r["error"] for r in rs if "error" in r]}
                if good:
                    best = max(good, key=lambda r: r["frames"] / r["seconds"])
                    s.update({
                        "fps": best["frames"] / best["seconds"],
                        "fps_median": statistics.median(r["frames"] / r["seconds"] for r in good),
                        "cpu_per_frame": min(r["cpu"] / r["frames"] for r in good),
                        "peak_rss_mb": max(r["peak_rss_kb"] for r in good) / 1024,
                        "peak_pss_mb": max(r["peak_pss_kb"] for r in good) / 1024,
                        "procs": max(r["procs"] for r in good),
                        "checked": sum(r["checked"] for r in good),
                        "correct": sum(r["correct"] for r in good),
                        "unreadable": sum(r["unreadable"] for r in good),
                        "wrong": [w for r in good for w in r["wrong"]][:5],
                        "frames": best["frames"],
                    })
                out[(gop, wl, key)] = s
    return out


def render_tables(summ, gops, tools_ok, workers):
    L = []
    for gop in gops:
        for wl in WORKLOADS:
            if not any(k[0] == gop and k[1] == wl for k in summ):
                continue
            L.append(f"#### {WORKLOAD_TITLE[wl]}, GOP {gop}")
            L.append("")
            L.append("| tool | frames/s | reel ratio | CPU ms/frame | CPU ratio | peak RSS MB | peak PSS MB | accuracy |")
            L.append("|---|---:|---:|---:|---:|---:|---:|---|")
            ref = summ.get((gop, wl, "reel"), {})
            for key, _tool, _variant, label in ROWS[wl]:
                s = summ.get((gop, wl, key))
                if s is None:
                    continue
                name = label.format(w=workers)
                if "fps" not in s:
                    L.append(f"| {name} | failed: {s['errors'][0][:120] if s['errors'] else '?'} | | | | | | |")
                    continue
                ratio = cpu_ratio = "—"
                if "fps" in ref and key != "reel":
                    ratio = f"{ref['fps'] / s['fps']:.2f}"
                    cpu_ratio = f"{s['cpu_per_frame'] / ref['cpu_per_frame']:.2f}"
                acc = f"{100.0 * s['correct'] / s['checked']:.1f}% ({s['correct']}/{s['checked']})" if s["checked"] else "—"
                if s["checked"] and s["correct"] < s["checked"]:
                    acc += f", e.g. asked {s['wrong'][0][0]} got {s['wrong'][0][1]}" if s["wrong"] else ""
                    if s["unreadable"]:
                        acc += f", {s['unreadable']} unreadable"
                L.append(f"| {name} | {fmt_fps(s['fps'], two_decimals_below=10)} | {ratio} | {1000 * s['cpu_per_frame']:.2f} | {cpu_ratio} | "
                         f"{s['peak_rss_mb']:.0f} | {s['peak_pss_mb']:.0f} | {acc} |")
            L.append("")
    return L


def render(summ, meta, args):
    w = args.workers
    L = [SECTION, ""]
    L.append(f"Made by `{meta['command']}` on {meta['date']} in {meta['elapsed']:.0f} s. Machine: {meta['nproc']} cores "
             f"({meta['cpu']}), CPU only, shared with other work: 1-minute load average during the run "
             f"{meta['load']}, so absolute numbers drift; every tool ran on the same videos in the same run, "
             f"interleaved round by round ({args.rounds} rounds, the order rotated each round; each tool in its own "
             "process per workload, started before the rounds), and the ratios are what to read.")
    L.append("")
    L.append("Versions:")
    L.append("")
    for t in ["reel", "torchcodec", "decord", "pyav"]:
        if t in meta["versions"]:
            L.append(f"- {t}: {meta['versions'][t]}")
    L.append(f"- torch {meta['torch']}, Python {meta['python']}, numpy {meta['numpy']}")
    L.append("")
    for title, notes in (("Installation (`--install`):", meta["install"]), ("Skipped:", meta["skipped"])):
        if notes:
            L.append(title)
            L.append("")
            for t, note in notes.items():
                L.append(f"- {t}: {note}")
            L.append("")
    L.append(f"Data: `build/reel synth --dataset build/bench-data/peers-gopG --videos {args.videos} --seconds {SECONDS} "
             f"--size {SIZE[0]}x{SIZE[1]} --fps {FPS} --gop G` for G in {', '.join(map(str, meta['gops']))}: "
             f"{args.videos} H.264 videos of {SECONDS * FPS} frames (2 B-frames; GOP 250 = one keyframe per video), "
             "whose frames carry their own index in a block pattern that survives resizing.")
    L.append("")
    L.append("How each tool is used (the same budget of 2 cores; torch imported in every process, as in training):")
    L.append("")
    L.append("- reel: defaults. `VideoDecoder` uses one FFmpeg thread per core; the Loader its default thread counts "
             "(decode threads = cores, 1 FFmpeg thread per video). `crop=None` makes the Loader resize straight to "
             "224x224 like the peers (its default, short side 256 then a 224 centre crop, would only crop these "
             "340x256 videos). Extra rows, not used for the ratios: \"2 Python threads over videos\", one decoder "
             "with `threads=1` per video and two videos at a time (the GIL is released while decoding), i.e. the "
             "parallelism of a 2-worker DataLoader; and \"one call per video\" (`dec[:]`) against the iterator.")
    L.append(f"- torchcodec: CPU, `seek_mode=\"exact\"`, a `torch.utils.data.DataLoader` with {w} worker processes "
             "(1 FFmpeg thread each, torchcodec's default), a new `VideoDecoder` per item. (b) uses "
             "`torchcodec.samplers.clips_at_random_indices(num_clips=1, num_frames_per_clip=8)` on a decoder with the "
             "decoder-native `torchcodec.transforms.Resize((224, 224))`, collated by the DataLoader into batches of 32; "
             "the indices it asked for are recorded by a `VideoDecoder` subclass whose `get_frames_at` notes them. "
             "(c) checks the frames inside the workers (only counts cross the pipe).")
    L.append(f"- decord: `VideoReader(num_threads={w})` in the main process; (a) asks `get_batch` for the sorted "
             "indices and puts the frames back in the request order (in the request order it seeks back at each "
             "step back, about 3x slower on GOP 250); (b) resizes with decord's own "
             "`VideoReader(width=224, height=224)`, then `get_batch` of the 8 indices; batches stacked and permuted "
             "to [32, 8, 3, 224, 224].")
    L.append("- PyAV: `thread_type=\"AUTO\"`, in the main process; the index is turned into a pts (CFR: "
             "`start_time + i / average_rate / time_base`), `container.seek(pts, backward=True)` lands on the keyframe "
             "before, decoding runs forward to the frame, and `reformat(format=\"rgb24\"[, 224, 224]).to_ndarray()` "
             "converts it. In (a) the wanted frames are visited in order and a seek is skipped when the next one is at "
             "most 1 s ahead of the decoder's position.")
    L.append("")
    L.append(f"Workloads, over the {args.videos} videos: (a) 10 distinct random frames per video (seeded, the same "
             f"requests for every tool), full-size RGB, one decoder per video; (b) {args.clips} clips (the videos "
             f"repeated, {args.clips // BATCH} batches of 32) of 8 consecutive frames from a random start, 224x224, "
             "as [32, 8, 3, 224, 224] uint8 tensors; (c) every frame of every video, in order, full-size RGB.")
    L.append("")
    L.append("Columns: frames/s = frames returned ÷ the wall time of the workload in its process, best of the rounds "
             "(from opening the first video to the last frame, DataLoader worker start-up included; interpreter "
             "start and imports excluded). The accuracy check (reading the embedded index, about 0.1 ms a frame) is "
             "taken out of the time where the tool waits for it, and left in where decoding goes on in the "
             "background meanwhile (reel's Loader and threaded row, torchcodec's DataLoader). reel ratio = reel's "
             "frames/s ÷ the tool's (above 1: reel faster). CPU ms/frame = user + system CPU time of the workload "
             "(every thread of the process, plus its DataLoader workers) less the check's, ÷ frames, best round; "
             "CPU ratio = the tool's ÷ reel's (above 1: reel uses less CPU); on a shared machine it is steadier than "
             "wall time, but it does not show what parallelism gains. Peak RSS / PSS = the largest sum over the "
             "process tree during the workload, sampled every 50 ms, including the interpreter with torch imported "
             "(about 250 MB RSS); RSS counts pages shared between a DataLoader's processes once per process, PSS "
             "shares them out. accuracy = returned frames whose embedded index is the one requested, over every "
             "round.")
    L.append("")
    L += render_tables(summ, meta["gops"], meta["tools_ok"], w)
    if meta.get("notes"):
        L.append("Notes:")
        L.append("")
        for n in meta["notes"]:
            L.append(f"- {n}")
        L.append("")
    L.append("Raw results (every run, JSON lines): `build/bench-data/results-peers.jsonl`.")
    L.append("")
    return "\n".join(L)


def reel_iter_amplification(video):
    """Frames decoded per frame returned when iterating a reel decoder (the
    iterator's calls of 32 frames, as in VideoDecoder.__iter__) and in one call."""
    import reel
    dec = reel.VideoDecoder(video)
    n = len(dec)
    decoded = 0
    for start in range(0, n, 32):
        dec.get_frames_at(range(start, min(n, start + 32)))
        decoded += dec.stats.frames_decoded
    dec.get_frames_at(range(n))
    one = dec.stats.frames_decoded
    dec.close()
    return decoded / n, one / n


def auto_notes(summ, gops, datas):
    notes = []
    for gop in gops:
        s1, s2 = summ.get((gop, "seq", "reel"), {}), summ.get((gop, "seq", "reel-onecall"), {})
        if "fps" not in s1 or "fps" not in s2:
            continue
        it, one = reel_iter_amplification(read_videos(datas[gop])[0][0])
        if it > 1.05 * one or s1["fps"] < 0.8 * s2["fps"]:
            notes.append(f"GOP {gop}, (c): `for frame in dec` ran at {s1['fps'] / s2['fps']:.2f}x the frames/s of one "
                         f"`dec[:]` call (CPU per frame {s1['cpu_per_frame'] / s2['cpu_per_frame']:.2f}x). The iterator "
                         f"asks for 32 frames per call, and each call drains the codec and starts again at the keyframe "
                         f"before its first frame: it decoded {it:.2f} frames per frame returned, against {one:.2f} "
                         "in one call" + (" (with one keyframe per video, every chunk re-decodes the chunks before "
                                          "it)." if it > 1.05 * one else "."))
    return notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--videos", type=int, default=16, help="videos per dataset (default 16)")
    ap.add_argument("--workers", type=int, default=2,
                    help="DataLoader workers for torchcodec, decord num_threads, reel's extra threaded rows (default 2)")
    ap.add_argument("--install", action="store_true", help="pip-install the peers (torchcodec, decord, av) first")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds; best kept (default 2)")
    ap.add_argument("--gops", default="250,16", help="keyframe intervals, a dataset each (default 250,16)")
    ap.add_argument("--tools", default=",".join(TOOLS), help="default: reel,torchcodec,decord,pyav")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="default: random,loader,seq")
    ap.add_argument("--clips", type=int, default=128, help="clips in workload (b) (default 128: 4 batches of 32)")
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--doc", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    ap.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    # worker mode (internal)
    ap.add_argument("--worker", choices=TOOLS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker_main(args)

    t_start = time.perf_counter()
    build = Path(args.build_dir).resolve()
    reel_exe = find_built(build, "reel")
    gops = [int(g) for g in args.gops.split(",")]
    tools = [t for t in args.tools.split(",") if t]
    workloads = [w for w in args.workloads.split(",") if w]
    for t in tools:
        if t not in TOOLS:
            die(f"unknown tool {t!r} (choose from {', '.join(TOOLS)})")
    datas = {}
    for g in gops:
        datas[g] = build / "bench-data" / f"peers-gop{g}"
        make_dataset(reel_exe, datas[g], args.videos, g)
    probe_video = read_videos(datas[gops[0]])[0][0]

    install = install_peers(tools, probe_video) if args.install else {}
    versions, skipped, tools_ok = {}, {}, []
    for t in tools:
        ok, info = probe(t, probe_video)
        if ok:
            versions[t] = info
            tools_ok.append(t)
        else:
            if t == "reel":
                die(f"reel does not work here: {info} (python3 -m pip install --no-build-isolation -e .)")
            skipped[t] = ("not installed (run with --install)" if "No module named" in info else info)
            log(f"skipping {t}: {skipped[t]}")
    versions["reel"] = reel_version() + f" (package {versions.get('reel', '?')}; FFmpeg {ffmpeg_of_reel()})"
    build0 = reel_build()
    if "torchcodec" in versions:
        versions["torchcodec"] += " (on the system's FFmpeg libraries, as reel)"
    if "decord" in versions:
        versions["decord"] += " (its own bundled FFmpeg)"
    log("tools: " + ", ".join(f"{t} {versions[t]}" for t in tools_ok))

    results = []
    sample_load()
    raw = build / "bench-data" / "results-peers.jsonl"
    for gop in gops:
        for wl in workloads:
            rows = [r for r in ROWS[wl] if r[1] in tools_ok]
            # one fresh process per row, started side by side, kept for the rounds
            servers = {key: Server(tool, args) for key, tool, variant, label in rows}
            dead = {key: srv.ready() for key, srv in servers.items()}
            for rnd in range(args.rounds):
                k = rnd % len(rows)
                for key, tool, variant, _label in rows[k:] + rows[:k]:
                    r = {"error": dead[key]} if dead[key] else servers[key].run(wl, variant, datas[gop])
                    sample_load()
                    r.update({"gop": gop, "workload": wl, "row": key, "tool": tool, "variant": variant, "round": rnd})
                    results.append(r)
                    if "error" in r:
                        log(f"GOP {gop} {wl:6} {key:13} round {rnd}: FAILED {r['error']}")
                    else:
                        log(f"GOP {gop} {wl:6} {key:13} round {rnd}: {r['frames'] / r['seconds']:7.1f} frames/s, "
                            f"cpu {1000 * r['cpu'] / r['frames']:.2f} ms/frame, "
                            f"peak RSS {r['peak_rss_kb'] / 1024:.0f} MB, PSS {r['peak_pss_kb'] / 1024:.0f} MB, "
                            f"accuracy {r['correct']}/{r['checked']}")
            for srv in servers.values():
                srv.close()
    raw.parent.mkdir(parents=True, exist_ok=True)
    write_results(raw, results)

    elapsed = time.perf_counter() - t_start
    builds = {r["reel_build"] for r in results if "reel_build" in r} | {build0, reel_build()}
    if len(builds) > 1:
        log("WARNING: the reel extension changed during the run (rebuilt or reinstalled); the results mix builds: "
            + ", ".join(sorted(builds)))
    summ = summarize(results, gops, tools_ok)
    import numpy
    import torch
    meta = {
        "command": command_line("peers.py", args=[a for a in sys.argv[1:] if a != "--no-doc"]),
        "date": datetime.date.today().isoformat(), "elapsed": elapsed, "nproc": os.cpu_count(), "cpu": cpu_model(),
        "load": load_summary(),
        "versions": versions, "install": install, "skipped": skipped, "tools_ok": tools_ok, "gops": gops,
        "torch": torch.__version__, "numpy": numpy.__version__, "python": platform.python_version(),
        "notes": auto_notes(summ, gops, datas),
    }
    if len(builds) > 1:
        meta["notes"].insert(0, "WARNING: the reel extension was rebuilt during this run, so these results mix two "
                                "builds; run again.")
    section = render(summ, meta, args)
    print("\n".join(render_tables(summ, gops, tools_ok, args.workers)))
    if args.no_doc:
        print(section)
    else:
        write_doc(Path(args.doc), SECTION, section)
        log(f"wrote the '{SECTION}' section of {args.doc}")
    log(f"raw results: {raw} ({elapsed:.0f} s in all)")


if __name__ == "__main__":
    main()
