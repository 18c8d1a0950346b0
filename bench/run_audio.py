#!/usr/bin/env python3
"""Video + audio clips (issue 28): reel against torchcodec 0.13, and the memory of a 1-hour file's audio.

    python3 bench/run_audio.py [--videos 6] [--seconds 20] [--clips 8] [--frames 16] [--rounds 3]
                               [--hour] [--torchcodec DIR] [--no-doc]
    python3 bench/run_audio.py --plan | build/bench_audio   (reel's audio per clip, by stage, in C)

1. Makes the clips' videos with the ffmpeg CLI into build/bench-data/audio:
   --videos files of --seconds s, 320x240 at 25 fps (H.264 ultrafast, a
   keyframe every 50 frames) with 48 kHz stereo AAC at 128 kb/s (two tones
   and noise, so the encoder uses noise substitution: reel decodes such AAC
   from a0, or on from the last window).
2. Accuracy: each tool's audio for the clips, in their random order, at
   the stream's rate and channels, against the ffmpeg CLI's (max |diff|).
3. Workloads, on the same clips for both tools (seeded), each in a fresh
   process per round, the tools interleaved and the best round kept:
     av     --clips clips of --frames consecutive frames per video, at random
            starts in random order, one decoder per video: the frames (full
            size RGB uint8) and the audio played while they are shown, at
            16 kHz mono
     audio  the same windows' audio alone
     video  the same clips' frames alone (the floor the video sets for av)
     decode reel only: per video, the audio of the latest clip's last frame
            without a cache: opening and one AAC decode from a0 to there,
            the least exact audio can cost (the floor with video's)
   reel: VideoDecoder(path, threads=1, gop_contexts=1, audio={"sample_rate":
   16000, "channels": 1}), get_frames_at and get_audio_for_frames (its
   audio object keeps a cache of decoded samples, 8 MiB by default: the
   clips' audio decodes about once per video).
   torchcodec: VideoDecoder(path, seek_mode="exact", num_ffmpeg_threads=1)
   and AudioDecoder(path, sample_rate=16000, num_channels=1),
   get_frames_at and get_samples_played_in_range over [first pts, last pts +
   duration) of its frames. One thread each.
4. With --hour: a 1-hour file (96x64 at 10 fps, 48 kHz stereo AAC) and the
   peak RSS of a process that reads 1 s windows of its audio at 12 times
   across it, in random order (each decoded from a0: AAC), against the same
   process opening the file without reading audio; torchcodec's AudioDecoder
   on the same windows.
5. Reports clips/s and the ratio reel / torchcodec, writes the "## Audio
   (issue 28)" section of docs/BENCHMARKS.md and the raw results as JSON
   lines in build/bench-data/results-audio.jsonl.

torchcodec is imported from --torchcodec DIR when given (e.g. a folder made
by `pip install --no-deps --target DIR torchcodec==0.13.*`, so that pip never
touches the installed torch), else from this Python.
"""
import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (ROOT, command_line, cpu_model, ffmpeg_version, fmt_fps, load_summary,  # noqa: E402
                     log, reel_version, run_json, sample_load, write_doc, write_results)

DATA = ROOT / "build" / "bench-data" / "audio"
TITLE = "## Audio (issue 28)"
RATE = 16000


def make_videos(n, seconds):
    DATA.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        p = DATA / f"av{i}_{seconds}s.mp4"
        if not p.exists():
            log(f"making {p} ...")
            tones = f"0.3*sin(2*PI*{300 + 40 * i}*t)+0.1*random(0)|0.2*sin(2*PI*{520 + 30 * i}*t)+0.1*random(1)"
            subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i",
                            f"testsrc2=size=320x240:rate=25:duration={seconds}", "-f", "lavfi", "-i",
                            f"aevalsrc={tones}:s=48000:d={seconds}", "-map", "0:v", "-map", "1:a",
                            "-c:v", "libx264", "-preset", "ultrafast", "-g", "50", "-c:a", "aac", "-b:a", "128k",
                            str(p) + ".tmp.mp4"], check=True)
            os.rename(str(p) + ".tmp.mp4", p)
        out.append(str(p))
    return out


def make_hour():
    p = DATA / "hour.mp4"
    if not p.exists():
        log(f"making {p} (1 hour; a few minutes) ...")
        DATA.mkdir(parents=True, exist_ok=True)
        subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i",
                        "testsrc2=size=96x64:rate=10:duration=3600", "-f", "lavfi", "-i",
                        "aevalsrc=0.3*sin(2*PI*440*t)+0.1*random(0)|0.2*sin(2*PI*550*t):s=48000:d=3600",
                        "-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", "ultrafast", "-g", "100",
                        "-c:a", "aac", "-b:a", "96k", str(p) + ".tmp.mp4"], check=True)
        os.rename(str(p) + ".tmp.mp4", p)
    return str(p)


