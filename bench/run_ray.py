#!/usr/bin/env python3
# bench/run_ray.py: reel on Ray (issue 15 §4), on one local Ray node on
# 127.0.0.1 with the machine's CPUs: epochs of 8-frame clips at stride 4,
# 224x224, over a generated Kinetics-like set, through
#   1. reel.Loader alone (what the others are held to);
#   2. reel.ray.read_clips then iter_torch_batches(batch_size=32);
#   3. the floor: a datasource that decodes nothing and yields rows of the
#      same shape, count, columns and blocks as read_clips (one copy of each
#      block, as read_clips copies out of the loader's ring), through the same
#      iter_torch_batches(32): Ray's own cost per row on these CPUs;
#   4. ray.data.read_videos (decord, one row per frame) reduced to the same
#      clips' frames (a filter: grouping them into clips would only cost more);
#   5. reel.ray.ClipDecoder in map_batches over rows of (path, frame_indices)
#      planned by the Loader (the first epoch);
# with useful clip frames/s, frames decoded per frame delivered, peak RSS of
# the driver and every Ray process, peak object-store bytes and spilled bytes
# (Ray's own count); then reel.ray.pack against reel pack (one node, same CPUs).
#
# --min-seconds S runs as many epochs (seeded 0, 1, ...) as give the Loader
# at least S seconds of work, and read_clips and the floor over the same
# epochs as one Ray execution, so that Ray's start-up is amortised (issue 15
# asks for >= 1 minute).
#
# --only-pack runs only the pack comparison (--pack-runs N alternated runs,
# medians; it writes no doc).
#
#   python3 bench/run_ray.py [--videos 64] [--seconds 10] [--cpus 2] [--min-seconds 60] [--write-doc]
#   python3 bench/run_ray.py --only-pack [--pack-runs 3] [--pack-parts N]
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, command_line, cpu_model, load_summary, log, reel_version, sample_load, write_doc  # noqa: E402

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback only; read when Ray is imported


class Sampler:
    """Peak RSS of this process and all its descendants (the raylet, Ray's
    workers), peak object-store bytes in use and peak bytes in Ray's spill
    folders, sampled every 0.5 s; and the CPU seconds they all used (on a
    loaded machine, CPU per frame says more than wall-clock frames/s)."""

    def __init__(self, ray):
        import psutil
        self.psutil, self.ray = psutil, ray
        self.rss = 0
        self.store = 0
        self.spilled = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = self.psutil.Process()
        session = session_dir(self.ray)
        total = self.ray.cluster_resources().get("object_store_memory", 0)
        while not self._stop.is_set():
            rss = 0
            for p in [me] + me.children(recursive=True):
                try:
                    rss += p.memory_info().rss
                except self.psutil.Error:
                    pass
            self.rss = max(self.rss, rss)
            self.spilled = max(self.spilled, spill_dir_bytes(session))
            try:
                free = self.ray.available_resources().get("object_store_memory", total)
                self.store = max(self.store, int(total - free))
            except Exception:
                pass
            self._stop.wait(0.5)

    def cpu_by_process(self):
        """{pid: (kind, user + system CPU seconds)} of this process and every Ray process under it."""
        me = self.psutil.Process()
        out = {}
        for p in [me] + me.children(recursive=True):
            try:
                t = p.cpu_times()
                out[p.pid] = (process_kind(p, me), t.user + t.system)
            except self.psutil.Error:
                pass
        return out

    def __enter__(self):
        self._cpu0 = self.cpu_by_process()
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        end = self.cpu_by_process()
        self.cpu_kinds = {}
        for pid, (kind, c) in end.items():
            self.cpu_kinds[kind] = self.cpu_kinds.get(kind, 0.0) + c - self._cpu0.get(pid, (kind, 0.0))[1]
        self.cpu = sum(self.cpu_kinds.values())


def process_kind(p, me):
    """driver, worker (Ray's task and actor processes), raylet, gcs, or other (Ray's agents)."""
    if p.pid == me.pid:
        return "driver"
    cmd = " ".join(p.cmdline())
    if cmd.startswith("ray::") and "Actor" not in cmd.split()[0][5:] or "default_worker.py" in cmd:
        return "workers"
    for k in ("raylet", "gcs_server"):
        if k in cmd:
            return k
    return "other"


