#!/usr/bin/env python3
"""Decoder benchmark (issue 2, section 8): reel against the ffmpeg CLI.

    make bench                      # = python3 bench/run_decoder.py
    python3 bench/run_decoder.py [--repeat 3] [--quick] [--no-doc] [--wait-quiet S] ...

About 7 minutes of measuring on 2 idle cores, plus about a minute to encode
the clips the first time.

What it does:
  1. Generates six H.264 clips (250 frames = 10 s at 25 fps, 2 B-frames,
     keyframes exactly every GOP frames) at 340x256, 1280x720 and 1920x1080,
     each with GOP 250 and GOP 16, into build/bench-data (kept and reused;
     the name holds every parameter). Uses `build/bench_decoder synth`
     (src/synth), encoding in parallel on every core.
  2. For each clip and 1 and 2 decoder threads, interleaving the tools
     round by round (the machine is shared and noisy; ratios from the
     same run are what counts), best of at least --repeat rounds (short
     measurements get more, up to 10), wall and CPU time:
       seq     ffmpeg -threads N -i F -f null -               (full decode)
               bench_decoder --mode seq: decode only, RGB24 native, RGB24 224x224
       random  10 distinct frames drawn with a fixed seed
       even    10 frames at the centres of 10 equal segments
               ffmpeg: the naive way, a full decode through
                 -vf select='eq(n,a)+eq(n,b)+...' -fps_mode passthrough -f null -
               the decode floor: frames that must be decoded (from each
                 wanted frame's preceding keyframe up to it, spans merged,
                 counted from the known GOP) / ffmpeg's sequential frames/s
               bench_decoder --frames LIST: decode only and RGB24 native
       chunked reel_decoder_get_range 16 frames per call over the whole
               clip (1 thread): the cost of reading a video sequentially
               in several calls
  3. Writes the "## Decoder (issue 2)" section of docs/BENCHMARKS.md (the
     rest of the file is left alone) and the raw results as JSON lines in
     build/bench-data/results-decoder.jsonl.

Times: ffmpeg's are its own `-benchmark` rtime (from the start of transcoding
to the end: decoder setup + decode, without process start and input probing);
reel's are the decode call alone, with the open (container parse, frame
table, codec setup) timed separately. Both exclude process start.
"""
import argparse
import datetime
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import (ROOT, command_line, cpu_model, die, ffmpeg_bench, ffmpeg_version, find_built, fmt_fps,
                     load_summary, log, reel_version, sample_load, wait_quiet, write_doc, write_results)

SECTION = "## Decoder (issue 2)"

SIZES = [(340, 256), (1280, 720), (1920, 1080)]
GOPS = [250, 16]
THREADS = [1, 2]
NUM_FRAMES = 250
FPS = 25
BFRAMES = 2
COUNT = 10
SEED = 2024
CHUNK = 16                        # frames per call in the chunked sequential read
CHUNK_SIZES = [(340, 256), (1280, 720), (1920, 1080)]


# ---------------------------------------------------------------- tools

def find_bench_binary(build_dir):
    return find_built(build_dir, "bench_decoder", target="bench_decoder",
                      missing="run `make` (or `make bench`) at the repository root first; "
                      "CMakeLists.txt builds every bench/*.c into the build directory")


# ---------------------------------------------------------------- clips

def clip_path(data_dir, w, h, gop):
    return data_dir / f"h264_{w}x{h}_gop{gop}_b{BFRAMES}_{NUM_FRAMES}f_{FPS}fps.mp4"