def plan(videos, clips, frames, num_frames):
    """Per video: the clips' first frames, seeded, in random order."""
    rng = random.Random(28)
    return [[rng.randrange(0, num_frames - frames) for _ in range(clips)] for _ in videos]


# ---------------------------------------------------------------- workers

def w_reel(videos, starts, frames, with_video, with_audio=True):
    import numpy as np
    import reel
    n = 0
    for path, ss in zip(videos, starts):
        with reel.VideoDecoder(path, threads=1, gop_contexts=1, audio={"sample_rate": RATE, "channels": 1}) as dec:
            for s in ss:
                idx = list(range(s, s + frames))
                if with_video:
                    f = dec.get_frames_at(idx)
                    assert f.shape[0] == frames
                if with_audio:
                    a = dec.get_audio_for_frames(idx)
                    assert np.asarray(a.data).shape[1] == a.num_samples > 0
                n += 1
    return n


def w_reel_decode(videos, starts, frames):
    """Per video, one AAC decode from a0 to the end of its latest clip (its
    last frame's audio, cache off): what any exact reading of these clips'
    audio pays."""
    from reel import _reel  # the audio object alone: no video index (av counts that in its frames)
    n = 0
    for path, ss in zip(videos, starts):
        h = _reel.audio_open(path, sample_rate=RATE, channels=1, cache_bytes=0)
        end = max(ss) + frames  # in frames of 1/25 s: the videos are 25 fps from 0
        _reel.audio_samples(h, end - 1, end, 1, 25)
        n += len(ss)
    return n


def w_torchcodec(videos, starts, frames, with_video, with_audio=True):
    from torchcodec.decoders import AudioDecoder, VideoDecoder
    n = 0
    for path, ss in zip(videos, starts):
        vd = VideoDecoder(path, seek_mode="exact", num_ffmpeg_threads=1)
        ad = AudioDecoder(path, sample_rate=RATE, num_channels=1) if with_audio else None
        for s in ss:
            idx = list(range(s, s + frames))
            if with_video:
                f = vd.get_frames_at(idx)
                t0, t1 = float(f.pts_seconds[0]), float(f.pts_seconds[-1] + f.duration_seconds[-1])
            else:  # the same window: the videos are 25 fps from 0
                t0, t1 = s / 25.0, (s + frames) / 25.0
            if ad is not None:
                a = ad.get_samples_played_in_range(t0, t1)
                assert a.data.shape[1] > 0
            n += 1
    return n


def w_accuracy(tool, videos, starts, frames):
    """max |diff| of every clip's audio, at the stream's own rate and
    channels, against the ffmpeg CLI's (aresample=async=1:min_hard_comp=0),
    in the clips' random order."""
    import numpy as np
    worst = 0.0
    for path, ss in zip(videos, starts):
        raw = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:a:0", "-af",
                              "aresample=async=1:min_hard_comp=0", "-f", "f32le", "-"],
                             check=True, capture_output=True).stdout
        ref = np.frombuffer(raw, dtype=np.float32).reshape(-1, 2).T
        if tool == "reel":
            import reel
            dec = reel.VideoDecoder(path, threads=1, gop_contexts=1, audio=True)
        else:
            from torchcodec.decoders import AudioDecoder
            ad = AudioDecoder(path)
        for s in ss:
            if tool == "reel":
                a = dec.get_audio_for_frames(range(s, s + frames))
                got, first = np.asarray(a.data), a.first_sample
            else:
                a = ad.get_samples_played_in_range(s / 25.0, (s + frames) / 25.0)
                got, first = a.data.numpy(), int(round(a.pts_seconds * 48000))
            n = min(got.shape[1], ref.shape[1] - first)
            worst = max(worst, float(np.abs(got[:, :n] - ref[:, first:first + n]).max()))
    return worst


def w_hour(tool, path, read):
    """Opens the 1-hour file; with `read`, 1 s windows at 12 times across it."""
    rng = random.Random(3600)
    times = [rng.uniform(0, 3590) for _ in range(12)]
    t = time.perf_counter()
    if tool == "reel":
        import numpy as np
        import reel
        with reel.VideoDecoder(path, threads=1, gop_contexts=1, audio={"sample_rate": RATE, "channels": 1}) as dec:
            for x in times if read else []:
                a = dec.get_audio_played_in_range(x, x + 1.0)
                assert np.asarray(a.data).shape == (1, RATE)
    else:
        from torchcodec.decoders import AudioDecoder
        ad = AudioDecoder(path, sample_rate=RATE, num_channels=1)
        for x in times if read else []:
            a = ad.get_samples_played_in_range(x, x + 1.0)
            assert a.data.shape[1] > 0
    return len(times) if read else 0, time.perf_counter() - t


