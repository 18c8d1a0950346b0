"""Two builds of reel on the VLM benchmark's videos, interleaved per video.

    nice python3 bench/run_vlm_ab.py --base PYTHON_A --new PYTHON_B [--tools "reel 2 float32,reel 2 uint8"] [--repeat 2]

Runs bench/run_vlm.py's child (one fetch_video per fresh process: wall
seconds, CPU seconds, peak RSS over the output) under two Python
interpreters, e.g. two venvs with different reel builds installed, taking
turns per video so that both see the same load; prints the best wall and
CPU of --repeat runs and the worst peak RSS over the output. For a change's
direction on a shared machine; the benchmark of record is run_vlm.py.
"""
from __future__ import annotations

import argparse
import os

import run_vlm as rv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="python of the base build")
    ap.add_argument("--new", required=True, help="python of the new build")
    ap.add_argument("--tools", default="reel 2 float32,reel 2 uint8")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--data-dir", default="/tmp/reel-vlm-bench")
    a = ap.parse_args()
    ref = os.environ.get("REEL_VLM_REF") or str(rv.ROOT / ".deps" / "vlm-ref")
    for label, path in rv.bench_videos(rv.Path(a.data_dir), a.scale):
        for tool in a.tools.split(","):
            best: dict = {}
            for _ in range(a.repeat):
                for key, py in (("base", a.base), ("new", a.new)):
                    r = rv.run(tool, path, ref, python=py)
                    if "error" in r:
                        raise SystemExit(f"{label} | {tool} | {key}: {r['error']}")
                    b = best.setdefault(key, dict(wall=1e9, cpu=1e9, over=0.0))
                    b["wall"], b["cpu"] = min(b["wall"], r["wall"]), min(b["cpu"], r["cpu"])
                    b["over"] = max(b["over"], r["peak_mb"] - r["out_mb"])
            print(label, "|", tool, "|", " | ".join(f"{k}: wall {v['wall']:.2f} s, CPU {v['cpu']:.2f} s, peak RSS "
                                                     f"over the output {v['over']:.0f} MB" for k, v in best.items()),
                  flush=True)


if __name__ == "__main__":
    main()
