#!/usr/bin/env python3
"""Loader benchmark (issue 3, section 9): `reel bench` against the decode floor.

    python3 bench/run_loader.py [--repeat 2] [--quick] [--no-doc] [--wait-quiet S] ...

About 8 minutes of measuring on 2 idle cores, plus about 6 minutes to
encode the datasets the first time (kept and reused).

What it does:
  1. Generates four Kinetics-like datasets with `reel synth --dataset`
     (H.264, 10 s at 25 fps, 2 B-frames, keyframes exactly every GOP frames,
     class folders) into build/bench-data/loader-<size>-gop<G>-<N>v-10s-25fps:
     340x256 and 1280x720, each with GOP 250 and GOP 16; 64 videos at
     340x256, 32 at 1280x720 (one full batch of 32).
  2. Two ways of taking "8 random frames per clip", both with 224x224 output
     (short side 256, random crop, random flip, uint8), batches of 32 videos:
       clip       `reel bench --frames-per-clip 8`: one clip of 8 consecutive
                  frames at a random start (the loader's default sampler)
       scattered  `reel bench --frames-per-clip 1 --clips-per-video 8`: 8
                  frames drawn at random over the whole 10 s (a batch is then
                  256 single-frame clips from 32 videos)
  3. The frames each video needs come from reel itself: the Python package's
     reel.Loader with the same settings and seed yields batches whose .info
     lists every clip's frame indices (cached in build/bench-data/*.plan-*.json;
     its decode count is checked against `reel bench`'s, so a stale cache or a
     stale Python build is caught). For each video: the spans from the
     keyframe at or before a wanted frame up to it, merged when they touch.
  4. For each thread count T (default 1, 2, 4; 4 oversubscribes 2 cores),
     interleaved, best of --repeat rounds:
       reel   `reel bench DIR --decode-threads T --json ...`: frames/s, peak RSS,
              amplification, data time, per-stage busy time, bottleneck;
       floor  ffmpeg alone decoding exactly those spans: one ffmpeg process
              per video (`-threads 1`, the concat demuxer with inpoint =
              the span's keyframe and outpoint = just after its last frame, so
              one decoder runs the video's spans in a row, as reel does), T
              processes at a time (concurrent.futures) over the video list.
              Floor time = the sum of ffmpeg's own `-benchmark` rtime / T
              (decoding only: without process start, probing and the first
              seek, which reel's time includes as the open stage).
  5. Writes the "## Loader (issue 3)" section of docs/BENCHMARKS.md (after
     the decoder section; the rest of the file is left alone) and every
     measurement as JSON lines in build/bench-data/results-loader.jsonl.

--floor-mode spans times the floor the naive way instead: one ffmpeg process
per span (`ffmpeg -threads 1 -noaccurate_seek -ss <keyframe> -i F -frames:v
<span length> -f null -`), which adds a codec setup per span.
"""
import argparse
import datetime
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import (ROOT, command_line, cpu_model, die, ffmpeg_bench, ffmpeg_version, find_built, fmt_fps,
                     load_summary, log, reel_version, sample_load, wait_quiet, write_doc, write_results)

SECTION = "## Loader (issue 3)"
DECODER_SECTION = "## Decoder (issue 2)"

SIZES = [(340, 256), (1280, 720)]
GOPS = [250, 16]
VIDEOS = {(340, 256): 64, (1280, 720): 32}
SECONDS = 10
FPS = 25
THREADS = [1, 2, 4]
BATCH = 32
OUT_SIZE = 224
SEED = 0
EPOCHS = 1
WORKLOADS = {
    "clip": {"frames_per_clip": 8, "clips_per_video": 1},
    "scattered": {"frames_per_clip": 1, "clips_per_video": 8},
}


# ---------------------------------------------------------------- tools

def find_reel(build_dir):
    return find_built(build_dir, "reel", target="reel_cli")


def import_reel():
    try:
        import reel  # noqa: F401
        return reel
    except ImportError as e:
        die(f"cannot import the reel Python package ({e}); it gives the frames each clip needs. "
            "Install it from the repository root with: python3 -m pip install -q --no-build-isolation -e .")


# ---------------------------------------------------------------- datasets

def dataset_name(w, h, gop, n):
    return f"loader-{w}x{h}-gop{gop}-{n}v-{SECONDS}s-{FPS}fps"