def session_dir(ray):
    """This run's own Ray session folder (not /tmp/ray/session_latest, which another Ray on the machine
    may have taken)."""
    try:
        return Path(ray._private.worker._global_node.get_session_dir_path())
    except Exception:
        return None


def spill_dir_bytes(session):
    """Bytes in the session's spill folders (Ray spills to <session>/ray_spilled_objects_<node> by
    default): objects spilled to disk and not yet freed."""
    total = 0
    if session is None:
        return 0
    try:  # Ray creates and removes files while this walks them
        for d in session.glob("ray_spilled_objects*"):
            for f in (d.rglob("*") if d.is_dir() else [d]):
                try:
                    total += f.stat().st_size if f.is_file() else 0
                except OSError:
                    pass
    except OSError:
        pass
    return total


def init(ray, cpus):
    """A local node on 127.0.0.1, tried once more if it timed out starting (a loaded machine)."""
    for attempt in range(2):
        try:
            # address="local": always a new node of our own, never a cluster another process started here
            return ray.init(address="local", num_cpus=cpus, include_dashboard=False, log_to_driver=False,
                            configure_logging=False)
        except Exception as exc:
            ray.shutdown()
            if attempt or "timed out during startup" not in str(exc):
                raise


def _import_reel_ray(row):
    import reel.ray  # noqa: F401
    return row


def warm_up(ray, cpus):
    """Starts the workers and has each import ray.data and reel.ray."""
    ray.data.range(cpus * 4, override_num_blocks=cpus * 4).map(_import_reel_ray).take_all()


def ray_spilled_bytes():
    """Bytes Ray has spilled in this session, from its own object-store stats (None: not available)."""
    import re
    try:
        from ray._private.internal_api import memory_summary
        m = re.search(r"Spilled (\d+) MiB", memory_summary(stats_only=True))
        return int(m.group(1)) << 20 if m else 0
    except Exception:
        return None


def floor_datasource(read_tasks):
    """A datasource with read_clips's read tasks' rows and blocks (counts,
    shapes, columns, one copy of each block) and no decoding: what Ray
    itself costs per row from a read task to iter_torch_batches."""
    import numpy as np
    from ray.data.block import BlockAccessor
    from ray.data.datasource import Datasource, ReadTask

    plans = [(t.metadata.num_rows, t.read_fn.config["batch_size"]) for t in read_tasks]
    meta = [t.metadata for t in read_tasks]
    shape = read_tasks[0].read_fn.clip_shape
    T = read_tasks[0].read_fn.config["frames_per_clip"]

    def read(rows, per_block):
        src = np.zeros((per_block,) + tuple(shape), dtype=np.uint8)
        done = 0
        while done < rows:
            k = min(per_block, rows - done)
            yield BlockAccessor.batch_to_block({
                "frames": np.array(src[:k], copy=True), "label": np.zeros(k, np.int64),
                "sample": np.arange(done, done + k, dtype=np.int64), "clip": np.zeros(k, np.int32),
                "frame_indices": np.zeros((k, T), np.int64), "pts_seconds": np.zeros((k, T)),
                "crop": np.zeros((k, 4), np.int32), "flipped": np.zeros(k, bool), "epoch": np.zeros(k, np.int64)})
            done += k

    class Floor(Datasource):
        def estimate_inmemory_data_size(self):
            return sum(m.size_bytes for m in meta)

        def get_read_tasks(self, parallelism, per_task_row_limit=None, data_context=None):
            return [ReadTask(lambda r=r, b=b: read(r, b), m) for (r, b), m in zip(plans, meta)]

    return Floor()


