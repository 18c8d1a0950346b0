#!/usr/bin/env python3
"""The bytes an audio window costs over http (issue 28, remote): what a
VideoDecoder with audio fetches for one window's audio, over the video's.

    python3 bench/run_audio_bytes.py [--seconds 60] [--label NAME]

Makes a --seconds s 320x240 25 fps H.264 + 48 kHz stereo AAC 128 kb/s mp4
(ffmpeg's interleave: about two audio packets between video frames) and the
same with VP8 + Opus in WebM, with the ffmpeg CLI into
build/bench-data/audio-bytes; serves them with nginx on 127.0.0.1
(tests/python/servers.py) and for a 1 s window at 5 s and at --seconds - 5
s reads its audio (16 kHz mono, decoded from a0 for AAC) over http with
remote={"whole_object_max": 0} (byte ranges, as a large object) and
readahead_min at its default (256 KiB) and at 1 KiB (runs of audio
packets closer than readahead_min come in one request): the window's samples
must equal the local file's; reports the bytes and requests that the audio
added to the video's (remote_stats of a decoder with audio minus one
without, the same frames), next to the file's size and its audio packets'
bytes up to the window (ffprobe). Prints a markdown table.

    python3 bench/run_audio_bytes.py --loader [--label NAME]

A Loader sample with audio (one clip of 8 frames, 16 kHz mono) over http:
a 4 s file of the same recipe (an object under whole_object_max, fetched
whole) with the default settings, and the 60 s mp4 read by ranges
(whole_object_max=0) at 0-2 s, 5-7 s and 30-32 s: the loader's
remote_stats bytes and requests with audio and without (the same clip).
Run it on a build before and after a change (--label names the build).

A second table (frag_webm_rows; --only-frag prints it alone): the same mp4
remuxed by the ffmpeg CLI with `-movflags frag_keyframe+empty_moov` (a moof
+ mdat a keyframe, an mfra at the end) and the WebM: the video alone's bytes
and requests for the frame at t (a VideoDecoder's open and one frame), the
audio's added bytes and requests, and for the WebM the video's with a
sidecar index cached (REEL_INDEX_CACHE, the second open).

    python3 bench/run_audio_bytes.py --latency [--label NAME]

Requests against bytes: the 60 s mp4 above (the CLI's fine interleave) and
the same remuxed with `-chunk_duration 1000000` (audio in 1 s chunks, as
cameras write), served through a loopback proxy (delay_proxy: L ms before
each request reaches nginx, the answer paced at --bandwidth MB/s) for
L = 0, 5, 20, 50 ms and readahead_min = 1 KiB ... 1 MiB: the seconds a
VideoDecoder with audio takes to open, read the frame at t and the audio of
[t, t + 1) s (16 kHz mono), with its bytes and requests.
"""
import argparse
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))
from servers import nginx  # noqa: E402

import reel  # noqa: E402

DATA = ROOT / "build" / "bench-data" / "audio-bytes"


def make(seconds):
    DATA.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, vcodec, acodec in (("long.mp4", ["-c:v", "libx264", "-preset", "ultrafast", "-g", "25"],
                                  ["-c:a", "aac", "-b:a", "128k"]),
                                 ("long.webm", ["-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8",
                                                "-g", "25", "-b:v", "400k"], ["-c:a", "libopus", "-b:a", "128k"])):
        p = DATA / f"{seconds}s-{name}"
        if not p.exists():
            subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i",
                            f"testsrc2=s=320x240:r=25:d={seconds}", "-f", "lavfi", "-i",
                            f"sine=f=440:r=48000:d={seconds}", "-f", "lavfi", "-i",
                            f"anoisesrc=r=48000:a=0.1:d={seconds}", "-filter_complex",
                            "[1:a][2:a]amerge=inputs=2[a]", "-map", "0:v", "-map", "[a]", "-pix_fmt", "yuv420p",
                            *vcodec, *acodec, str(p)], check=True)
        out[name] = p
    return out


def audio_bytes_until(path, t):
    r = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a", "-show_entries", "packet=pts_time,size",
                        "-of", "csv=p=0", str(path)], capture_output=True, text=True, check=True)
    return sum(int(s) for ts, s in (line.split(",")[:2] for line in r.stdout.split()) if float(ts) <= t)


def window(src, t, remote=None):
    frames = list(range(int(t * 25), int(t * 25) + 25))
    kw = {"remote": remote} if remote else {}
    with reel.VideoDecoder(str(src), **kw) as d:
        d.get_frames_at(frames[:1])
        video = dict(d.remote_stats) if remote else {}
    with reel.VideoDecoder(str(src), audio={"sample_rate": 16000, "channels": 1}, **kw) as d:
        d.get_frames_at(frames[:1])
        a = np.asarray(d.get_audio_for_frames(frames).data).copy()
        both = dict(d.remote_stats) if remote else {}
    return a, video, both