def make_dataset(exe, data_dir, w, h, gop, n, jobs):
    d = data_dir / dataset_name(w, h, gop, n)
    if (d / "manifest.csv").exists() and len(list(d.rglob("*.mp4"))) == n:
        return d
    tmp = d.with_name(d.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(d, ignore_errors=True)
    cmd = [str(exe), "synth", "--dataset", str(tmp), "--videos", str(n), "--seconds", str(SECONDS),
           "--size", f"{w}x{h}", "--fps", str(FPS), "--gop", str(gop), "--jobs", str(jobs)]
    log(f"generating {d.name} ({n} videos) ...")
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    os.replace(tmp, d)
    log(f"  {d.name}: {time.perf_counter() - t0:.0f} s")
    return d


# ---------------------------------------------------------------- the plan

def make_plan(reel, ds_dir, workload, epochs, data_dir):
    """Per (epoch, video): the distinct frame indices reel's loader delivers,
    from the Python package with the same settings as `reel bench`."""
    wl = WORKLOADS[workload]
    cache = data_dir / f"{ds_dir.name}.plan-{workload}-seed{SEED}-e{epochs}-b{BATCH}.json"
    if cache.exists():
        try:
            return json.loads(cache.read_text())
        except ValueError:
            pass
    t0 = time.perf_counter()
    samples = {}
    with reel.Loader(str(ds_dir), frames_per_clip=wl["frames_per_clip"], clips_per_video=wl["clips_per_video"],
                     size=OUT_SIZE, batch_size=BATCH, decode_threads=os.cpu_count() or 1, shuffle=True, seed=SEED,
                     crop="random", flip="random", epochs=epochs) as loader:
        for e in range(epochs):
            for b in loader:
                for c in b.info:
                    s = samples.setdefault((e, c.sample), {"epoch": e, "sample": c.sample, "path": c.path,
                                                           "indices": set()})
                    s["indices"].update(int(i) for i in c.frame_indices)
                del b
        m = loader.metrics()
    plan = {
        "dataset": ds_dir.name, "workload": workload, "seed": SEED, "epochs": epochs, "batch": BATCH,
        "frames_decoded": m["frames_decoded"], "frames_returned": m["frames_returned"], "frames": m["frames"],
        "samples": [{**s, "indices": sorted(s["indices"])} for _, s in sorted(samples.items())],
    }
    cache.write_text(json.dumps(plan))
    log(f"  plan {ds_dir.name} {workload}: {len(plan['samples'])} samples, "
        f"{time.perf_counter() - t0:.1f} s")
    return plan


TABLES = {}


def frame_table(reel, path):
    """(pts seconds of every frame, keyframe indices, first pts) of a video."""
    if path not in TABLES:
        with reel.VideoDecoder(path) as dec:
            ft = dec.frame_table()
            TABLES[path] = ([f.pts_seconds for f in ft], list(dec.keyframes),
                            [f.duration_seconds for f in ft])
    return TABLES[path]


def spans_for(indices, keyframes):
    """[(keyframe, last)] to decode: from the keyframe at or before each wanted
    frame up to it, merged when they overlap or touch."""
    out = []
    j = 0
    for i in sorted(set(indices)):
        while j + 1 < len(keyframes) and keyframes[j + 1] <= i:
            j += 1
        k = keyframes[j]
        if out and k <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], i)
        else:
            out.append([k, i])
    return [tuple(s) for s in out]


def floor_jobs(reel, plan):
    jobs = []
    for s in plan["samples"]:
        path = os.path.abspath(s["path"])
        pts, kf, dur = frame_table(reel, path)
        sp = spans_for(s["indices"], kf)
        jobs.append({"path": path, "spans": sp, "pts": [(pts[a], pts[b], dur[b]) for a, b in sp],
                     "t0": pts[0], "frames": sum(b - a + 1 for a, b in sp), "wanted": len(s["indices"])})
    return jobs


# ---------------------------------------------------------------- ffmpeg

RSS_RE = re.compile(r"bench: maxrss=(\d+)kB")
FF = ["ffmpeg", "-hide_banner", "-nostdin", "-nostats", "-loglevel", "info", "-benchmark"]


def concat_list(job):
    lines = ["ffconcat version 1.0"]
    q = job["path"].replace("'", "'\\''")
    for (a, _b), (ta, tb, db) in zip(job["spans"], job["pts"]):
        lines.append(f"file '{q}'")
        if a > 0:
            lines.append(f"inpoint {ta:.6f}")
        lines.append(f"outpoint {tb + 0.5 * db:.6f}")
    return "\n".join(lines) + "\n"


