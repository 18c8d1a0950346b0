#!/usr/bin/env python3
"""Frames + audio at the loader, as training runs it (issue 28): reel.Loader
with audio against torch's DataLoader over torchcodec 0.13's VideoDecoder +
AudioDecoder, on the same clips, in the same run.

    python3 bench/run_audio_loader.py [--videos 6] [--repeat 6] [--clips 8] [--frames 16]
                                      [--workers 1 2] [--rounds 3] [--torchcodec DIR] [--no-doc]

The videos are bench/run_audio.py's (320x240 25 fps H.264, 48 kHz stereo AAC
with noise substitution, --seconds 20). The dataset is the --videos files
--repeat times over; each sample is one video and gives --clips clips of
--frames consecutive frames (reel's "random" sampler, seeded; the clips'
frame indices are read from a first reel run and handed to the peer), full
size RGB uint8, with the audio played over each clip at 16 kHz mono.

  reel        Loader(videos, frames_per_clip, clips_per_video, size=(240, 320),
              resize=False, batch_size=1, decode_threads=W, audio={16 kHz mono},
              shuffle=False): a batch is a sample's clips, frames [clips, T, C,
              H, W] and audio [clips, 1, S_max].
  torchcodec  DataLoader(dataset, batch_size=None, num_workers=W): an item
              opens VideoDecoder(path, seek_mode="exact",
              num_ffmpeg_threads=1) and AudioDecoder(path, sample_rate=16000,
              num_channels=1) and returns the same clips' frames (get_frames_at)
              and their audio (get_samples_played_in_range over the frames'
              span) zero-padded into one tensor, as a careful user writes it.
              W = 1 and 2 worker processes (0 would decode in the main process).

Workloads "av" (frames + audio) and "video" (frames alone: the floor the
frames set). Each run is a fresh process, the tools interleaved, the best of
--rounds kept. clips/s is wall time from the loader's creation to its last
batch (worker start included: both pay it each epoch in this shape); clips
per CPU-s counts the process's and its children's CPU time. Writes the "##
Audio at the loader (issue 28)" section of docs/BENCHMARKS.md.
"""
import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (ROOT, command_line, cpu_model, ffmpeg_version, fmt_fps, load_summary,  # noqa: E402
                     log, reel_version, run_json, sample_load, write_doc)
from run_audio import make_videos  # noqa: E402

TITLE = "## Audio at the loader (issue 28)"
RATE = 16000
SEED = 28


def reel_loader(entries, args, workers, audio):
    import reel
    return reel.Loader(entries, frames_per_clip=args.frames, clips_per_video=args.clips, size=(240, 320),
                       resize=False, batch_size=1, decode_threads=workers, shuffle=False, epochs=1, seed=SEED,
                       audio={"sample_rate": RATE, "channels": 1} if audio else None)


def clip_plan(entries, args):
    """The clips reel's sampler gives each sample: [[frame indices] * clips] per sample."""
    plan = [None] * len(entries)
    with reel_loader(entries, args, 1, False) as ld:
        for b in ld:
            plan[b.info[0].sample] = [list(c.frame_indices) for c in b.info]
    return plan


def w_reel(entries, plan, args, workers, audio):
    import numpy as np
    n = 0
    with reel_loader(entries, args, workers, audio) as ld:
        for b in ld:
            assert [list(c.frame_indices) for c in b.info] == plan[b.info[0].sample]
            assert np.asarray(b.frames).shape[:2] == (args.clips, args.frames)
            if audio:
                assert np.asarray(b.audio).shape[:2] == (args.clips, 1)
            n += len(b.info)
    return n


class TorchcodecClips:
    """A map-style dataset: item i is sample i's clips, frames and audio."""

    def __init__(self, entries, plan, audio):
        self.entries, self.plan, self.audio = entries, plan, audio

    def __len__(self):
        return len(self.entries)

    def __getitem__(self, i):
        import torch
        from torchcodec.decoders import AudioDecoder, VideoDecoder
        vd = VideoDecoder(self.entries[i], seek_mode="exact", num_ffmpeg_threads=1)
        ad = AudioDecoder(self.entries[i], sample_rate=RATE, num_channels=1) if self.audio else None
        frames, sounds = [], []
        for idx in self.plan[i]:
            f = vd.get_frames_at(idx)
            frames.append(f.data)
            if ad is not None:
                t0, t1 = float(f.pts_seconds[0]), float(f.pts_seconds[-1] + f.duration_seconds[-1])
                sounds.append(ad.get_samples_played_in_range(t0, t1).data)
        out = {"frames": torch.stack(frames)}
        if sounds:
            a = torch.zeros(len(sounds), 1, max(s.shape[1] for s in sounds))
            for k, s in enumerate(sounds):
                a[k, :, :s.shape[1]] = s
            out["audio"] = a
        return out


def w_torchcodec(entries, plan, args, workers, audio):
    import torchcodec.decoders  # noqa: F401  (imported before the workers fork, as a training script does)
    from torch.utils.data import DataLoader
    n = 0
    for b in DataLoader(TorchcodecClips(entries, plan, audio), batch_size=None, num_workers=workers):
        assert tuple(b["frames"].shape[:2]) == (args.clips, args.frames)
        n += b["frames"].shape[0]
    return n


