#!/usr/bin/env python3
"""Store read order (issue 7, section 2): the loader over one jpeg store with
the full shuffle, the default shard-by-shard order (shards in a shuffled
order, records shuffled within each), shuffle windows of W records (blocks of
W consecutive records in a shuffled order, shuffled within each block) and no
shuffle, with the page cache cold (posix_fadvise DONTNEED on
every shard right before the run) and warm. Reported per row: frames/s (best
of --repeat), the ratio to the full shuffle in the same cache state, and the
busy seconds of the "read" stage (stage 1: the record's frame bytes).

The store: build/bench-store-order/store, packed on first use from the
Kinetics-like set (`reel synth --dataset`: 64 videos of 10 s at 340x256) at
short side 256, jpeg, in shards of --shard-size bytes (default 32 MiB, so the
store has several shards for the shard-by-shard order), or --store DIR.

  python3 bench/run_store_order.py [--store DIR] [--shard-size BYTES] [--threads 2] [--epochs 3]
                                   [--repeat 3] [--windows 4,16,64] [--write-doc]
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, cpu_model, find_built, load_summary, log, reel_version, sample_load, write_doc  # noqa: E402


def drop_cache(path):
    """posix_fadvise DONTNEED on every file under path."""
    for dirpath, _, files in os.walk(path):
        for f in files:
            fd = os.open(os.path.join(dirpath, f), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def bench(reel, store, threads, epochs, order, cold):
    cmd = [str(reel), "bench", str(store), "--frames-per-clip", "8", "--size", "224", "--batch", "32",
           "--decode-threads", str(threads), "--epochs", str(epochs), "--seed", "1", "--json", "--no-progress"]
    if order == "none":
        cmd.append("--no-shuffle")
    elif order == "full":
        cmd += ["--shuffle", "full"]
    elif order != "shards":
        cmd += ["--shuffle-window", str(order)]
    if cold:
        drop_cache(store)
    sample_load()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    d = json.loads(r.stdout)
    read = next((s for s in d["stages"] if s["name"] in ("read", "fetch")), None)
    return d["frames_per_second"], read["busy_seconds"] if read else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", default=str(ROOT / "build" / "bench-store-order" / "store"))
    ap.add_argument("--shard-size", type=int, default=32 << 20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--windows", default="4,16,64")
    ap.add_argument("--write-doc", action="store_true")
    a = ap.parse_args()
    reel = find_built(ROOT / "build", "reel")
    store = Path(a.store)
    if not (store / "store.idx").exists():
        if a.store != ap.get_default("store"):
            sys.exit(f"{store}: no store here")
        videos = store.parent / "videos"
        if not (videos / "manifest.csv").exists():
            log("generating 64 videos of 10 s at 340x256 ...")
            subprocess.run([str(reel), "synth", "--dataset", str(videos), "--videos", "64", "--seconds", "10",
                            "--size", "340x256", "--fps", "25"], check=True, capture_output=True)
        log(f"packing {store} (jpeg, short side 256, shards of {a.shard_size} bytes) ...")
        subprocess.run([str(reel), "pack", str(videos), str(store), "--size", "256", "--format", "jpeg",
                        "--shard-size", str(a.shard_size), "--no-progress"], check=True, capture_output=True)
    size = sum(f.stat().st_size for f in store.iterdir() if f.is_file())
    shards = sum(1 for f in store.iterdir() if f.suffix == ".bin")
    orders = ["full", "shards"] + [int(w) for w in a.windows.split(",") if w] + ["none"]
    rows = []
    for cache in ("cold", "warm"):
        if cache == "warm":
            bench(reel, store, a.threads, 1, "none", False)  # fill the page cache
        best = {}
        # interleaved repeats: a noisy neighbour hurts every order alike
        for _ in range(a.repeat):
            for o in orders:
                fps, busy = bench(reel, store, a.threads, a.epochs, o, cache == "cold")
                if o not in best or fps > best[o][0]:
                    best[o] = (fps, busy)
        for o in orders:
            fps, busy = best[o]
            rows.append(dict(cache=cache, order=o, fps=fps, vs_full=fps / best["full"][0], read_busy=busy))
            log(f"{cache} {o}: {fps:.0f} frames/s ({fps / best['full'][0]:.2f}x full), read busy {busy:.2f} s")

    def label(o):
        return {"full": "full shuffle", "shards": "shard by shard (the default)",
                "none": "no shuffle (store order)"}.get(o, f"shuffle_window {o}")

    lines = ["## Store read order", "",
             f"`python3 bench/run_store_order.py --threads {a.threads} --epochs {a.epochs} --repeat {a.repeat} "
             f"--windows {a.windows} --write-doc` on {cpu_model()}, reel {reel_version()}, load {load_summary()}. "
             f"Store: `{store}` ({size / 1e6:.0f} MB in {shards} shards; 64 videos of 10 s at 340x256 packed as "
             "jpeg, short side 256). "
             f"Loader: `reel bench STORE --frames-per-clip 8 --size 224 --batch 32 --decode-threads {a.threads} "
             f"--epochs {a.epochs} [--shuffle full | --shuffle-window W | --no-shuffle]`, best of {a.repeat} interleaved runs. "
             "Cold: posix_fadvise(DONTNEED) on every shard before each run.", "",
             "| cache | order | frames/s | x full shuffle | read stage busy s |",
             "|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['cache']} | {label(r['order'])} | {r['fps']:.0f} | {r['vs_full']:.2f} | {r['read_busy']:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.write_doc:
        write_doc(ROOT / "docs" / "BENCHMARKS.md", "## Store read order", text, after="## Store")


if __name__ == "__main__":
    main()