def bench_pack(ray, reel, src, work, cli, a):
    """reel.ray.pack against `reel pack --threads CPUS` on one node, --pack-runs
    times, alternated (a loaded machine drifts; ratios are per pair). Each run
    starts a fresh local Ray node first, outside the timing (its start-up is
    reported apart); reel.ray.pack's timing then includes everything after
    ray.init returns: the node's workers finishing their start-up (Ray does
    not wait for them), importing the task's module, planning, the parts,
    the merge. `reel pack --ray` (the CLI, starting and stopping its
    own local Ray) is timed whole as well."""
    import resource
    import statistics
    out1, out2, out3 = work / "store-one", work / "store-ray", work / "store-cli"
    runs = []
    for _ in range(a.pack_runs):
        for d in (out1, out2, out3):
            shutil.rmtree(d, ignore_errors=True)
        sample_load()
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([cli, "pack", str(src), str(out1), "--size", "256", "--threads", str(a.cpus),
                        "--no-progress"], check=True, stdout=subprocess.DEVNULL)
        one = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        one_cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
        t0 = time.perf_counter()
        init(ray, a.cpus)
        start = time.perf_counter() - t0
        try:
            with Sampler(ray) as smp:  # CPU of the driver and every Ray process (raylet, GCS, workers, agents)
                t0 = time.perf_counter()
                rep = reel.ray.pack(src, out2, size=256, threads=1, num_parts=a.pack_parts)
                on_ray = time.perf_counter() - t0
        finally:
            ray.shutdown()
        t0 = time.perf_counter()
        env = dict(os.environ, REEL_PYTHON=sys.executable, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
        env.pop("RAY_ADDRESS", None)
        r = subprocess.run([cli, "pack", str(src), str(out3), "--size", "256", "--ray", "--no-progress"],
                           capture_output=True, text=True, env=env)
        if r.returncode:
            raise RuntimeError(f"reel pack --ray failed ({r.returncode}): {r.stderr[-2000:]}")
        whole = time.perf_counter() - t0
        same = {(len(reel._reel.store_records(str(d))), reel.store_info(d)["frames"]) for d in (out1, out2, out3)}
        if len(same) != 1:
            raise RuntimeError(f"the three stores differ in (records, frames): {same}")
        ends = sorted(e for _, e in rep["part_spans"])
        tail = ends[-1] - ends[-min(a.cpus, len(ends))]  # how long the other CPUs had no part left
        runs.append(dict(one=one, ray=on_ray, ratio=one / on_ray, ray_start=start, cli=whole, cli_ratio=one / whole,
                         one_cpu=one_cpu, ray_cpu=smp.cpu, parts=rep["parts"], first_start=min(s for s, _ in rep["part_spans"]), tail=tail,
                         merge=on_ray - max(e for _, e in rep["part_spans"])))
        log(f"pack: {runs[-1]}")
    for d in (out1, out2, out3):
        shutil.rmtree(d, ignore_errors=True)
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    line = (f"Pack on one node ({a.cpus} CPUs, jpeg, short side 256; median of {len(runs)} alternated run(s)): "
            f"`reel pack --threads {a.cpus}` {med['one']:.1f} s, `reel.ray.pack` ({runs[0]['parts']} parts x 1 "
            f"thread, Ray hands each next part to the first free CPU) {med['ray']:.1f} s: {med['ratio']:.2f}x "
            f"(target 0.9x). Its timing starts when `ray.init` returns (a fresh local node each run, {med['ray_start']:.1f} "
            f"s, not counted) and counts the rest of Ray's start-up: the node's workers still booting (importing Ray, "
            f"about 1 CPU s each), then importing the task's module (the first part started "
            f"{med['first_start']:.1f} s in); then the parts (the last one finished {med['tail']:.1f} s after the "
            f"other CPUs had run out of parts) and the driver's merge ({med['merge']:.2f} s). Counting Ray's start and stop too, "
            f"`reel pack --ray` (the CLI, its own local Ray) took {med['cli']:.1f} s: {med['cli_ratio']:.2f}x. CPU "
            f"seconds: `reel pack` {med['one_cpu']:.1f}, `reel.ray.pack` {med['ray_cpu']:.1f} (the driver and every "
            f"Ray process).")
    return dict(runs=runs, median=med, line=line)


def decord_reachable():
    """Whether decord imports, here and in Ray's workers: from the environment, or from REEL_VLM_REF (the
    VLM reference folder scripts/deps.sh fills), then appended to PYTHONPATH, which the workers inherit."""
    import importlib.util
    if importlib.util.find_spec("decord") is not None:
        return True
    ref = os.environ.get("REEL_VLM_REF")
    if not ref or not (Path(ref) / "decord").is_dir():
        return False
    sys.path.append(ref)  # after the environment's own packages, so that its torchvision does not shadow them
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), ref) if p)
    return True