def served_windows(www, base, paths, seconds):
    """For each file served at base (linked into www), its 1 s windows at 5 s
    and seconds - 5 s, read by ranges at readahead_min 256 KiB and 1 KiB:
    (name, path, t, readahead_min, the video alone's remote_stats, with
    audio's), the samples asserted equal to the local file's."""
    for name, path in paths.items():
        (Path(www) / name).symlink_to(path)
        for t in (5.0, seconds - 5.0):
            local, _, _ = window(path, t)
            for ra in (256 << 10, 1 << 10):
                got, v, b = window(f"{base}/{name}", t, {"whole_object_max": 0, "readahead_min": ra})
                assert np.array_equal(got, local), (name, t, ra)
                yield name, path, t, ra, v, b


def loader_sample(src, t, audio, remote):
    """A Loader's one clip at [t, t + 2) s of src: its audio, and the loader's remote_stats."""
    kw = dict(frames_per_clip=8, size=32, batch_size=1, shuffle=False, epochs=1, decode_threads=1)
    with reel.Loader([(str(src), 0, t, t + 2.0)], audio=audio, remote=remote, **kw) as ld:
        (b,) = list(ld)
        return (np.asarray(b.audio).copy() if audio else None), dict(ld.metrics().get("remote") or {})


def loader_rows(label):
    """The bytes and requests of a Loader sample with audio, over without."""
    small, large = make(4)["long.mp4"], make(60)["long.mp4"]
    mono = {"sample_rate": 16000, "channels": 1}
    cases = [(small, 1.0, {}, "4 s mp4, whole (default settings)")]
    cases += [(large, t, {"whole_object_max": 0}, f"60 s mp4, by ranges, {t:g}-{t + 2:g} s") for t in (0.0, 5.0, 30.0)]
    rows = []
    with tempfile.TemporaryDirectory() as www, nginx(Path(www)) as base:
        for i, (path, t, remote, name) in enumerate(cases):
            (Path(www) / f"{i}.mp4").symlink_to(path)
            url = f"{base}/{i}.mp4"
            local, _ = loader_sample(path, t, mono, None)
            _, video = loader_sample(url, t, None, remote)
            got, both = loader_sample(url, t, mono, remote)
            assert np.array_equal(got, local), name
            rows.append((name, path.stat().st_size, video, both))
    print(f"| Loader sample {label} | file MB | video alone MB (requests) | video + audio MB (requests) |")
    print("|---|---|---|---|")
    for name, size, v, b in rows:
        print(f"| {name} | {size / 1e6:.2f} | {v['bytes_fetched'] / 1e6:.3f} ({v['requests']}) |"
              f" {b['bytes_fetched'] / 1e6:.3f} ({b['requests']}) |")
    print("samples equal the local file's: yes (asserted)")


def make_frag(mp4):
    """The mp4 remuxed fragmented (a moof + mdat a keyframe), as the ffmpeg CLI writes it."""
    p = mp4.with_name(mp4.name.replace("long.mp4", "frag.mp4"))
    if not p.exists():
        subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", str(mp4), "-c", "copy", "-movflags",
                        "frag_keyframe+empty_moov", str(p)], check=True)
    return p


def frag_webm_rows(args, files):
    """The fragmented mp4's and the WebM's rows: video alone, audio added, bytes and requests."""
    import os
    paths = {"frag.mp4": make_frag(files["long.mp4"]), "long.webm": files["long.webm"]}
    rows = []
    with tempfile.TemporaryDirectory() as www, nginx(Path(www)) as base:
        for name, path, t, ra, v, b in served_windows(www, base, paths, args.seconds):
            rows.append((name, t, f"{ra >> 10} KiB", path.stat().st_size, v["bytes_fetched"], v["requests"],
                         b["bytes_fetched"] - v["bytes_fetched"], b["requests"] - v["requests"]))
        with tempfile.TemporaryDirectory() as cache:  # the WebM's video, its index cached: the second open
            os.environ["REEL_INDEX_CACHE"] = cache
            try:
                for _ in range(2):  # the first open writes the index, the second reads it
                    with reel.VideoDecoder(f"{base}/long.webm", remote={"whole_object_max": 0}, index_mode=True) as d:
                        d.get_frames_at([125])
                        v = dict(d.remote_stats)
            finally:
                del os.environ["REEL_INDEX_CACHE"]
        rows.append(("long.webm", 5.0, "256 KiB, index cached", paths["long.webm"].stat().st_size, v["bytes_fetched"],
                     v["requests"], 0, 0))
    print(f"| file {args.label} | frame / window | readahead_min | file MB | video alone MB (requests) |"
          " audio added MB (requests) |")
    print("|---|---|---|---|---|---|")
    for name, t, ra, size, vb, vr, ab, ar in rows:
        print(f"| {name} | {t:g} s | {ra} | {size / 1e6:.2f} | {vb / 1e6:.2f} ({vr}) | {ab / 1e6:.2f} ({ar}) |")
    print("samples equal the local file's: yes (asserted)")


