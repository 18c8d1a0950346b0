# Helpers shared by the benchmark scripts (run_decoder.py, run_loader.py, peers.py):
# logging, machine info, load sampling and the quiet-machine wait, version probes,
# ffmpeg -benchmark parsing, number formatting and writing a section of docs/BENCHMARKS.md.
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# ffmpeg -benchmark's summary line and its frame counter
BENCH_RE = re.compile(r"bench: utime=([\d.]+)s stime=([\d.]+)s rtime=([\d.]+)s")
FRAME_RE = re.compile(r"frame=\s*(\d+)")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def die(msg):
    """Logs "SCRIPT: msg" (SCRIPT: the script run, e.g. run_decoder.py) and exits with status 1."""
    log(f"{os.path.basename(sys.argv[0]) or 'bench'}: {msg}")
    sys.exit(1)


# ---------------------------------------------------------------- tools and versions

def find_built(build_dir, name, target=None, missing="run `make` at the repository root first"):
    """BUILD/name; with a target, a configured tree without it builds just that target first."""
    exe = build_dir / name
    if exe.exists():
        return exe
    if target and (build_dir / "CMakeCache.txt").exists() and shutil.which("cmake"):
        log(f"building {exe} ...")
        r = subprocess.run(["cmake", "--build", str(build_dir), "--target", target])
        if r.returncode == 0 and exe.exists():
            return exe
    die(f"{exe} is missing: {missing}")


def ffmpeg_version(needed_for):
    """"7.1 (libavcodec 61. 19.100 / ...)" from `ffmpeg -version`; dies, naming
    what needs it, when the ffmpeg CLI is not on PATH."""
    try:
        out = subprocess.run(["ffmpeg", "-hide_banner", "-version"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        die(f"ffmpeg is not on PATH ({needed_for} needs the ffmpeg CLI)")
    first = out.splitlines()[0] if out else "ffmpeg ?"
    libs = [l.strip() for l in out.splitlines() if l.strip().startswith("libavcodec")]
    m = re.match(r"ffmpeg version (\S+)", first)
    ver = m.group(1) if m else first
    return ver + (f" ({re.sub(r' +', ' ', libs[0])})" if libs else "")


def ffmpeg_bench(cmd):
    """Runs an `ffmpeg ... -benchmark` command; dies if it fails or prints no "bench:" line.
    {"rtime": its own rtime, "cpu": utime + stime, "wall": the process's wall seconds,
     "out": the last frame= count (-1: none), "stderr": its stderr}."""
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    m = BENCH_RE.search(r.stderr)
    if not m:
        die(f"no 'bench:' line from {' '.join(cmd)}:\n{r.stderr[-2000:]}")
    fm = FRAME_RE.findall(r.stderr)
    return {"rtime": float(m.group(3)), "cpu": float(m.group(1)) + float(m.group(2)), "wall": wall,
            "out": int(fm[-1]) if fm else -1, "stderr": r.stderr}


def reel_version(root=ROOT):
    """"MAJOR.MINOR.PATCH (git REV[ + local changes])" from include/reel/common.h and git."""
    hdr = (root / "include" / "reel" / "common.h").read_text()
    parts = [re.search(rf"#define REEL_VERSION_{p} +(\d+)", hdr) for p in ("MAJOR", "MINOR", "PATCH")]
    ver = ".".join(m.group(1) if m else "?" for m in parts)
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        if rev:
            ver += f" (git {rev}{' + local changes' if dirty else ''})"
    except FileNotFoundError:
        pass
    return ver


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def command_line(script, args=None, make_target=None):
    """How this run was started, for the doc: `python3 bench/SCRIPT ARGS`, or under
    make (MAKELEVEL set), `MAKE_TARGET BENCH_ARGS='ARGS'`. args: default sys.argv[1:]."""
    argstr = " ".join(sys.argv[1:] if args is None else args)
    if make_target and os.environ.get("MAKELEVEL"):
        return make_target + (f" BENCH_ARGS='{argstr}'" if argstr else "")
    return f"python3 bench/{script}" + (" " + argstr if argstr else "")


# ---------------------------------------------------------------- load

LOADS = []   # 1-minute load average, sampled with sample_load() before every measurement


def loadavg():
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def sample_load():
    LOADS.append(loadavg())


def load_summary(loads=None):
    """"LOW to HIGH (median M)" of the samples (default LOADS), or "unknown"."""
    v = sorted(x for x in (LOADS if loads is None else loads) if x == x)
    if not v:
        return "unknown"
    return f"{v[0]:.1f} to {v[-1]:.1f} (median {statistics.median(v):.1f})"


def wait_quiet(limit_s, nproc):
    """Waits (at most limit_s) for the 1-minute load average to drop below the core count."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < limit_s:
        la = loadavg()
        if not la >= nproc:
            return
        log(f"load average {la:.1f} on {nproc} cores: waiting for a quieter machine ...")
        time.sleep(min(30, max(1, limit_s - (time.perf_counter() - t0))))


# ---------------------------------------------------------------- results and the doc

def fmt_fps(x, two_decimals_below=None):
    """No decimals from 100 up, else one (two below two_decimals_below, where given)."""
    if x >= 100:
        return f"{x:.0f}"
    if two_decimals_below is not None and not x >= two_decimals_below:
        return f"{x:.2f}"
    return f"{x:.1f}"


def write_results(path, results, meta=None):
    """JSON lines: {"meta": meta} first (where given), then one line per result."""
    with open(path, "w") as f:
        if meta is not None:
            f.write(json.dumps({"meta": meta}) + "\n")
        for r in results:
            f.write(json.dumps(r) + "\n")


def _section_end(text, start, title):
    """Where the section whose heading `title` starts at `start` ends: the next "## " heading or the end."""
    nxt = re.search(r"^## ", text[start + len(title):], flags=re.M)
    return start + len(title) + nxt.start() if nxt else len(text)


def write_doc(doc, title, section, after=None):
    """Puts `section` (starting with the heading line `title`) into the Markdown file
    `doc`, leaving the rest alone: in place of the old section of that title, else
    right after the section titled `after` where one follows it, else at the end."""
    text = doc.read_text() if doc.exists() else "# Benchmarks\n\n"
    start = text.find(title + "\n")
    if start >= 0:
        tail = text[_section_end(text, start, title):]
        text = text[:start] + section + ("\n" + tail if tail else "")
    elif after is None:
        if not text.endswith("\n"):
            text += "\n"
        if not text.endswith("\n\n"):
            text += "\n"
        text += section
    else:
        prev = text.find(after + "\n")
        at = _section_end(text, prev, after) if prev >= 0 else len(text)
        if at < len(text):   # right after that section, before whatever follows it
            text = text[:at] + section + "\n" + text[at:]
        else:
            text = text.rstrip("\n") + "\n\n" + section
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)


def run_json(cmd, timeout=None):
    """Runs a benchmark worker process; its last stdout line as JSON, or
    {"error": its last stderr line} when it fails."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(r.stdout.strip().splitlines()[-1])