def make_dataset(root: Path, videos: int, seconds: float, cli: str) -> Path:
    ds = root / f"kinetics-{videos}x{seconds:g}s"
    if not (ds / "manifest.csv").exists():
        subprocess.run([cli, "synth", "--dataset", str(ds), "--videos", str(videos), "--seconds", str(seconds),
                        "--size", "340x256", "--fps", "25", "--jobs", "2"], check=True, stdout=subprocess.DEVNULL)
    return ds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--videos", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--min-seconds", type=float, default=0,
                    help="run epochs 0, 1, ... until the Loader has had this much work; read_clips and the floor "
                         "then go over the same epochs in one Ray execution (issue 15: >= 60)")
    ap.add_argument("--data", default=None, help="where the generated set goes (default: a temporary folder)")
    ap.add_argument("--skip-read-videos", action="store_true")
    ap.add_argument("--read-videos-videos", type=int, default=0,
                    help="read_videos over only the first N videos (it decodes every frame; 0: all)")
    ap.add_argument("--skip-pack", action="store_true")
    ap.add_argument("--skip-clip-decoder", action="store_true")
    ap.add_argument("--only-pack", action="store_true", help="only reel.ray.pack against reel pack")
    ap.add_argument("--pack-runs", type=int, default=1, help="alternated runs of the pack comparison (median)")
    ap.add_argument("--pack-parts", type=int, default=None, help="reel.ray.pack's num_parts (default: its own)")
    ap.add_argument("--write-doc", action="store_true")
    a = ap.parse_args()
    if not a.skip_read_videos and not a.only_pack and not decord_reachable():
        sys.exit("run_ray.py: ray.data.read_videos needs decord: export REEL_VLM_REF=<the folder scripts/deps.sh "
                 "installs qwen-vl-utils and decord into> (e.g. /work/deps-vlm/vlm-ref), or pass --skip-read-videos")
    t_start = time.perf_counter()
    import numpy as np
    import ray

    import reel
    import reel.ray

    cli = os.environ.get("REEL_CLI") or str(ROOT / "build" / "reel")
    work = Path(a.data or tempfile.mkdtemp(prefix="reel-ray-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    src = make_dataset(work, a.videos, a.seconds, cli)
    T, stride, size = 8, 4, 224
    opts = dict(frames_per_clip=T, frame_stride=stride, size=size, seed=0)
    reel.set_ffmpeg_log_level(0)
    if a.only_pack:
        pack = bench_pack(ray, reel, src, work, cli, a)
        print(pack["line"])
        (work / "results.json").write_text(json.dumps({"pack": pack}))
        return
    rows = []

    # 1. the Loader alone, epoch after epoch until --min-seconds of work
    import resource
    sample_load()
    planned = []  # the first epoch's clips, for ClipDecoder and read_videos
    clips = 0
    decoded = 0
    loader_s = 0.0
    epochs = 0
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    while epochs == 0 or loader_s < a.min_seconds:
        t0 = time.perf_counter()
        with reel.Loader(src, batch_size=32, decode_threads=a.cpus, epochs=1, first_epoch=epochs, **opts) as L:
            for b in L:
                clips += len(b.info)
                if epochs == 0:
                    planned += [(c.path, list(c.frame_indices)) for c in b.info]
            m = L.metrics()
        loader_s += time.perf_counter() - t0
        decoded += m["frames_decoded"]
        epochs += 1
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    loader_cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
    rows.append(dict(name="reel.Loader alone", fps=clips * T / loader_s, decoded_per_frame=decoded / (clips * T),
                     seconds=loader_s, cpu_ms_per_frame=1e3 * loader_cpu / (clips * T),
                     rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, store=0,
                     spilled=0))
    log(f"loader: {epochs} epochs, {rows[-1]}")

    def read_clips_all():
        # every epoch in one dataset; only the tensor columns (strings are no tensors), a projection Ray
        # pushes into the read tasks
        return reel.ray.read_clips(src, epochs=epochs, **opts).select_columns(list(reel.ray.TENSOR_COLUMNS))

    def timed(name, make_ds, count, fps_of=None, **extra):
        sample_load()
        spilled0 = ray_spilled_bytes() or 0
        with Sampler(ray) as s:
            t0 = time.perf_counter()
            n = count(make_ds())
            dt = time.perf_counter() - t0
        spilled = ray_spilled_bytes()
        frames = (fps_of or (lambda n: n * T))(n)
        row = dict(name=name, fps=frames / dt, seconds=dt, rss=s.rss, store=s.store,
                   cpu_ms_per_frame=1e3 * s.cpu / max(1, frames),
                   cpu_ms_by_kind={k: round(1e3 * v / max(1, frames), 2) for k, v in s.cpu_kinds.items()},
                   spilled=max(s.spilled, (spilled or 0) - spilled0), **extra)
        rows.append(row)
        log(f"{name}: {row}")
        return row

    def clip_rows(ds):
        n = 0
        for batch in ds.iter_torch_batches(batch_size=32):
            n += int((batch["clip"] >= 0).sum())
        return n

    init(ray, a.cpus)
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        # warm up the workers (start-up is not what is measured: importing ray.data and reel.ray costs a
        # new worker ~1.8 CPU s here), and import torch in the driver as a training script has
        # (iter_torch_batches would import it inside the first timing: ~3 CPU s)
        warm_up(ray, a.cpus)
        import torch  # noqa: F401

        # 2. read_clips + iter_torch_batches
        plan = reel.ray.ClipDatasource(src, epochs=epochs, **opts).get_read_tasks(1 << 30, data_context=ctx)
        timed("reel.ray.read_clips + iter_torch_batches(32)", read_clips_all, clip_rows,
              decoded_per_frame=rows[0]["decoded_per_frame"],
              note=f"{len(plan) // epochs} read tasks per epoch, blocks of <= "
                   f"{plan[0].read_fn.config['batch_size']} clips")

        # 3. the floor: Ray's own cost for the same rows and blocks (all epochs' read tasks), no decoding
        def floor_all():
            return ray.data.read_datasource(floor_datasource(plan), override_num_blocks=len(plan))

        timed("floor: same rows and blocks, no decoding, + iter_torch_batches(32)", floor_all, clip_rows,
              decoded_per_frame=0)

        # 5. ClipDecoder in map_batches over the Loader's planned clips (first epoch)
        items = [{"path": p, "frame_indices": fi} for p, fi in planned]
        a.skip_clip_decoder or timed("reel.ray.ClipDecoder in map_batches (1 epoch)", lambda: ray.data.from_items(
            items, override_num_blocks=a.cpus * 4).map_batches(
                reel.ray.ClipDecoder, fn_constructor_kwargs={"size": size, "crop": "center"}, batch_size=8,
                concurrency=a.cpus).drop_columns(["path", "failure"]),
              lambda ds: sum(len(b["frames"]) for b in ds.iter_torch_batches(batch_size=32)), decoded_per_frame=None)

        # 4. read_videos (decord) reduced to the clips' frames
        if not a.skip_read_videos:
            paths = sorted({p for p, _ in planned})
            if a.read_videos_videos:
                paths = paths[:a.read_videos_videos]
            wanted = {(p, i) for p, fi in planned for i in fi if p in set(paths)}

            def keep(batch):
                mask = np.array([(p, int(i)) in wanted for p, i in zip(batch["path"], batch["frame_index"])],
                                dtype=bool)
                return {k: v[mask] for k, v in batch.items()}

            all_frames = sum(len(reel.VideoDecoder(p)) for p in paths)
            row = timed(f"ray.data.read_videos (decord) -> the same clips' frames ({len(paths)} videos, 1 epoch)",
                        lambda: ray.data.read_videos(paths, include_paths=True, resize=(size, size)).map_batches(keep),
                        lambda ds: sum(len(b["frame"]) for b in ds.iter_batches(batch_size=256)),
                        fps_of=lambda n: n, decoded_per_frame=None)
            row["decoded_per_frame"] = all_frames / max(1, row["fps"] * row["seconds"])
    finally:
        ray.shutdown()

    # 6. reel.ray.pack vs reel pack, one node, same CPUs
    pack = None if a.skip_pack else bench_pack(ray, reel, src, work, cli, a)

    total_s = time.perf_counter() - t_start
    loader_fps = rows[0]["fps"]
    rc = rows[1]["fps"]
    fl = rows[2]["fps"]
    rv = next((r["fps"] for r in rows if r["name"].startswith("ray.data.read_videos")), None)
    # Ray's cost per clip row (the floor) added to the Loader's decode cost per row, on the same CPUs:
    # the most read_clips can give if the two only add up
    bound = 1.0 / (1.0 / loader_fps + 1.0 / fl)
    lines = ["## Ray", "",
             f"`{command_line('run_ray.py')}` on {cpu_model()}, reel {reel_version()}, Ray {ray.__version__}, "
             f"{a.cpus} CPUs for one local Ray node (127.0.0.1), load {load_summary()}; the whole run took "
             f"{total_s / 60:.1f} min. {a.videos} generated videos (`reel synth --dataset`, 340x256, 25 fps, "
             f"{a.seconds:g} s, GOP 250); {epochs} epoch(s) (0..{epochs - 1}, seed 0: {clips} clips, "
             f"{rows[0]['seconds']:.0f} s of Loader work) of one 8-frame clip per video at stride 4, 224x224 "
             "uint8; read_clips and the floor go over the same epochs in one Ray execution (one dataset: "
             f"`read_clips(epochs={epochs})`, its tensor columns selected). frames/s counts useful clip frames "
             "delivered. Ray's worker start-up is outside the "
             f"timings (warmed up first); one run each. read_clips: {rows[1]['note']}.", "",
             "| path | frames/s | x Loader | decoded per frame delivered | CPU ms per frame | s | peak RSS MB "
             "| peak object store MB | spilled MB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        dpf = f"{r['decoded_per_frame']:.2f}" if r["decoded_per_frame"] else ("0" if r["decoded_per_frame"] == 0 else "")
        lines.append(f"| {r['name']} | {r['fps']:.0f} | {r['fps'] / loader_fps:.2f} | {dpf} | "
                     f"{r['cpu_ms_per_frame']:.1f} | {r['seconds']:.1f} | "
                     f"{r['rss'] / 1e6:.0f} | {r['store'] / 1e6:.0f} | {r['spilled'] / 1e6:.0f} |")
    lines += [""]
    if pack:
        lines += [pack["line"], ""]
    lines += [f"Floor: Ray alone moves {fl:.0f} clip frames/s ({1e3 * T / fl:.1f} ms of these {a.cpus} CPUs per "
              f"clip row) against the Loader's {loader_fps:.0f} ({1e3 * T / loader_fps:.1f} ms per clip); if the "
              f"two costs only add up on the same CPUs, read_clips can reach at most {bound:.0f} frames/s = "
              f"{bound / loader_fps:.2f}x the Loader. Measured {rc / loader_fps:.2f}x, "
              f"{rc / bound:.2f} of that bound. In CPU time (all processes, driver and Ray's): the Loader "
              f"{rows[0]['cpu_ms_per_frame']:.1f} ms per frame, read_clips {rows[1]['cpu_ms_per_frame']:.1f}, "
              f"the floor {rows[2]['cpu_ms_per_frame']:.1f}; by process, read_clips "
              + ", ".join(f"{k} {v:.1f}" for k, v in sorted(rows[1]["cpu_ms_by_kind"].items()))
              + ", the floor "
              + ", ".join(f"{k} {v:.1f}" for k, v in sorted(rows[2]["cpu_ms_by_kind"].items())) + ". "
              f"With every CPU busy, that CPU per frame alone caps read_clips at "
              f"{rows[0]['cpu_ms_per_frame'] / rows[1]['cpu_ms_per_frame']:.2f}x the Loader (Ray's own "
              "processes cost CPU per second, not per frame: the slower the run, the more per frame).", "",
              f"Targets: read_clips {rc / loader_fps:.2f}x the Loader (target 0.8x)"
              + (f"; read_clips {rc / rv:.1f}x read_videos in useful clip frames/s (target 5x)" if rv else "")
              + f"; spilling: {max(r['spilled'] for r in rows) / 1e6:.0f} MB (target none).", ""]
    text = "\n".join(lines)
    print(text)
    (work / "results.json").write_text(json.dumps({"rows": rows, "pack": pack,
                                                   "epochs": epochs, "total_s": total_s}))
    if a.write_doc:
        write_doc(ROOT / "docs" / "BENCHMARKS.md", "## Ray", text)


if __name__ == "__main__":
    main()
