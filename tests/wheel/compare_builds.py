"""compare_builds.py VIDEOS CLI_A CLI_B [--all]: decodes frames of every video in
VIDEOS/MANIFEST.tsv with two reel CLIs (the source build's and the wheel's) and
compares their RGB24 bytes. Sampled frames (first, last and 10 spread between)
unless --all. Prints one line per video that differs or that only one decodes,
then a summary; exit 1 when a video both decode differs."""
from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path


def frame_count(cli: str, video: Path):
    p = subprocess.run([cli, "info", str(video), "--json"], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"
    return json.loads(p.stdout.splitlines()[0])["num_frames"], ""


def frames_hash(cli: str, video: Path, at: str):
    p = subprocess.run([cli, "frames", str(video), "--at", at, "--raw", "-"], capture_output=True, timeout=600)
    if p.returncode != 0:
        return None, p.stderr.decode(errors="replace").strip()[-300:]
    return hashlib.sha256(p.stdout).hexdigest(), ""


def main() -> int:
    videos, cli_a, cli_b = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    everything = "--all" in sys.argv[4:]
    with open(videos / "MANIFEST.tsv", newline="") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if (videos / r["file"]).exists()]
    same = differ = only = 0
    for r in rows:
        v = videos / r["file"]
        (na, ea), (nb, eb) = frame_count(cli_a, v), frame_count(cli_b, v)
        if na is None or nb is None:
            only += na is not None or nb is not None
            print(f"{r['file']}: not decoded by {'both' if na is None and nb is None else 'one'}: {ea or eb}")
            continue
        if na != nb:
            differ += 1
            print(f"{r['file']}: {na} frames against {nb}")
            continue
        idx = range(na) if everything else sorted({0, na - 1, *(k * (na - 1) // 11 for k in range(1, 11))})
        at = ",".join(map(str, idx))
        (ha, ea), (hb, eb) = frames_hash(cli_a, v, at), frames_hash(cli_b, v, at)
        if ha is None or hb is None or ha != hb:
            differ += 1
            print(f"{r['file']}: frames differ ({ea or eb or 'pixels'})")
        else:
            same += 1
    print(f"{same} of {len(rows)} videos equal ({'all' if everything else 'sampled'} frames), {differ} differ, "
          f"{only} decoded by one build only")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