def worker_main(args):
    if args.torchcodec:
        sys.path.insert(0, args.torchcodec)
    if args.worker.startswith("acc-"):
        videos = json.loads(args.videos_json)
        starts = plan(videos, args.clips, args.frames, args.seconds * 25)
        print(json.dumps({"max_diff": w_accuracy(args.worker[4:], videos, starts, args.frames)}))
        return
    if args.worker.startswith("hour-"):
        _, tool, read = args.worker.split("-")
        n, secs = w_hour(tool, args.hour_path, read == "read")
    else:
        tool, work = args.worker.split("-")
        videos = json.loads(args.videos_json)
        starts = plan(videos, args.clips, args.frames, args.seconds * 25)
        fn = w_reel if tool == "reel" else w_torchcodec
        fn(videos[:1], [starts[0][:1]], args.frames, True)  # imports and first open outside the clock
        t, c = time.perf_counter(), time.process_time()
        if work == "decode":
            n = w_reel_decode(videos, starts, args.frames)
        else:
            n = fn(videos, starts, args.frames, work != "audio", work != "video")
        secs, cpu = time.perf_counter() - t, time.process_time() - c
    if args.worker.startswith("hour-"):
        cpu = time.process_time()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"n": n, "seconds": secs, "cpu": cpu, "rss_kb": ru.ru_maxrss}))


