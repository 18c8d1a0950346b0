#!/usr/bin/env python3
"""Remote benchmark (issue 9, section 5): the reel Loader over the same videos
read locally and by URL through a latency proxy, and a PyAV + fsspec
baseline reading the same URLs, in one run.

  python3 bench/run_remote.py [--videos 32] [--epochs 3] [--threads 2]
                              [--latencies 0,20,100] [--long-videos 4]
                              [--long-seconds 120] [--write-doc]

Servers: nginx (Debian) serving build/bench-remote on a free 127.0.0.1 port,
and, in front of it, the tests' fault-injecting proxy
(tests/python/faultproxy.py) adding a fixed latency to every request (0, 20
and 100 ms by default) and counting the bytes it sends.

1. Kinetics-like set: `reel synth --dataset` (340x256, 25 fps, 10 s, GOP
   250), one 8-frame clip per video, 224x224 batches of 8, with default
   settings. Rows: the Loader over the local manifest, then over the same
   manifest by URL at each latency: frames/s, the ratio to local, bytes
   fetched against the files' bytes, requests per video, request p50/p99.
   Baseline at the same latencies: fsspec's HTTP file (its default block
   cache) opened by PyAV, seek to the clip, decode 8 frames, RGB, resize to
   224x224 in PyAV's reformat, over the same videos with the same number of
   threads (a thread pool; PyAV and aiohttp release the GIL).
2. Long videos (720p, --long-seconds each, GOP 250): one 8-frame clip from
   the middle of each. reel's VideoDecoder by URL fetches by GOP; the row
   gives bytes fetched against the file size and against the bytes of the
   packets decoded (the clip's GOP, from its keyframe to the last frame), and
   the same clip through fsspec + PyAV (bytes counted by the proxy).
"""
import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
from _common import ROOT, cpu_model, find_built, load_summary, log, reel_version, sample_load, write_doc  # noqa: E402
from faultproxy import fault_proxy  # noqa: E402
from servers import nginx  # noqa: E402

import reel  # noqa: E402


def run_loader(source, threads, epochs, open_threads=None):
    with reel.Loader(source, frames_per_clip=8, size=224, batch_size=8, seed=1, epochs=epochs,
                     decode_threads=threads, open_threads=open_threads) as L:
        t0 = time.perf_counter()
        frames = 0
        for _ in range(epochs):
            for b in L:
                frames += len(b) * 8
        secs = time.perf_counter() - t0
        m = L.metrics()
    return dict(fps=frames / secs, frames=frames, seconds=secs, remote=m["remote"], coverage=m["coverage"],
                bottleneck=m["bottleneck"])


def clip_starts(n_frames_list, seed=1):
    import random
    rng = random.Random(seed)
    return [rng.randrange(0, max(1, n - 8)) for n in n_frames_list]


def pyav_clip(url, start, fps, size=224):
    """fsspec's HTTP file opened by PyAV: seek, decode 8 frames from `start`, RGB 224x224."""
    import av
    import fsspec
    with fsspec.open(url, "rb") as f, av.open(f) as c:
        s = c.streams.video[0]
        tb = s.time_base
        target = int(start / fps / tb)
        c.seek(target, stream=s, backward=True, any_frame=False)
        out = []
        for fr in c.decode(s):
            if fr.pts is None or fr.pts * tb < start / fps - 1e-6:
                continue
            out.append(fr.reformat(width=size, height=size, format="rgb24").to_ndarray())
            if len(out) == 8:
                break
    return len(out)