def worker_main(args):
    if args.torchcodec:
        sys.path.insert(0, args.torchcodec)
    tool, work, workers = args.worker.split("-")
    entries, plan = json.loads(Path(args.plan).read_text())
    fn = w_reel if tool == "reel" else w_torchcodec
    fn(entries[:1], plan[:1], args, 1, True)  # imports outside the clock
    t = time.perf_counter()
    c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    n = fn(entries, plan, args, int(workers), work == "av")
    secs = time.perf_counter() - t
    c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = sum(b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime for a, b in zip(c0, c1))
    print(json.dumps({"n": n, "seconds": secs, "cpu": cpu, "rss_kb": c1[0].ru_maxrss,
                      "children_rss_kb": c1[1].ru_maxrss}))


def run_worker(args, name):
    cmd = [sys.executable, __file__, "--worker", name, "--plan", args.plan, "--clips", str(args.clips),
           "--frames", str(args.frames)]
    if args.torchcodec:
        cmd += ["--torchcodec", args.torchcodec]
    return run_json(cmd, timeout=1800)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--videos", type=int, default=6)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--clips", type=int, default=8)
    ap.add_argument("--frames", type=int, default=16)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torchcodec", default=None)
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--worker", default=None)
    ap.add_argument("--plan", default=str(ROOT / "build" / "bench-data" / "audio-loader-plan.json"))
    args = ap.parse_args()
    if args.worker:
        return worker_main(args)
    ffv = ffmpeg_version("run_audio_loader.py")
    entries = make_videos(args.videos, args.seconds) * args.repeat
    plan = clip_plan(entries, args)
    Path(args.plan).write_text(json.dumps([entries, plan]))
    best = {}
    tools = ["reel", "torchcodec"]
    for rnd in range(args.rounds):
        for w in args.workers:
            for work in ("av", "video"):
                for tool in tools if rnd % 2 == 0 else tools[::-1]:
                    sample_load()
                    r = run_worker(args, f"{tool}-{work}-{w}")
                    log(f"round {rnd} {tool} {work} W={w}: {r}")
                    key = (tool, work, w)
                    if "error" in r:
                        best.setdefault(key, r)
                        continue
                    cps, cpc = r["n"] / r["seconds"], r["n"] / max(r["cpu"], 1e-9)
                    old = best.get(key)
                    if old is None or "error" in old:
                        best[key] = dict(r, clips_per_s=cps, clips_per_cpu_s=cpc)
                    else:  # the best wall round and the best CPU round
                        old["clips_per_s"] = max(old["clips_per_s"], cps)
                        old["clips_per_cpu_s"] = max(old["clips_per_cpu_s"], cpc)
                        old["rss_kb"] = min(old["rss_kb"], r["rss_kb"])
                        old["children_rss_kb"] = min(old["children_rss_kb"], r["children_rss_kb"])

    def cell(tool, work, w, key):
        r = best.get((tool, work, w), {})
        return "error: " + r["error"] if "error" in r else fmt_fps(r[key]) if r else "-"

    def ratio(work, w, key):
        a, b = best.get(("reel", work, w), {}), best.get(("torchcodec", work, w), {})
        return f"{a[key] / b[key]:.2f}x" if key in a and key in b else "-"

    def rss(tool, work, w):
        r = best.get((tool, work, w), {})
        if "rss_kb" not in r:
            return "-"
        kids = f" + {r['children_rss_kb'] / 1024:.0f} a worker" if tool == "torchcodec" and w > 0 else ""
        return f"{r['rss_kb'] / 1024:.0f}{kids}"

    lines = [TITLE, "",
             f"{command_line('run_audio_loader.py', sys.argv[1:])}; reel {reel_version()}, FFmpeg {ffv}, "
             f"{cpu_model()}, {load_summary()}.", "",
             f"{len(entries)} samples ({args.videos} videos of {args.seconds} s, 320x240 25 fps H.264 + 48 kHz "
             f"stereo AAC with noise substitution, {args.repeat} times over), {args.clips} clips of {args.frames} "
             "frames a sample (reel's seeded random sampler; the peer decodes the same frame indices), full size "
             "RGB uint8, the audio over each clip at 16 kHz mono. reel: `reel.Loader(..., decode_threads=W, "
             "audio=...)`, a batch a sample; torchcodec 0.13: `DataLoader(num_workers=W)` over a dataset whose "
             "item opens VideoDecoder + AudioDecoder and returns the sample's clips and their audio "
             f"zero-padded. Best of {args.rounds} rounds, each a fresh process, the tools interleaved.", "",
             "| W | workload | reel clips/s | torchcodec clips/s | ratio | reel clips per CPU-s | "
             "torchcodec clips per CPU-s | ratio | peak RSS MiB reel / torchcodec |",
             "|---|---|---|---|---|---|---|---|---|"]
    for w in args.workers:
        for work, label in (("av", "frames + audio"), ("video", "frames alone")):
            lines.append(f"| {w} | {label} | {cell('reel', work, w, 'clips_per_s')} | "
                         f"{cell('torchcodec', work, w, 'clips_per_s')} | {ratio(work, w, 'clips_per_s')} | "
                         f"{cell('reel', work, w, 'clips_per_cpu_s')} | "
                         f"{cell('torchcodec', work, w, 'clips_per_cpu_s')} | {ratio(work, w, 'clips_per_cpu_s')} |"
                         f" {rss('reel', work, w)} / {rss('torchcodec', work, w)} |")
    lines += ["", "clips/s: wall time from the loader's creation to its last batch; clips per CPU-s: the "
              "process's and its children's CPU time over the same span. Peak RSS: the process's (and, for "
              "the DataLoader, its largest worker's)."]
    section = "\n".join(lines)
    print(section)
    if not args.no_doc:
        write_doc(ROOT / "docs" / "BENCHMARKS.md", TITLE, section)


if __name__ == "__main__":
    sys.exit(main())