def run_worker(args, name, extra=()):
    cmd = [sys.executable, __file__, "--worker", name, "--clips", str(args.clips), "--frames", str(args.frames),
           "--seconds", str(args.seconds), *extra]
    if args.torchcodec:
        cmd += ["--torchcodec", args.torchcodec]
    return run_json(cmd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--videos", type=int, default=6)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--clips", type=int, default=8)
    ap.add_argument("--frames", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hour", action="store_true")
    ap.add_argument("--torchcodec", default=None)
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument("--worker", default=None)
    ap.add_argument("--videos-json", default="[]")
    ap.add_argument("--hour-path", default="")
    ap.add_argument("--plan", action="store_true",
                    help="print the clips' plan (a line a video: its path and its clips' first frames) for "
                         "build/bench_audio, and stop")
    args = ap.parse_args()
    if args.worker:
        return worker_main(args)
    if args.plan:
        videos = make_videos(args.videos, args.seconds)
        for path, ss in zip(videos, plan(videos, args.clips, args.frames, args.seconds * 25)):
            print(path, *ss)
        return 0
    ffv = ffmpeg_version("run_audio.py")
    videos = make_videos(args.videos, args.seconds)
    vj = json.dumps(videos)
    tools = ["reel", "torchcodec"]
    best = {}
    for rnd in range(args.rounds):
        for work in ("av", "audio", "video", "decode"):
            order = ["reel"] if work == "decode" else tools if rnd % 2 == 0 else tools[::-1]
            for tool in order:
                sample_load()
                r = run_worker(args, f"{tool}-{work}", ["--videos-json", vj])
                log(f"round {rnd} {tool} {work}: {r}")
                if "error" in r:
                    best[(tool, work)] = r
                    continue
                cps, cpc = r["n"] / r["seconds"], r["n"] / max(r["cpu"], 1e-9)
                old = best.get((tool, work))
                if old is None or "error" in old:
                    best[(tool, work)] = dict(r, clips_per_s=cps, clips_per_cpu_s=cpc)
                else:  # the best wall round and the best CPU round
                    old["clips_per_s"] = max(old["clips_per_s"], cps)
                    old["clips_per_cpu_s"] = max(old["clips_per_cpu_s"], cpc)
    acc = {tool: run_worker(args, f"acc-{tool}", ["--videos-json", vj]) for tool in tools}
    log(f"accuracy: {acc}")
    hour = {}
    if args.hour:
        hp = make_hour()
        for tool in tools:
            for read in ("open", "read"):
                hour[(tool, read)] = run_worker(args, f"hour-{tool}-{read}", ["--hour-path", hp])
                log(f"hour {tool} {read}: {hour[(tool, read)]}")
    results = [dict(tool=t, workload=w, **v) for (t, w), v in best.items()]
    results += [dict(tool=t, workload=f"hour-{r}", **v) for (t, r), v in hour.items()]
    results += [dict(tool=t, workload="accuracy", **v) for t, v in acc.items()]
    write_results(DATA.parent / "results-audio.jsonl", results,
                  meta=dict(reel=reel_version(), ffmpeg=ffv, cpu=cpu_model(), args=vars(args)))

    def cell(tool, work, key):
        r = best.get((tool, work), {})
        return "error: " + r["error"] if "error" in r else fmt_fps(r[key]) if r else "-"

    def ratio(work, key):
        a, b = best.get(("reel", work), {}), best.get(("torchcodec", work), {})
        return f"{a[key] / b[key]:.2f}x" if key in a and key in b else "-"

    def fmt_acc(r):
        return f"{r['max_diff']:.3g}" if "max_diff" in r else "error: " + r.get("error", "?")

    def floor():
        """The most frames + audio could reach were reel's audio free: its
        frames alone against torchcodec's frames + audio."""
        v, av = best.get(("reel", "video"), {}), best.get(("torchcodec", "av"), {})
        d = best.get(("reel", "decode"), {})
        if any("clips_per_cpu_s" not in r for r in (v, av, d)):
            return "Floor: -"

        def most(key):  # torchcodec's frames + audio time over reel's frames alone plus the decode alone
            return (1 / av[key]) / (1 / v[key] + 1 / d[key])
        return (f"Floor: reel's frames alone against torchcodec's frames + audio, the most frames + audio could "
                f"reach were reel's audio free: {v['clips_per_s'] / av['clips_per_s']:.2f}x wall, "
                f"{v['clips_per_cpu_s'] / av['clips_per_cpu_s']:.2f}x CPU. Exact audio costs at least one AAC "
                f"decode from a0 to each video's latest clip (the noise substitution) and the open: "
                f"{1e3 / d['clips_per_cpu_s']:.2f} ms CPU a clip here (reel's whole audio: "
                f"{1e3 / best.get(('reel', 'audio'), d)['clips_per_cpu_s']:.2f} ms with the video's open, the "
                f"rest the mono mix and the 16 kHz resample of what is decoded, and copies); with the frames "
                f"alone and that decode only, frames + audio would reach {most('clips_per_s'):.2f}x wall, "
                f"{most('clips_per_cpu_s'):.2f}x CPU.")

    def row(label, work):
        return (f"| {label} | {cell('reel', work, 'clips_per_s')} | {cell('torchcodec', work, 'clips_per_s')} | "
                f"{ratio(work, 'clips_per_s')} | {cell('reel', work, 'clips_per_cpu_s')} | "
                f"{cell('torchcodec', work, 'clips_per_cpu_s')} | {ratio(work, 'clips_per_cpu_s')} |")

    lines = [TITLE, "",
             f"{command_line('run_audio.py', sys.argv[1:])}; reel {reel_version()}, FFmpeg {ffv}, "
             f"{cpu_model()}, {load_summary()}.",
             "",
             f"{args.videos} videos of {args.seconds} s (320x240 25 fps H.264, 48 kHz stereo AAC 128 kb/s), "
             f"{args.clips} clips of {args.frames} frames per video at seeded random starts in random order, "
             f"one decoder per video, one thread per tool, the audio at 16 kHz mono; the best of "
             f"{args.rounds} rounds (each a fresh process, the tools interleaved).",
             "",
             "| workload | reel clips/s | torchcodec 0.13 clips/s | ratio | reel clips per CPU-s | "
             "torchcodec clips per CPU-s | ratio |",
             "|---|---|---|---|---|---|---|",
             row("frames + audio", "av"), row("audio alone", "audio"), row("frames alone", "video"), "",
             "clips/s: wall time of the timed loop (imports and a first open excluded); clips per CPU-s: the "
             "process's CPU time over the same loop, the steadier figure on a shared machine.", "",
             floor(), "",
             "Accuracy, the same clips in the same order at the stream's rate and channels against the ffmpeg "
             "CLI's `-af aresample=async=1:min_hard_comp=0` output (max |diff|): reel "
             f"{fmt_acc(acc['reel'])}, torchcodec {fmt_acc(acc['torchcodec'])}. These AAC files use noise "
             "substitution, whose random generator no seek resets: reel decodes from a0 (or on from the last "
             "window, or from its cache of decoded samples) where torchcodec seeks back.", ""]
    if hour:
        lines += ["A 1-hour file (96x64 10 fps, 48 kHz stereo AAC 96 kb/s): peak RSS of a process that opens it, "
                  "and of one that also reads 12 windows of 1 s at random times across it, in random order "
                  "(16 kHz mono; each decoded from a0, the AAC rule; reel's cache keeps at most 8 MiB of them):",
                  "",
                  "| tool | open only | open + 12 windows | s per window |", "|---|---|---|---|"]
        for tool in tools:
            o, r = hour.get((tool, "open"), {}), hour.get((tool, "read"), {})
            if "rss_kb" in o and "rss_kb" in r:
                lines.append(f"| {tool} | {o['rss_kb'] / 1024:.0f} MiB | {r['rss_kb'] / 1024:.0f} MiB | "
                             f"{r['seconds'] / max(1, r['n']):.2f} |")
            else:
                lines.append(f"| {tool} | {o.get('error', '-')} | {r.get('error', '-')} | - |")
        lines.append("")
    section = "\n".join(lines)
    print(section)
    if not args.no_doc:
        write_doc(ROOT / "docs" / "BENCHMARKS.md", TITLE, section)


if __name__ == "__main__":
    sys.exit(main())