def run_pyav(urls, starts, fps, threads, epochs):
    t0 = time.perf_counter()
    frames = 0
    with ThreadPoolExecutor(threads) as ex:
        for _ in range(epochs):
            frames += sum(ex.map(lambda a: pyav_clip(a[0], a[1], fps), zip(urls, starts)))
    secs = time.perf_counter() - t0
    return dict(fps=frames / secs, frames=frames, seconds=secs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videos", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--latencies", default="0,20,100")
    ap.add_argument("--long-videos", type=int, default=4)
    ap.add_argument("--long-seconds", type=int, default=120)
    ap.add_argument("--data", default=str(ROOT / "build" / "bench-remote"))
    ap.add_argument("--write-doc", action="store_true")
    a = ap.parse_args()
    try:
        import av  # noqa: F401
        import fsspec  # noqa: F401
        import aiohttp  # noqa: F401
    except ImportError as e:
        sys.exit(f"run_remote.py: the baseline needs PyAV and fsspec's HTTP file ({e}); "
                 "python3 -m pip install av fsspec aiohttp")
    reel_cli = find_built(ROOT / "build", "reel")
    data = Path(a.data)
    data.mkdir(parents=True, exist_ok=True)
    ds = data / "kinetics"
    if not (ds / "manifest.csv").exists():
        log(f"generating {a.videos} videos of 10 s at 340x256 ...")
        os.system(f"{reel_cli} synth --dataset {ds} --videos {a.videos} --seconds 10 --size 340x256 --fps 25 "
                  f"> /dev/null")
    long_dir = data / f"long-{a.long_seconds}s"
    long_dir.mkdir(exist_ok=True)
    longs = []
    for i in range(a.long_videos):
        p = long_dir / f"long{i}.mp4"
        if not p.exists():
            log(f"generating {p.name}: {a.long_seconds} s of 1280x720 ...")
            os.system(f"{reel_cli} synth {p} --size 1280x720 --fps 25 --frames {25 * a.long_seconds} --gop 250 "
                      f"--seed {i + 1} > /dev/null")
        longs.append(p)
    rel = [line.split(",")[0] for line in (ds / "manifest.csv").read_text().splitlines()[1:] if line.strip()]
    files = [ds / r for r in rel]
    file_bytes = sum(f.stat().st_size for f in files)
    metas = []
    for f in files:
        with reel.VideoDecoder(str(f)) as d:
            metas.append((d.metadata.num_frames, d.metadata.average_fps))
    starts = clip_starts([m[0] for m in metas])
    fps = metas[0][1]
    latencies = [float(x) for x in a.latencies.split(",")]

    rows = []
    sample_load()
    log("local ...")
    run_loader(ds / "manifest.csv", a.threads, 1)  # warm the page cache
    local_default = run_loader(ds / "manifest.csv", a.threads, a.epochs)
    rows.append(dict(source="local files (default: 1 open thread here)", latency="", **local_default))
    # the pool stage 1 gets by default over URLs (max(8, 2 x cores)), for a like-for-like base
    remote_open = max(8, 2 * (os.cpu_count() or 1))
    local = run_loader(ds / "manifest.csv", a.threads, a.epochs, open_threads=remote_open)
    rows.append(dict(source=f"local files ({remote_open} open threads)", latency="", **local))
    if local_default["fps"] > local["fps"]:
        local = local_default
    with nginx(data) as base:
        for lat in latencies:
            with fault_proxy(base) as proxy:
                proxy.latency = lat / 1000.0
                url = f"{proxy.base}/kinetics/manifest.csv"
                sample_load()
                log(f"reel over URLs, {lat:.0f} ms ...")
                r = run_loader(url, a.threads, a.epochs)
                rows.append(dict(source="reel Loader, URLs", latency=lat, **r))
                sent0 = proxy.bytes_out
                log(f"fsspec + PyAV, {lat:.0f} ms ...")
                urls = [f"{proxy.base}/kinetics/{x}" for x in rel]
                p = run_pyav(urls, starts, fps, a.threads, a.epochs)
                rows.append(dict(source="fsspec + PyAV", latency=lat, remote=dict(bytes_fetched=proxy.bytes_out - sent0,
                                                                                    requests=None), **p))
        # long videos: one clip from the middle of each
        long_rows = []
        with fault_proxy(base) as proxy:
            for p in longs:
                with reel.VideoDecoder(str(p)) as d:
                    n = d.metadata.num_frames
                    pos = d._dec.frame_table()[2]
                start = n // 2
                want = list(range(start, start + 8))
                k = max(i for i in range(0, start + 1) if i % 250 == 0)
                packet_bytes = pos[start + 8] - pos[k]  # keyframe to the clip's end (no B-frames past it)
                url = f"{proxy.base}/{long_dir.name}/{p.name}"
                with reel.VideoDecoder(url) as d:
                    opened = d.remote_stats
                    d.get_frames_at(want)
                    rs = d.remote_stats
                s0 = proxy.bytes_out
                pyav_clip(url, start, 25.0)
                long_rows.append(dict(file=p.name, size=p.stat().st_size, packet_bytes=packet_bytes,
                                      reel_bytes=rs["bytes_fetched"], reel_requests=rs["requests"],
                                      reel_open_bytes=opened["bytes_fetched"],
                                      reel_clip_bytes=rs["bytes_fetched"] - opened["bytes_fetched"],
                                      reel_clip_requests=rs["requests"] - opened["requests"],
                                      pyav_bytes=proxy.bytes_out - s0))

    lines = ["## Remote", "",
             f"`python3 bench/run_remote.py --videos {a.videos} --epochs {a.epochs} --threads {a.threads} "
             f"--latencies {a.latencies} --long-videos {a.long_videos} --long-seconds {a.long_seconds} --write-doc` "
             f"on {cpu_model()}, reel {reel_version()}, load {load_summary()}. nginx on 127.0.0.1 behind the tests' "
             "proxy (tests/python/faultproxy.py) adding the latency to every request. Kinetics-like set: "
             f"{a.videos} videos, 340x256, 10 s, GOP 250, {file_bytes / 1e6:.1f} MB; one 8-frame clip per video "
             f"per epoch, 224x224, {a.epochs} epochs, {a.threads} threads, default remote settings. "
             "fsspec + PyAV: fsspec's HTTP file (default block cache) opened by PyAV, seek, decode 8 frames, "
             f"reformat to 224x224 RGB, {a.threads} threads.", "",
             "| source | latency ms | frames/s | x local | bytes fetched / file bytes | requests per video | "
             "connections | request p50 / p99 ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        rem = r.get("remote") or {}
        fetched = rem.get("bytes_fetched")
        ratio = f"{fetched / (file_bytes * a.epochs):.2f}" if fetched else ""
        reqs = f"{rem['requests'] / (a.videos * a.epochs):.1f}" if rem.get("requests") else ""
        lat = f"{rem['request_p50_s'] * 1e3:.1f} / {rem['request_p99_s'] * 1e3:.1f}" if rem.get("request_p50_s") else ""
        conns = str(rem["connections"]) if rem.get("connections") else ""
        lines.append(f"| {r['source']} | {r['latency'] if r['latency'] == '' else int(r['latency'])} | "
                     f"{r['fps']:.0f} | {r['fps'] / local['fps']:.2f} | {ratio} | {reqs} | {conns} | {lat} |")
    lines += ["", "x local: against the faster of the two local runs. Bytes fetched / file bytes: 1.00 here because "
              "these videos (about 0.4 MB) are under the whole-object limit (16 MiB) and come in one or two "
              "requests; readahead waste shows on the long videos below. Connections: the TCP connections "
              "reel made (the proxy closes each after one answer, so here one per request; against nginx "
              "directly the loader's pool keeps them alive across videos: see tests/python/test_remote.py).", "",
              f"Long videos: 1280x720, {a.long_seconds} s, GOP 250; one 8-frame clip from the middle of each, "
              "by URL with no added latency. Packet bytes: the clip's GOP from its keyframe to the clip's last "
              "frame. reel: open = the container's head and its index (moov), two requests (the index is checked "
              "against the packets the head holds, so no more); the clip = what decoding it fetched (fetch by "
              "GOP, one request).", "",
              "| video | file MB | packet bytes KB | reel: open KB | reel: the clip KB (x packets, requests) | "
              "reel: all KB (x file) | fsspec + PyAV KB (x packets, x file) |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for r in long_rows:
        lines.append(f"| {r['file']} | {r['size'] / 1e6:.1f} | {r['packet_bytes'] / 1e3:.0f} | "
                     f"{r['reel_open_bytes'] / 1e3:.0f} | {r['reel_clip_bytes'] / 1e3:.0f} "
                     f"({r['reel_clip_bytes'] / r['packet_bytes']:.2f}, {r['reel_clip_requests']}) | "
                     f"{r['reel_bytes'] / 1e3:.0f} ({r['reel_bytes'] / r['size']:.3f}) | "
                     f"{r['pyav_bytes'] / 1e3:.0f} ({r['pyav_bytes'] / r['packet_bytes']:.1f}, "
                     f"{r['pyav_bytes'] / r['size']:.2f}) |")
    text = "\n".join(lines) + "\n"
    print(text)
    (data / "results.json").write_text(json.dumps({"rows": rows, "long": long_rows}, indent=1, default=str))
    if a.write_doc:
        write_doc(ROOT / "docs" / "BENCHMARKS.md", "## Remote", text)


if __name__ == "__main__":
    main()