def ff_run(cmd):
    r = ffmpeg_bench(cmd)
    rss = RSS_RE.search(r["stderr"])
    return {"rtime": r["rtime"], "cpu": r["cpu"], "out": r["out"], "maxrss": int(rss.group(1)) * 1024 if rss else 0}


def floor_one(job, mode, tmpdir):
    if mode == "concat":
        lst = Path(tmpdir) / f"{threading.get_ident()}.ffconcat"
        lst.write_text(concat_list(job))
        r = ff_run(FF + ["-threads", "1", "-f", "concat", "-safe", "0", "-i", str(lst),
                         "-fps_mode", "passthrough", "-f", "null", "-"])
        # outpoint cuts by decode timestamp: each span may bring up to the
        # B-frame depth of frames past its last one (decoded either way)
        if not job["frames"] <= r["out"] <= job["frames"] + 3 * len(job["spans"]):
            die(f"ffmpeg concat on {job['path']} output {r['out']} frames for spans {job['spans']} "
                f"({job['frames']} frames)")
        return r
    tot = {"rtime": 0.0, "cpu": 0.0, "out": 0, "maxrss": 0}
    for (a, b), (ta, _tb, db) in zip(job["spans"], job["pts"]):
        cmd = FF + ["-threads", "1"]
        if a > 0:
            cmd += ["-noaccurate_seek", "-ss", f"{ta - job['t0'] + 0.5 * db:.6f}"]
        cmd += ["-i", job["path"], "-frames:v", str(b - a + 1), "-f", "null", "-"]
        r = ff_run(cmd)
        if r["out"] != b - a + 1:
            die(f"{' '.join(cmd)} output {r['out']} frames, expected {b - a + 1}")
        for k in ("rtime", "cpu", "out"):
            tot[k] += r[k]
        tot["maxrss"] = max(tot["maxrss"], r["maxrss"])
    return tot


def run_floor(jobs, threads, mode):
    with tempfile.TemporaryDirectory(prefix="reel-floor-") as tmpdir:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=threads) as pool:
            rs = list(pool.map(lambda j: floor_one(j, mode, tmpdir), jobs))
        wall = time.perf_counter() - t0
    return {"s": sum(r["rtime"] for r in rs) / threads, "cpu_s": sum(r["cpu"] for r in rs),
            "wall_s": wall, "frames_out": sum(r["out"] for r in rs),
            "maxrss": max(r["maxrss"] for r in rs)}


SEQ_VIDEOS = 4


def run_seq(jobs):
    """ffmpeg's sequential decode cost per frame (-threads 1, whole videos,
    one at a time) on the first few videos: the ideal floor's unit."""
    paths = sorted({j["path"] for j in jobs})[:SEQ_VIDEOS]
    rt = fr = cpu = 0.0
    for p in paths:
        r = ff_run(FF + ["-threads", "1", "-i", p, "-f", "null", "-"])
        rt += r["rtime"]
        cpu += r["cpu"]
        fr += r["out"]
    return {"s_per_frame": rt / fr, "cpu_per_frame": cpu / fr, "videos": len(paths)}


def check_floor(reel, jobs):
    """The concat list must start each span at its keyframe: compare the
    first frame of a span that needs a seek with a plain decode's."""
    for job in jobs:
        if any(a > 0 for a, _ in job["spans"]):
            break
    else:
        return
    a, b = next(s for s in job["spans"] if s[0] > 0)
    one = dict(job, spans=[(a, b)], pts=[job["pts"][job["spans"].index((a, b))]], frames=b - a + 1)
    with tempfile.TemporaryDirectory(prefix="reel-floor-") as tmpdir:
        lst = Path(tmpdir) / "check.ffconcat"
        lst.write_text(concat_list(one))
        g = subprocess.run(["ffmpeg", "-v", "error", "-f", "concat", "-safe", "0", "-i", str(lst),
                            "-frames:v", "1", "-f", "framemd5", "-"], capture_output=True, text=True)
        if g.returncode != 0:
            die(f"ffmpeg -f concat failed on {lst.read_text()!r}:\n{g.stderr[-2000:]}")
        got = g.stdout
        ref = subprocess.run(["ffmpeg", "-v", "error", "-i", job["path"], "-vf", f"select=eq(n\\,{a})",
                              "-fps_mode", "passthrough", "-frames:v", "1", "-f", "framemd5", "-"],
                             capture_output=True, text=True).stdout
    md5 = [l.split(",")[-1].strip() for l in (got, ref) for l in l.splitlines() if l and not l.startswith("#")][:2]
    if len(md5) != 2 or md5[0] != md5[1]:
        die(f"the floor's seek to frame {a} of {job['path']} does not start at that frame ({md5})")