def make_clips(exe, data_dir, sizes, gops, jobs):
    data_dir.mkdir(parents=True, exist_ok=True)
    todo = []
    for (w, h) in sizes:
        for g in gops:
            p = clip_path(data_dir, w, h, g)
            if not p.exists() or p.stat().st_size == 0:
                todo.append((w, h, g, p))
    # biggest first, so the two 1080p encodes run side by side
    todo.sort(key=lambda t: -t[0] * t[1])

    def one(item):
        w, h, g, p = item
        tmp = p.with_name(p.stem + ".tmp.mp4")
        cmd = [str(exe), "synth", str(tmp), "--codec", "h264", "--size", f"{w}x{h}",
               "--frames", str(NUM_FRAMES), "--fps", str(FPS), "--gop", str(g), "--bframes", str(BFRAMES)]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr}")
        os.replace(tmp, p)
        return p, time.perf_counter() - t0

    if todo:
        log(f"generating {len(todo)} clip(s) in {data_dir} ({jobs} at a time) ...")
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for p, dt in pool.map(one, todo):
                log(f"  {p.name}: {dt:.1f} s")


# ---------------------------------------------------------------- frame sets

def frame_sets(n, count, seed):
    rnd = sorted(random.Random(seed).sample(range(n), count))
    even = [(2 * i + 1) * n // (2 * count) for i in range(count)]
    return {"random": rnd, "even": even}


def floor_frames(frames, gop):
    """Frames a decoder must decode: from each wanted frame's preceding
    keyframe up to it (presentation order), spans merged."""
    spans = sorted(((f // gop) * gop, f) for f in frames)
    total, cur_s, cur_e = 0, None, None
    for s, e in spans:
        if cur_e is not None and s <= cur_e + 1:
            cur_e = max(cur_e, e)
        else:
            if cur_e is not None:
                total += cur_e - cur_s + 1
            cur_s, cur_e = s, e
    if cur_e is not None:
        total += cur_e - cur_s + 1
    return total


# ---------------------------------------------------------------- runners

def run_ffmpeg(path, threads, frames=None):
    cmd = ["ffmpeg", "-hide_banner", "-nostdin", "-nostats", "-benchmark", "-threads", str(threads), "-i", str(path)]
    if frames is not None:
        expr = "+".join(f"eq(n\\,{f})" for f in frames)
        cmd += ["-vf", f"select='{expr}'", "-fps_mode", "passthrough"]
    cmd += ["-f", "null", "-"]
    r = ffmpeg_bench(cmd)
    want = NUM_FRAMES if frames is None else len(frames)
    if r["out"] != want:
        die(f"{' '.join(cmd)} produced {r['out']} frames, expected {want}")
    return {"rtime": r["rtime"], "cpu": r["cpu"], "wall": r["wall"], "frames_out": r["out"], "cmd": cmd}


def run_reel(exe, path, threads, mode, frames=None, output="rgb", size=None, chunk=0):
    cmd = [str(exe), str(path), "--threads", str(threads), "--mode", mode, "--repeat", "1", "--output", output]
    if chunk:
        cmd += ["--chunk", str(chunk)]
    if frames is not None:
        cmd += ["--frames", ",".join(map(str, frames))]
    if size:
        cmd += ["--size", size]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed (status {r.returncode}):\n{r.stderr[-2000:]}")
    d = json.loads(r.stdout.strip().splitlines()[-1])
    if d.get("verified") is False:
        die(f"{' '.join(cmd)}: wrong frames returned")
    d["cmd"] = cmd
    return d


# Short measurements get more rounds (each round runs every tool once, so
# the tools stay interleaved and get the same number of tries).
ROUND_BUDGET_S = 3.0
MAX_ROUNDS = 10


def rounds(fn, repeat):
    sample_load()
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    n = max(repeat, min(MAX_ROUNDS, int(ROUND_BUDGET_S / max(first, 1e-3)))) if repeat > 1 else 1
    for _ in range(n - 1):
        sample_load()
        fn()
    return n


def best(rows, key):
    return min(r[key] for r in rows)


def med(rows, key):
    return statistics.median(r[key] for r in rows)


# ---------------------------------------------------------------- the run

def bench_clip(exe, path, w, h, gop, threads, sets, repeat, results, chunk=0):
    tag = f"{w}x{h} gop{gop} t{threads}"
    # sequential
    ff, rn, rr, r224 = [], [], [], []

    def seq_round():
        ff.append(run_ffmpeg(path, threads))
        rn.append(run_reel(exe, path, threads, "seq", output="none"))
        rr.append(run_reel(exe, path, threads, "seq", output="rgb"))
        r224.append(run_reel(exe, path, threads, "seq", output="rgb", size="224x224"))
    rounds(seq_round, repeat)
    ff_fps = NUM_FRAMES / best(ff, "rtime")
    row = {
        "clip": f"{w}x{h}", "w": w, "h": h, "gop": gop, "threads": threads, "workload": "seq",
        "frames": NUM_FRAMES,
        "ffmpeg_s": best(ff, "rtime"), "ffmpeg_s_median": med(ff, "rtime"), "ffmpeg_cpu_s": best(ff, "cpu"),
        "ffmpeg_wall_s": best(ff, "wall"), "ffmpeg_fps": ff_fps,
        "reel_none_s": best(rn, "decode_s_best"), "reel_none_s_median": med(rn, "decode_s_best"),
        "reel_none_cpu_s": best(rn, "decode_cpu_s_best"),
        "reel_rgb_s": best(rr, "decode_s_best"), "reel_224_s": best(r224, "decode_s_best"),
        "reel_open_s": best(rn + rr + r224, "open_s_best"),
        "frames_decoded": rn[-1]["frames_decoded"], "amplification": rn[-1]["amplification"],
        "seeks": rn[-1]["seeks"],
    }
    for k in ("none", "rgb", "224"):
        row[f"reel_{k}_fps"] = NUM_FRAMES / row[f"reel_{k}_s"]
    results.append(row)
    log(f"  {tag} seq: ffmpeg {ff_fps:.0f} fps, reel {row['reel_none_fps']:.0f} fps decode only, "
        f"{row['reel_rgb_fps']:.0f} fps RGB24")

    if chunk:
        rc = []
        rounds(lambda: rc.append(run_reel(exe, path, threads, "seq", output="rgb", chunk=chunk)), min(repeat, 2))
        c = {
            "clip": f"{w}x{h}", "w": w, "h": h, "gop": gop, "threads": threads, "workload": "seq-chunked",
            "chunk": chunk, "frames": NUM_FRAMES,
            "reel_rgb_s": best(rc, "decode_s_best"), "reel_rgb_cpu_s": best(rc, "decode_cpu_s_best"),
            "reel_one_call_rgb_s": row["reel_rgb_s"],
            "frames_decoded": rc[-1]["frames_decoded"], "amplification": rc[-1]["amplification"],
            "seeks": rc[-1]["seeks"], "calls": rc[-1]["calls"],
        }
        c["reel_rgb_fps"] = NUM_FRAMES / c["reel_rgb_s"]
        results.append(c)
        log(f"  {tag} seq in get_range chunks of {chunk}: {c['reel_rgb_fps']:.0f} fps RGB24, "
            f"amplification {c['amplification']:.2f}, {c['seeks']} seeks")

    for wl, frames in sets.items():
        fs, rn, rr = [], [], []

        def ra_round():
            fs.append(run_ffmpeg(path, threads, frames))
            rn.append(run_reel(exe, path, threads, wl, frames=frames, output="none"))
            rr.append(run_reel(exe, path, threads, wl, frames=frames, output="rgb"))
        rounds(ra_round, repeat)
        k = len(frames)
        fl = floor_frames(frames, gop)
        floor_s = fl / ff_fps
        r = {
            "clip": f"{w}x{h}", "w": w, "h": h, "gop": gop, "threads": threads, "workload": wl,
            "frames": frames, "n": k,
            "ffmpeg_s": best(fs, "rtime"), "ffmpeg_s_median": med(fs, "rtime"), "ffmpeg_cpu_s": best(fs, "cpu"),
            "ffmpeg_wall_s": best(fs, "wall"), "ffmpeg_fps": k / best(fs, "rtime"),
            "floor_frames": fl, "floor_s": floor_s, "floor_fps": k / floor_s,
            "floor_cpu_s": fl * row["ffmpeg_cpu_s"] / NUM_FRAMES,
            "reel_none_s": best(rn, "decode_s_best"), "reel_none_s_median": med(rn, "decode_s_best"),
            "reel_none_cpu_s": best(rn, "decode_cpu_s_best"),
            "reel_rgb_s": best(rr, "decode_s_best"),
            "reel_open_s": best(rn + rr, "open_s_best"),
            "frames_decoded": rn[-1]["frames_decoded"], "frames_skipped": rn[-1]["frames_skipped"],
            "amplification": rn[-1]["amplification"], "seeks": rn[-1]["seeks"],
            "verified": all(x.get("verified") for x in rr),
        }
        r["reel_none_fps"] = k / r["reel_none_s"]
        r["reel_rgb_fps"] = k / r["reel_rgb_s"]
        results.append(r)
        log(f"  {tag} {wl}: ffmpeg select {r['ffmpeg_fps']:.1f} fps, floor {r['floor_fps']:.1f} fps "
            f"({fl} frames), reel {r['reel_none_fps']:.1f} fps ({r['frames_decoded']} decoded, "
            f"{r['seeks']} seeks)")


# ---------------------------------------------------------------- the report

def fmt_ratio(x):
    return f"{x:.2f}"


def render(results, meta):
    seq = [r for r in results if r["workload"] == "seq"]
    chunked = [r for r in results if r["workload"] == "seq-chunked"]
    ra = [r for r in results if r["workload"] in ("random", "even")]
    L = []
    L.append(SECTION)
    L.append("")
    extra = []
    if meta.get("encode_s", 0) >= 1:
        extra.append(f"{meta['encode_s']:.0f} s encoding the clips")
    if meta.get("wait_s", 0) >= 1:
        extra.append(f"{meta['wait_s']:.0f} s waiting for a quieter machine")
    L.append(f"Made by `{meta['command']}` on {meta['date']}: {meta['elapsed']:.0f} s of measuring"
             + (f" (plus {' and '.join(extra)})" if extra else "") + ". "
             f"Machine: {meta['nproc']} cores ({meta['cpu']}), shared with other work, so "
             f"absolute numbers drift from run to run; the ratios compare tools measured "
             f"side by side in the same run (interleaved, best of at least {meta['repeat']} rounds). "
             f"1-minute load average during the run: {meta['load']} (above {meta['nproc']}: the "
             f"benchmark shared the cores; wall times then overstate both tools' times and only the "
             f"ratios and CPU ratios are meaningful"
             + ("; and a second decoder thread seldom finds an idle core, so the threads = 2 rows say "
                "little about thread scaling" if load_median(meta) >= meta["nproc"] else "")
             + "). "
             f"FFmpeg {meta['ffmpeg']}; reel {meta['reel']}.")
    L.append("")
    L.append(f"Clips: H.264 (libx264 veryfast via `bench_decoder synth`, i.e. src/synth), "
             f"{NUM_FRAMES} frames at {FPS} fps (10 s), {BFRAMES} B-frames (pyramid), keyframes exactly "
             f"every GOP frames, closed GOPs, in .mp4. The synthetic content compresses well "
             f"(about {meta['bitrate_1080']:.1f} Mbit/s at 1080p), so decoding is faster than on typical "
             f"camera footage; the comparisons are what matter.")
    L.append("")
    L.append("Times: ffmpeg's are its `-benchmark` rtime (decoder setup and decode, without process "
             "start and input probing); reel's are the decode call alone (the open - container "
             "parse, frame table, codec setup - is listed separately). "
             "Ratios are reel ÷ the other (above 1: reel faster) and use reel's decode-only time, "
             "the same work as `-f null`; the RGB24 columns add the colour conversion a user gets.")
    L.append("")
    L.append("### Sequential decode (all 250 frames)")
    L.append("")
    L.append("`ffmpeg -threads N -i F -f null -` against one `reel_decoder_decode` call over every "
             "frame (RGB24: each frame converted into one reused buffer; 224²: fused resize).")
    L.append("")
    L.append("| clip | GOP | threads | ffmpeg fps | reel fps (decode only) | ratio | CPU ratio "
             "| reel fps (RGB24) | reel fps (RGB24 224²) | reel open ms | amplification |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in seq:
        L.append(f"| {r['clip']} | {r['gop']} | {r['threads']} | {fmt_fps(r['ffmpeg_fps'])} | "
                 f"{fmt_fps(r['reel_none_fps'])} | {fmt_ratio(r['reel_none_fps'] / r['ffmpeg_fps'])} | "
                 f"{fmt_ratio(r['ffmpeg_cpu_s'] / r['reel_none_cpu_s']) if r['reel_none_cpu_s'] > 0 else '-'} | "
                 f"{fmt_fps(r['reel_rgb_fps'])} | {fmt_fps(r['reel_224_fps'])} | "
                 f"{r['reel_open_s'] * 1000:.1f} | {r['amplification']:.2f} |")
    L.append("")
    L.append("CPU ratio = ffmpeg's CPU seconds ÷ reel's for the same work (above 1: reel uses less "
             "CPU); it is much steadier than wall time on a busy machine, but it does not show what "
             "a second thread gains.")
    if chunked:
        L.append("")
        L.append(f"Reading a whole video in consecutive calls instead of one: `reel_decoder_get_range(i, i+{CHUNK})` "
                 f"for i = 0, {CHUNK}, 32, ... (RGB24), against the one-call RGB24 rate above"
                 " (1 thread):")
        L.append("")
        L.append("| clip | GOP | threads | reel fps, one call | reel fps, 16 per call | ratio | amplification | seeks |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in chunked:
            one = NUM_FRAMES / r["reel_one_call_rgb_s"]
            L.append(f"| {r['clip']} | {r['gop']} | {r['threads']} | {fmt_fps(one)} | {fmt_fps(r['reel_rgb_fps'])} | "
                     f"{fmt_ratio(r['reel_rgb_fps'] / one)} | {r['amplification']:.2f} | {r['seeks']} |")
        L.append("")
        worst = max(r["amplification"] for r in chunked)
        if worst <= 1.05:
            L.append("The decoder stays warm between calls (a call feeds the codec only what reordering "
                     "needs and keeps the frames that come out past its last wanted one), so the next "
                     "call for the following frames goes on where the last one stopped: each frame is "
                     "decoded once, with one seek in all. The ratio is the cost of 16 calls instead of "
                     "one.")
        else:
            L.append(f"Amplification up to {worst:.2f}: consecutive calls re-decode frames, i.e. a call "
                     "does not go on where the previous one stopped but restarts from the keyframe "
                     "before its first frame (with GOP 250 the k-th call re-decodes the k-1 chunks "
                     "before it).")
    L.append("")
    L.append(f"### Random access ({COUNT} frames per video)")
    L.append("")
    L.append(f"random: {COUNT} distinct frames drawn with seed {SEED}: {meta['sets']['random']}. "
             f"even: the centres of {COUNT} equal segments: {meta['sets']['even']}. "
             "fps = frames returned per second. reel: one `reel_decoder_get_frames` call "
             "(RGB24) or one `reel_decoder_decode` call (decode only). "
             "ffmpeg select: the naive way, a full decode through "
             "`-vf select='eq(n\\,a)+...' -fps_mode passthrough -f null -`. "
             "floor: the frames that must be decoded (from each wanted frame's preceding keyframe up to "
             "it, spans merged, counted from the GOP) at ffmpeg's sequential speed with the same "
             "threads, i.e. a perfect seek-and-decode with no seek, flush or restart cost. "
             "reel can decode fewer frames than the floor: it skips non-reference B-frames that no "
             "wanted frame needs.")
    L.append("")
    L.append("| clip | GOP | threads | workload | reel fps (decode only) | reel fps (RGB24) | ffmpeg select fps "
             "| ratio | floor fps | ratio | CPU ratio to floor | frames decoded: reel / floor | amplification | seeks |")
    L.append("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in ra:
        L.append(f"| {r['clip']} | {r['gop']} | {r['threads']} | {r['workload']} | "
                 f"{fmt_fps(r['reel_none_fps'])} | {fmt_fps(r['reel_rgb_fps'])} | {fmt_fps(r['ffmpeg_fps'])} | "
                 f"{fmt_ratio(r['reel_none_fps'] / r['ffmpeg_fps'])} | {fmt_fps(r['floor_fps'])} | "
                 f"{fmt_ratio(r['reel_none_fps'] / r['floor_fps'])} | "
                 f"{fmt_ratio(r['floor_cpu_s'] / r['reel_none_cpu_s']) if r['reel_none_cpu_s'] > 0 else '-'} | "
                 f"{r['frames_decoded']} / {r['floor_frames']} | {r['amplification']:.1f} | {r['seeks']} |")
    L.append("")
    L.append("CPU ratio to floor = (floor frames × ffmpeg's sequential CPU seconds per frame at the same "
             "threads) ÷ reel's CPU seconds. amplification = frames decoded ÷ frames returned (reel's "
             "`reel_decode_stats`); seeks = demuxer seeks in the call (a fresh decoder seeks once, to "
             "the start). The floor counts every frame at the average cost of a frame, while reel's "
             "decoded frames are the expensive ones: each seek restarts at an I-frame, and the frames "
             "it skips are the cheapest (non-reference B-frames); so fewer frames decoded than the "
             "floor does not mean proportionally less time.")
    slow = [r for r in ra if r["reel_none_fps"] < r["floor_fps"]]
    slow_seq = [r for r in seq if r["reel_none_fps"] < 0.9 * r["ffmpeg_fps"]]
    L.append("")
    L.append("Rows where reel's wall time is slower than the floor (or, sequentially, more than 10% "
             "slower than ffmpeg) in this run:")
    L.append("")
    if not slow and not slow_seq:
        L.append("- none.")
    for r in slow_seq:
        L.append(f"- {r['clip']} GOP {r['gop']}, {r['threads']} thread(s), seq: reel "
                 f"{fmt_fps(r['reel_none_fps'])} fps against ffmpeg {fmt_fps(r['ffmpeg_fps'])} fps "
                 f"(CPU s: reel {r['reel_none_cpu_s']:.2f}, ffmpeg {r['ffmpeg_cpu_s']:.2f}; "
                 f"median wall s: reel {r['reel_none_s_median']:.2f}, ffmpeg {r['ffmpeg_s_median']:.2f}).")
    for r in slow:
        per_seek = (r["reel_none_s"] - r["frames_decoded"] / reel_seq_fps(results, r)) / max(r["seeks"], 1)
        L.append(f"- {r['clip']} GOP {r['gop']}, {r['threads']} thread(s), {r['workload']}: "
                 f"{r['reel_none_s'] * 1000:.1f} ms against a floor of {r['floor_s'] * 1000:.1f} ms; "
                 f"{r['frames_decoded']} frames decoded (floor {r['floor_frames']}), {r['seeks']} seeks: "
                 f"{per_seek * 1000:+.1f} ms per seek beyond decoding as many frames at reel's own "
                 f"sequential rate; CPU ratio to floor {r['floor_cpu_s'] / r['reel_none_cpu_s']:.2f}"
                 f"{' (so probably noise: reel did less work than the floor)' if r['floor_cpu_s'] > r['reel_none_cpu_s'] else ''}.")
    L.append("")
    L.append("Raw results (every field, JSON lines): `build/bench-data/results-decoder.jsonl`.")
    L.append("")
    return "\n".join(L)


def reel_seq_fps(results, r):
    """reel's sequential decode-only fps for the row's clip, GOP and threads."""
    for s in results:
        if s["workload"] == "seq" and s["clip"] == r["clip"] and s["gop"] == r["gop"] and s["threads"] == r["threads"]:
            return s["reel_none_fps"]
    return float("inf")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--data-dir", default=None, help="clips and results (default BUILD/bench-data)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds per measurement at least (short ones get up to 10), best kept (default 3)")
    ap.add_argument("--quick", action="store_true", help="340x256 only, 1 repeat, no doc update (a smoke test)")
    ap.add_argument("--sizes", default=None, help="e.g. 340x256,1280x720 (default: all three)")
    ap.add_argument("--threads", default=None, help="e.g. 1,2 (default 1,2)")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    ap.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    ap.add_argument("--render", metavar="FILE",
                    help="only re-render the doc section from a saved results file (results-decoder-*.jsonl)")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                    help="before measuring, wait up to S seconds for the load average to drop below the core count")
    args = ap.parse_args()

    if args.render:
        render_saved(args.render, args)
        return
    build_dir = Path(args.build_dir).resolve()
    data_dir = Path(args.data_dir).resolve() if args.data_dir else build_dir / "bench-data"
    exe = find_bench_binary(build_dir)
    ffver = ffmpeg_version("the comparison")
    # Run a private copy: a rebuild of the tree during the run (another
    # `make` in the same build directory) must not swap the binary mid-run.
    data_dir.mkdir(parents=True, exist_ok=True)
    snap = data_dir / "bench_decoder.run"
    shutil.copy2(exe, snap)
    exe = snap

    sizes = SIZES
    if args.sizes:
        sizes = [tuple(int(v) for v in s.lower().split("x")) for s in args.sizes.split(",")]
    threads = [int(t) for t in args.threads.split(",")] if args.threads else THREADS
    repeat = args.repeat
    write = not args.no_doc
    if args.quick:
        sizes, repeat, write = [(340, 256)], 1, False

    nproc = os.cpu_count() or 1
    t0 = time.perf_counter()
    make_clips(exe, data_dir, sizes, GOPS, nproc)
    encode_s = time.perf_counter() - t0
    sets = frame_sets(NUM_FRAMES, COUNT, SEED)
    t0 = time.perf_counter()
    if args.wait_quiet > 0:
        wait_quiet(args.wait_quiet, nproc)
    wait_s = time.perf_counter() - t0
    t_measure = time.perf_counter()

    results = []
    for (w, h) in sizes:
        for gop in GOPS:
            path = clip_path(data_dir, w, h, gop)
            for n in threads:
                chunk = CHUNK if (w, h) in CHUNK_SIZES and n == 1 else 0
                bench_clip(exe, path, w, h, gop, n, sets, repeat, results, chunk)

    elapsed = time.perf_counter() - t_measure
    p1080 = clip_path(data_dir, 1920, 1080, 250)
    bitrate = p1080.stat().st_size * 8 / (NUM_FRAMES / FPS) / 1e6 if p1080.exists() else 0.0
    meta = {
        "command": command_line("run_decoder.py", make_target="make bench"),
        "date": datetime.date.today().isoformat(),
        "elapsed": elapsed, "encode_s": encode_s, "wait_s": wait_s,
        "nproc": nproc, "cpu": cpu_model(), "ffmpeg": ffver,
        "reel": reel_version(ROOT), "repeat": repeat, "load": load_summary(), "sets": sets, "bitrate_1080": bitrate,
    }
    # raw results: the latest, and a dated copy (a quieter run can be
    # re-rendered later with --render FILE)
    raw = data_dir / "results-decoder.jsonl"
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    for path in (raw, data_dir / f"results-decoder-{stamp}.jsonl"):
        write_results(path, results, meta)
    emit(results, meta, args, write, raw)


def emit(results, meta, args, write, raw):
    section = render(results, meta)
    if write:
        write_doc(Path(args.doc), SECTION, section)
        log(f"wrote the '{SECTION}' section of {args.doc}; raw results in {raw}")
    else:
        print(section)
        log(f"raw results: {raw}")


def render_saved(path, args):
    lines = [json.loads(l) for l in open(path) if l.strip()]
    if not lines or "meta" not in lines[0]:
        die(f"{path}: not a results file written by this script (no meta line)")
    emit(lines[1:], lines[0]["meta"], args, not args.no_doc, path)


def load_median(meta):
    m = re.search(r"median ([\d.]+)", str(meta.get("load", "")))
    return float(m.group(1)) if m else 0.0


if __name__ == "__main__":
    main()