class delay_proxy:
    """A loopback TCP proxy in front of nginx: each chunk a client sends (a
    request) waits `latency` s before it goes on; each answer chunk is paced
    at `bandwidth` bytes/s. Bounded: every socket has a timeout, and leaving
    the with block closes the listener and every connection."""

    def __init__(self, upstream, latency, bandwidth):
        self.upstream, self.latency, self.bandwidth = upstream, latency, bandwidth
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.socks, self.stop = [], threading.Event()

    def __enter__(self):
        threading.Thread(target=self.accept, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for s in [self.listener, *self.socks]:
            s.close()

    def accept(self):
        while not self.stop.is_set():
            try:
                c, _ = self.listener.accept()
            except OSError:
                continue
            u = socket.create_connection(("127.0.0.1", self.upstream), timeout=30)
            c.settimeout(30)
            self.socks += [c, u]
            threading.Thread(target=self.pump, args=(c, u, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(u, c, False), daemon=True).start()

    def pump(self, src, dst, request):
        try:
            while not self.stop.is_set():
                b = src.recv(1 << 16)
                if not b:
                    break
                time.sleep(self.latency if request else len(b) / self.bandwidth)
                dst.sendall(b)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def timed_window(url, t, ra):
    """Seconds, bytes and requests of a decoder with audio: open, the frame at t, the audio of [t, t + 1) s."""
    frames = list(range(int(t * 25), int(t * 25) + 25))
    t0 = time.perf_counter()
    with reel.VideoDecoder(url, audio={"sample_rate": 16000, "channels": 1},
                           remote={"whole_object_max": 0, "readahead_min": ra}) as d:
        d.get_frames_at(frames[:1])
        a = np.asarray(d.get_audio_for_frames(frames).data).copy()
        st = dict(d.remote_stats)
    return a, time.perf_counter() - t0, st["bytes_fetched"], st["requests"]


def latency_rows(args):
    """The seconds a window costs, by per-request latency and readahead_min."""
    fine = make(60)["long.mp4"]
    coarse = fine.with_name("60s-coarse.mp4")
    if not coarse.exists():
        subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", str(fine), "-c", "copy", "-chunk_duration",
                        "1000000", str(coarse)], check=True)
    gaps = (1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20)
    print(f"| file {args.label} | window | latency ms | " + " | ".join(f"{g >> 10} KiB: s, MB (requests)" for g in gaps)
          + " |")
    print("|---|---|---|" + "---|" * len(gaps))
    with tempfile.TemporaryDirectory() as www, nginx(Path(www)) as base:
        port = int(base.rsplit(":", 1)[1])
        for path in (fine, coarse):
            (Path(www) / path.name).symlink_to(path)
            for t in (5.0, 55.0):
                local = window(path, t)[0]
                for lat in (0, 5, 20, 50):
                    cells = []
                    with delay_proxy(port, lat / 1e3, args.bandwidth * 1e6) as px:
                        for g in gaps:
                            got, sec, nb, nr = timed_window(f"http://127.0.0.1:{px.port}/{path.name}", t, g)
                            assert np.array_equal(got, local), (path.name, t, lat, g)
                            cells.append(f"{sec:.2f}, {nb / 1e6:.2f} ({nr})")
                    print(f"| {path.name} | {t:g}-{t + 1:g} s | {lat} | " + " | ".join(cells) + " |", flush=True)
    print("samples equal the local file's: yes (asserted)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--label", default="")
    ap.add_argument("--loader", action="store_true", help="the Loader's sample with audio, small and large objects")
    ap.add_argument("--only-frag", action="store_true", help="the fragmented mp4 and WebM table alone")
    ap.add_argument("--latency", action="store_true", help="seconds a window costs by request latency and gap")
    ap.add_argument("--bandwidth", type=float, default=50.0, help="--latency: the proxy's MB/s")
    args = ap.parse_args()
    if args.latency:
        latency_rows(args)
        return
    if args.loader:
        loader_rows(args.label)
        return
    files = make(args.seconds)
    if args.only_frag:
        frag_webm_rows(args, files)
        return
    rows = []
    with tempfile.TemporaryDirectory() as www, nginx(Path(www)) as base:
        for name, path, t, ra, v, b in served_windows(www, base, files, args.seconds):
            rows.append((name, t, ra, path.stat().st_size, audio_bytes_until(path, t + 1.0), b["bytes_fetched"] -
                         v["bytes_fetched"], b["requests"] - v["requests"], v["bytes_fetched"]))
    print(f"| file {args.label} | window | readahead_min | file MB | audio packets to the window's end MB |"
          " audio fetched MB | audio requests | video alone MB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, t, ra, size, abytes, got, req, vid in rows:
        print(f"| {name} | {t:g}-{t + 1:g} s | {ra >> 10} KiB | {size / 1e6:.2f} | {abytes / 1e6:.2f} |"
              f" {got / 1e6:.2f} | {req} | {vid / 1e6:.2f} |")
    print("samples equal the local file's: yes (asserted)")
    frag_webm_rows(args, files)


if __name__ == "__main__":
    main()