# ---------------------------------------------------------------- reel

def run_reel(exe, ds_dir, workload, threads, epochs):
    wl = WORKLOADS[workload]
    cmd = [str(exe), "bench", str(ds_dir), "--frames-per-clip", str(wl["frames_per_clip"]),
           "--clips-per-video", str(wl["clips_per_video"]), "--size", str(OUT_SIZE), "--batch", str(BATCH),
           "--decode-threads", str(threads), "--epochs", str(epochs), "--seed", str(SEED), "--json", "--no-progress"]
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed (status {r.returncode}):\n{r.stderr[-2000:]}")
    d = json.loads(r.stdout.strip().splitlines()[-1])
    d["cpu_s"] = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    d["process_wall_s"] = wall
    d["cmd"] = " ".join(cmd[1:]).replace(str(ds_dir), "DIR")
    return d


# ---------------------------------------------------------------- the run

def bench_set(exe, reel, data_dir, ds_dir, w, h, gop, nvid, workload, threads, repeat, epochs, mode, results,
              plan_retry=True):
    plan = make_plan(reel, ds_dir, workload, epochs, data_dir)
    jobs = floor_jobs(reel, plan)
    check_floor(reel, jobs)
    floor_frames = sum(j["frames"] for j in jobs)
    wanted = sum(j["wanted"] for j in jobs)
    rr = {t: [] for t in threads}
    ff = {t: [] for t in threads}
    seq = []
    for rep in range(repeat):
        for t in threads:
            sample_load()
            rr[t].append(run_reel(exe, ds_dir, workload, t, epochs))
            if rep == 0 and t == threads[0] and rr[t][0]["frames_returned"] != plan["frames_returned"]:
                msg = (f"{ds_dir.name} {workload}: reel bench delivered {rr[t][0]['frames_returned']} distinct "
                       f"frames, the plan's loader {plan['frames_returned']}")
                if plan_retry:
                    log(msg + ": remaking the plan")
                    (data_dir / f"{ds_dir.name}.plan-{workload}-seed{SEED}-e{epochs}-b{BATCH}.json").unlink()
                    return bench_set(exe, reel, data_dir, ds_dir, w, h, gop, nvid, workload, threads, repeat,
                                     epochs, mode, results, plan_retry=False)
                die(msg + " (is the Python package built from this tree? "
                    "python3 -m pip install -q --no-build-isolation -e .)")
            if rep == 0 and t == threads[0] and rr[t][0]["frames_decoded"] != plan["frames_decoded"]:
                log(f"  note: reel bench decoded {rr[t][0]['frames_decoded']} frames, the Python package's "
                    f"loader {plan['frames_decoded']} for the same frames (a Python build older or newer "
                    f"than build/reel)")
            sample_load()
            ff[t].append(run_floor(jobs, t, mode))
        seq.append(run_seq(jobs))
    for t in threads:
        best_r = min(rr[t], key=lambda d: d["seconds"])
        best_f = min(ff[t], key=lambda d: d["s"])
        frames = best_r["frames"]
        row = {
            "dataset": ds_dir.name, "size": f"{w}x{h}", "gop": gop, "videos": nvid, "workload": workload,
            "threads": t, "epochs": epochs, "batch": BATCH, "rounds": len(rr[t]),
            "command": best_r["cmd"],
            "frames": frames, "clips": best_r["clips"], "batches": best_r["batches"],
            "reel_s": best_r["seconds"], "reel_s_median": statistics.median(d["seconds"] for d in rr[t]),
            "reel_fps": best_r["frames_per_second"], "reel_cpu_s": min(d["cpu_s"] for d in rr[t]),
            "frames_decoded": best_r["frames_decoded"], "frames_returned": best_r["frames_returned"],
            "amplification": best_r["decode_amplification"],
            "peak_rss_bytes": max(d["peak_rss_bytes"] for d in rr[t]), "ring_bytes": best_r["ring_bytes"],
            "data_time_s": best_r["data_time_s"], "model_time_s": best_r["model_time_s"],
            "coverage": best_r["coverage"], "bottleneck": best_r["bottleneck"],
            "stages": best_r["stages"],
            "plan_frames_decoded": plan["frames_decoded"], "plan_frames_returned": plan["frames_returned"],
            "floor_mode": mode, "floor_s": best_f["s"], "floor_s_median": statistics.median(d["s"] for d in ff[t]),
            "floor_cpu_s": min(d["cpu_s"] for d in ff[t]), "floor_wall_s": best_f["wall_s"],
            "floor_frames": floor_frames, "floor_frames_out": best_f["frames_out"], "wanted_frames": wanted,
            "floor_amplification": floor_frames / wanted, "floor_spans": sum(len(j["spans"]) for j in jobs),
            "ffmpeg_maxrss_bytes": best_f["maxrss"],
        }
        spf = min(d["s_per_frame"] for d in seq)
        nproc = os.cpu_count() or 1
        row["seq_s_per_frame"] = spf
        row["ideal_floor_s"] = floor_frames * spf / min(t, nproc)
        row["ideal_floor_fps"] = frames / row["ideal_floor_s"]
        row["ideal_ratio"] = row["reel_fps"] / row["ideal_floor_fps"]
        row["floor_fps"] = frames / row["floor_s"]
        row["ratio"] = row["reel_fps"] / row["floor_fps"]
        row["cpu_ratio"] = row["floor_cpu_s"] / row["reel_cpu_s"] if row["reel_cpu_s"] > 0 else float("nan")
        results.append(row)
        st = {s["name"]: s["busy_fraction"] for s in row["stages"]}
        log(f"  {w}x{h} gop{gop} {workload} t{t}: reel {row['reel_fps']:.0f} fps, floor {row['floor_fps']:.0f} fps, "
            f"ratio {row['ratio']:.2f}, amplification {row['amplification']:.2f} (floor "
            f"{row['floor_amplification']:.2f}), peak RSS {row['peak_rss_bytes'] / 2**20:.0f} MB, "
            f"busy open {st.get('open', 0):.0%} decode {st.get('decode', 0):.0%}, "
            f"bottleneck {row['bottleneck']}")


# ---------------------------------------------------------------- the report

def find(results, r, **kw):
    for s in results:
        if all(s[k] == r[k] for k in ("dataset", "workload")) and all(s[k] == v for k, v in kw.items()):
            return s
    return None


def render(results, meta):
    L = [SECTION, ""]
    L.append(f"Made by `{meta['command']}` on {meta['date']} in {meta['elapsed']:.0f} s. "
             f"Machine: {meta['nproc']} cores (`nproc` = {meta['nproc']}; {meta['cpu']}), shared with other "
             f"work, so absolute numbers drift from run to run; reel and the floor are measured side by side "
             f"in the same run (interleaved, best of {meta['repeat']}), and their ratio is what counts. "
             f"1-minute load average during the run: {meta['load']} (above {meta['nproc']}: the benchmark "
             f"shared the cores with other work). FFmpeg {meta['ffmpeg']}; reel {meta['reel']}.")
    L.append("")
    L.append(f"Datasets (`reel synth --dataset DIR --videos N --seconds {SECONDS} --size WxH --fps {FPS} "
             f"--gop G`, i.e. src/synth: H.264 libx264 veryfast, 2 B-frames, closed GOPs of exactly G frames, "
             f"{SECONDS * FPS} frames per video, in class folders): "
             + ", ".join(f"{w}x{h} GOP {g} ({VIDEOS_USED[(w, h)]} videos)" for (w, h) in meta["sizes"]
                         for g in meta["gops"])
             + f". Output: {OUT_SIZE}x{OUT_SIZE} uint8 [B,T,C,H,W] (short side 256, random crop, random flip), "
             f"batches of {BATCH} videos, seed {SEED}, {meta['epochs']} epoch(s) per run. Command per row: "
             f"`build/reel bench DIR --frames-per-clip F --clips-per-video K --size {OUT_SIZE} --batch {BATCH} "
             f"--decode-threads T --epochs {meta['epochs']} --seed {SEED} --json`.")
    L.append("")
    L.append("Two readings of \"8 random frames per clip\": **clip** = `--frames-per-clip 8 --clips-per-video 1`, "
             "8 consecutive frames at a random start (the loader's default sampler); **scattered** = "
             "`--frames-per-clip 1 --clips-per-video 8`, 8 frames drawn at random over the whole 10 s (a batch "
             f"is then {BATCH * 8} single-frame clips from {BATCH} videos, the same {BATCH * 8} frames).")
    L.append("")
    L.append("**Decode floor**: the time ffmpeg alone takes, on the same cores, to decode the frames each "
             "video needs. The frames reel's loader sampled come from the Python package's `reel.Loader` "
             "with the same settings and seed (`batch.info[i].frame_indices`; checked against "
             "`reel bench`'s count of distinct frames delivered). Per video: the spans from the keyframe at or before each wanted "
             "frame up to it, merged when they touch. "
             + ("ffmpeg decodes them in one process per video with one decoder: `ffmpeg -threads 1 -f concat "
                "-i LIST -fps_mode passthrough -f null -` where LIST holds one entry per span (`inpoint` = "
                "the span's keyframe, `outpoint` = half a frame after its last frame)"
                if meta["floor_mode"] == "concat" else
                "ffmpeg decodes each span in its own process: `ffmpeg -threads 1 -noaccurate_seek -ss "
                "<keyframe time> -i F -frames:v <span length> -f null -`")
             + "; T such processes run at a time over the video list (one per thread, as reel runs one "
             "video per decode thread). Floor time = sum of ffmpeg's own `-benchmark` rtime ÷ T: decoding "
             "only, without process start, probing and the first seek, and without any conversion, while "
             "reel's time (`seconds` of `reel bench --json`) covers everything from the loader's start to its "
             "last batch: opening and indexing every video, seeking, decoding, the fused resize+crop to "
             "224² RGB, collation. So a ratio of 1 would mean the loader costs nothing beyond ffmpeg's "
             "decoding.")
    L.append("")
    L.append("| dataset | workload | threads | reel frames/s | floor frames/s | ratio (reel / floor) | CPU ratio "
             "| ideal floor frames/s | ratio to ideal | amplification: reel / floor | peak RSS | data time "
             "| busy: open / decode | bottleneck |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in results:
        st = {s["name"]: s for s in r["stages"]}
        op, de = st.get("open", {}), st.get("decode", {})
        L.append(f"| {r['size']} GOP {r['gop']} | {r['workload']} | {r['threads']} | {fmt_fps(r['reel_fps'])} | "
                 f"{fmt_fps(r['floor_fps'])} | {r['ratio']:.2f} | {r['cpu_ratio']:.2f} | "
                 f"{fmt_fps(r['ideal_floor_fps'])} | {r['ideal_ratio']:.2f} | "
                 f"{r['amplification']:.2f} / {r['floor_amplification']:.2f} | "
                 f"{r['peak_rss_bytes'] / 2**20:.0f} MB | {r['data_time_s']:.2f} s of {r['reel_s']:.2f} s | "
                 f"{op.get('threads', 0)}×{op.get('busy_fraction', 0):.0%} / "
                 f"{de.get('threads', 0)}×{de.get('busy_fraction', 0):.0%} | {r['bottleneck']} |")
    L.append("")
    L.append("frames/s = frames delivered in batches ÷ seconds (the floor: the same frames ÷ floor time). "
             "CPU ratio = ffmpeg's CPU seconds (its `-benchmark` utime+stime, summed) ÷ reel's (the whole "
             "`reel bench` process): steadier than wall time on a busy machine; above 1 reel uses less CPU. "
             f"ideal floor: the same frames (the spans) at ffmpeg's sequential decode rate (`ffmpeg -threads 1 "
             f"-i F -f null -` over whole videos, the first {SEQ_VIDEOS} of the dataset, rtime per frame), "
             "divided over min(T, cores): a perfect seek-and-decode with no per-span cost, which the measured "
             "floor pays (decoder setup, and with the concat list a demuxer open per span). "
             "amplification = frames decoded ÷ distinct frames delivered (reel: its decoder's count; floor: "
             "the frames in the spans); reel decodes fewer than the spans hold because it skips "
             "non-reference B-frames that no wanted frame needs. peak RSS: the `reel bench` process "
             "(VmHWM), including the batch ring"
             + (f" ({results[0]['ring_bytes'] / 2**20:.0f} MB here)" if results else "")
             + ". data time: time the consumer (a no-op model) waited in `reel_loader_next`, out of the "
             "loader's wall time. busy: each stage's threads × their busy fraction; bottleneck: the stage "
             "`reel bench` names.")
    L.append("")
    L.append("### Findings")
    L.append("")
    L += findings(results, meta)
    L.append("")
    L.append("Raw results (every field, every round's best, JSON lines): `build/bench-data/results-loader.jsonl`.")
    L.append("")
    return "\n".join(L)


def findings(results, meta):
    F = []
    rows = []
    for r in results:
        r1 = find(results, r, threads=1)
        if r["threads"] == 1 or not r1:
            continue
        rows.append(f"{r['size']} GOP {r['gop']} {r['workload']}, {r['threads']} threads: reel ×"
                    f"{r['reel_fps'] / r1['reel_fps']:.2f}, floor ×{r['floor_fps'] / r1['floor_fps']:.2f}")
    if rows:
        F.append("- Scaling over 1 thread (frames/s ratio): " + "; ".join(rows) + ".")
    rows = []
    for r in results:
        if r["threads"] != min(x["threads"] for x in results if x["dataset"] == r["dataset"]):
            continue
        n = r["videos"] * r["epochs"]
        rows.append(f"{r['size']} GOP {r['gop']} {r['workload']}: reel {r['reel_cpu_s']:.2f} s, floor "
                    f"{r['floor_cpu_s']:.2f} s ({(r['reel_cpu_s'] - r['floor_cpu_s']) / n * 1000:+.1f} ms per video)")
    if rows:
        F.append("- CPU seconds at the fewest threads (reel: the whole process; floor: ffmpeg's decoding): "
                 + "; ".join(rows) + ".")
    ratios = [r["ratio"] for r in results]
    if ratios:
        F.append(f"- Ratio to the floor: {min(ratios):.2f} to {max(ratios):.2f} "
                 f"(median {statistics.median(ratios):.2f}).")
    low = [r for r in results if r["ratio"] < 0.8]
    for r in low:
        st = {s["name"]: s for s in r["stages"]}
        F.append(f"- Below 0.8 of the floor: {r['size']} GOP {r['gop']} {r['workload']}, {r['threads']} thread(s): "
                 f"{r['reel_s']:.2f} s against {r['floor_s']:.2f} s; reel decoded {r['frames_decoded']} frames "
                 f"(floor {r['floor_frames']}); open busy {st['open']['busy_seconds']:.2f} s, decode busy "
                 f"{st['decode']['busy_seconds']:.2f} s over {st['decode']['threads']} thread(s); CPU ratio "
                 f"{r['cpu_ratio']:.2f}.")
    amp = [r for r in results if r["amplification"] > 1.05 * r["floor_amplification"]]
    for r in amp:
        F.append(f"- Amplification above the floor's: {r['size']} GOP {r['gop']} {r['workload']}, "
                 f"{r['threads']} thread(s): {r['amplification']:.2f} against {r['floor_amplification']:.2f}.")
    other = [r for r in results if r["bottleneck"] != "decode"]
    for r in other:
        F.append(f"- Bottleneck not decode: {r['size']} GOP {r['gop']} {r['workload']}, {r['threads']} thread(s): "
                 f"{r['bottleneck']}.")
    rss = sorted(results, key=lambda r: r["peak_rss_bytes"])
    if rss:
        F.append(f"- Peak RSS: {rss[0]['peak_rss_bytes'] / 2**20:.0f} MB to {rss[-1]['peak_rss_bytes'] / 2**20:.0f} MB "
                 f"(ring {rss[0]['ring_bytes'] / 2**20:.0f} to {rss[-1]['ring_bytes'] / 2**20:.0f} MB); "
                 f"ffmpeg per process: up to {max(r['ffmpeg_maxrss_bytes'] for r in results) / 2**20:.0f} MB.")
    return F


VIDEOS_USED = dict(VIDEOS)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--data-dir", default=None, help="datasets and results (default BUILD/bench-data)")
    ap.add_argument("--repeat", type=int, default=2, help="rounds per measurement, best kept (default 2)")
    ap.add_argument("--quick", action="store_true",
                    help="340x256 only, threads 1,2, 1 round, no doc update (a smoke test)")
    ap.add_argument("--sizes", default=None, help="e.g. 340x256,1280x720 (default: both)")
    ap.add_argument("--gops", default=None, help="e.g. 250,16 (default: both)")
    ap.add_argument("--threads", default=None, help="e.g. 1,2 (default 1,2,4)")
    ap.add_argument("--workloads", default=None, help="clip,scattered (default: both)")
    ap.add_argument("--videos", default=None, metavar="N|WxH=N,...",
                    help="videos per dataset (default 340x256=64,1280x720=32)")
    ap.add_argument("--epochs", type=int, default=EPOCHS, help=f"epochs per reel bench run (default {EPOCHS})")
    ap.add_argument("--floor-mode", choices=("concat", "spans"), default="concat",
                    help="one ffmpeg per video with a concat list of spans (default), or one per span")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "BENCHMARKS.md"))
    ap.add_argument("--no-doc", action="store_true", help="print the section instead of writing the doc")
    ap.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                    help="before measuring, wait up to S seconds for the load average to drop below the core count")
    ap.add_argument("--from-results", default=None, metavar="JSONL",
                    help="measure nothing: render the section from a results-loader.jsonl of an earlier run")
    args = ap.parse_args()

    if args.from_results:
        lines = [json.loads(l) for l in open(args.from_results) if l.strip()]
        meta, results = lines[0]["meta"], lines[1:]
        meta["sizes"] = [tuple(x) for x in meta["sizes"]]
        for r in results:
            w, h = (int(v) for v in r["size"].split("x"))
            VIDEOS_USED[(w, h)] = r["videos"]
        section = render(results, meta)
        if args.no_doc:
            print(section)
        else:
            write_doc(Path(args.doc), SECTION, section, after=DECODER_SECTION)
            log(f"wrote the '{SECTION}' section of {args.doc} from {args.from_results}")
        return

    t_start = time.perf_counter()
    build_dir = Path(args.build_dir).resolve()
    data_dir = Path(args.data_dir).resolve() if args.data_dir else build_dir / "bench-data"
    data_dir.mkdir(parents=True, exist_ok=True)
    exe = find_reel(build_dir)
    reel = import_reel()
    ffver = ffmpeg_version("the decode floor")
    nproc = os.cpu_count() or 1

    sizes = [tuple(int(v) for v in s.lower().split("x")) for s in args.sizes.split(",")] if args.sizes else SIZES
    gops = [int(g) for g in args.gops.split(",")] if args.gops else GOPS
    threads = [int(t) for t in args.threads.split(",")] if args.threads else THREADS
    workloads = args.workloads.split(",") if args.workloads else list(WORKLOADS)
    for w in workloads:
        if w not in WORKLOADS:
            die(f"unknown workload {w!r} (clip, scattered)")
    if args.videos:
        for part in args.videos.split(","):
            if "=" in part:
                k, v = part.split("=")
                VIDEOS_USED[tuple(int(x) for x in k.lower().split("x"))] = int(v)
            else:
                for k in VIDEOS_USED:
                    VIDEOS_USED[k] = int(part)
    repeat, write = args.repeat, not args.no_doc
    if args.quick:
        sizes, threads, repeat, write = [(340, 256)], [1, 2], 1, False

    sets = []
    for (w, h) in sizes:
        for g in gops:
            n = VIDEOS_USED.get((w, h), 32)
            sets.append((w, h, g, n, make_dataset(exe, data_dir, w, h, g, n, nproc)))
    if args.wait_quiet > 0:
        wait_quiet(args.wait_quiet, nproc)

    results = []
    for (w, h, g, n, d) in sets:
        for wl in workloads:
            bench_set(exe, reel, data_dir, d, w, h, g, n, wl, threads, repeat, args.epochs, args.floor_mode,
                      results)

    elapsed = time.perf_counter() - t_start
    meta = {
        "command": command_line("run_loader.py", make_target="make bench"),
        "date": datetime.date.today().isoformat(), "elapsed": elapsed, "nproc": nproc,
        "cpu": cpu_model(), "ffmpeg": ffver, "reel": reel_version(ROOT), "repeat": repeat,
        "load": load_summary(), "sizes": sizes, "gops": gops, "epochs": args.epochs,
        "floor_mode": args.floor_mode,
    }
    raw = data_dir / "results-loader.jsonl"
    write_results(raw, results, meta)
    section = render(results, meta)
    if write:
        write_doc(Path(args.doc), SECTION, section, after=DECODER_SECTION)
        log(f"wrote the '{SECTION}' section of {args.doc} and {raw} ({elapsed:.0f} s in all)")
    else:
        print(section)
        log(f"raw results: {raw} ({elapsed:.0f} s in all)")


if __name__ == "__main__":
    main()
