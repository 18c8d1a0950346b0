# tests/python/test_ray_pack.py: reel.ray.pack (issue 15 §2) on a local
# two-node Ray cluster on 127.0.0.1 (ray.cluster_utils.Cluster), started here
# and stopped even on failure: one node is killed (its raylet and the task's
# process) while its part waits on a video that a proxy holds, and the build
# completes, every record byte-identical to a one-machine reel.pack of the
# same input and options, the failures listed; object storage refused as
# out_dir; `reel pack --ray` from the CLI.
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import reel
import reel._testing
from faultproxy import fault_proxy
from servers import nginx

# Ray reads this when it is imported: nodes then bind to 127.0.0.1
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
ray = pytest.importorskip("ray", reason="could not import 'ray' (pip install 'reel[ray]')")
from ray.cluster_utils import Cluster  # noqa: E402

import reel.ray as rray  # noqa: E402


@pytest.fixture(scope="module")
def videos(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("packvideos")
    for c, cls in enumerate(("archery", "bowling")):
        (root / cls).mkdir()
        for v in range(6):
            reel._testing.write_video(str(root / cls / f"v{v}.mp4"), width=160, height=120, frames=60 + 6 * v,
                                      gop=12, seed=1 + v + 10 * c)
    (root / "bowling" / "zz_damaged.mp4").write_bytes((root / "archery" / "v0.mp4").read_bytes()[:600])
    return root


@pytest.fixture(scope="module")
def cluster():
    """A head node and one worker node, 1 CPU each, on 127.0.0.1."""
    assert not ray._private.ray_constants.ENABLE_RAY_CLUSTER
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}  # Ray replaces them
    head = {"num_cpus": 1, "include_dashboard": False, "object_store_memory": 128 << 20}
    try:
        c = Cluster(initialize_head=True, head_node_args=head)
    except Exception as exc:  # Ray waits 30 s, fixed, for a node to start: once more on a loaded machine
        if "timed out during startup" not in str(exc):
            raise
        c = Cluster(initialize_head=True, head_node_args=head)
    try:
        c.add_node(num_cpus=1, object_store_memory=128 << 20)
        ray.init(address=c.address, log_to_driver=False, configure_logging=False)
        c.wait_for_nodes()
        assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
        yield c
    finally:
        ray.shutdown()
        c.shutdown()
        for s, h in handlers.items():
            signal.signal(s, h)


def _records(store):
    """{source path: (status, reason, bytes of the record)}"""
    out = {}
    for r in reel._reel.store_records(str(store)):
        data = b""
        if r["status"] == 0:
            with open(os.path.join(store, r["shard"]), "rb") as f:
                f.seek(r["offset"])
                data = f.read(r["length"])
            assert len(data) == r["length"]
        out[r["path"]] = (r["status"], r["reason"], data)
    return out


def _kill(pid: int) -> None:
    """SIGKILL and wait (bounded) until the process is gone."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return  # dead, not yet reaped (its parent, the raylet, is gone too)
        except (OSError, IndexError):
            return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} outlived SIGKILL for 30 s")


def test_a_node_killed_mid_build_and_the_records_equal_a_one_machine_pack(cluster, videos, tmp_path):
    # The videos come by HTTP through a proxy that holds the second video of
    # each part (part I packs dataset indices i % 2 == I) until the test
    # releases it: each part stops after one video, so the worker node is
    # killed mid-part on a machine of any speed, and only then released.
    names = sorted(str(p.relative_to(videos)) for p in videos.rglob("*.mp4"))
    assert len(names) == 13
    count = 2  # 6 or 7 videos a part
    opts = dict(size=96, format="jpeg", quality=85)
    with nginx(videos) as base, fault_proxy(base) as proxy:
        manifest = tmp_path / "train.csv"
        manifest.write_text("path,label\n" + "".join(f"{proxy.base}/{n},{n.split('/')[0]}\n" for n in names))
        one = tmp_path / "one"
        proxy.release.set()
        reel.pack(manifest, one, **opts)
        proxy.release.clear()
        proxy.hold = tuple(f"/{names[i]} " for i in (2, 3))  # the second video of part 0 and of part 1
        out = tmp_path / "ray"
        result: dict = {}
        progress: list = []

        def build():
            try:
                result["report"] = rray.pack(manifest, out, num_parts=count, threads=1, poll_seconds=0.1,
                                             progress=progress.append, **opts)
            except BaseException as exc:  # noqa: B036 - handed to the test thread
                result["error"] = exc

        t = threading.Thread(target=build)
        t.start()
        head = cluster.head_node
        worker = next(n for n in cluster.list_all_nodes() if n is not head)
        killed_part = None
        deadline = time.monotonic() + 120
        try:
            while t.is_alive() and killed_part is None and time.monotonic() < deadline:
                for p in rray.read_progress(str(out), count):
                    if p["node"] == worker.node_id and p["videos_done"] == 1:
                        # the node dies mid-part: its raylet, then the task's
                        # process (which would otherwise live on until it
                        # noticed, and could hand its result to the driver)
                        cluster.remove_node(worker, allow_graceful=False)
                        _kill(p["pid"])
                        killed_part = p["part"]
                        break
                time.sleep(0.05)
        finally:
            proxy.release.set()
            t.join(timeout=240)
            if killed_part is not None:  # the next tests get two nodes again
                cluster.add_node(num_cpus=1, object_store_memory=128 << 20)
                cluster.wait_for_nodes()
        assert not t.is_alive(), "the build did not finish"
        assert "error" not in result, result.get("error")
        assert killed_part is not None, f"no part was seen in progress on the worker node: {progress[-3:]}"
        assert proxy.held >= 2, "the proxy held fewer requests than there are parts"
    rep = result["report"]
    assert rep["parts"] == count and rep["videos"] == 13 and rep["packed"] == 12 and rep["failed"] == 1
    # the killed part went on from its journal on the other node
    assert len(rep["part_nodes"]) == count
    assert rep["part_nodes"][killed_part] == head.node_id
    assert rep["resumed"] >= 1, "the retried part did not resume from its journal"
    # the driver's progress: every video counted once at the end, the failure too
    assert progress and progress[-1]["videos_total"] == 13
    assert progress[-1]["videos_done"] == 13 and progress[-1]["videos_failed"] == 1, progress[-1]
    assert [f["path"] for f in rep["failures"]] == [f"{proxy.base}/bowling/zz_damaged.mp4"]
    assert rep["failures"][0]["reason"]
    a, b = _records(one), _records(out)
    assert set(a) == set(b) and len(a) == 13
    for path in a:
        assert a[path] == b[path], f"{path}: record differs from the one-machine pack"
    assert reel.store_verify(out)["ok"]
    # the store delivers the same frames
    cfg = dict(frames_per_clip=4, size=64, batch_size=4, decode_threads=1, seed=2, shuffle_window="full")
    with reel.Loader(one, **cfg) as l1, reel.Loader(out, **cfg) as l2:
        f1 = sorted((c.path, c.frame_indices) for b in l1 for c in b.info)
        f2 = sorted((c.path, c.frame_indices) for b in l2 for c in b.info)
    assert f1 == f2 and len(f1) == 12


def test_object_storage_out_dir_is_refused(cluster, videos):
    with pytest.raises(ValueError, match="object storage"):
        rray.pack(videos, "s3://bucket/store?X-Amz-Signature=secret")
    with pytest.raises(ValueError) as e:
        rray.pack(videos, "https://user:pw@example.invalid/store")
    assert "pw" not in str(e.value)


def test_reel_pack_cli_with_ray(cluster, videos, tmp_path):
    cli = os.environ.get("REEL_CLI") or shutil.which("reel")
    if not cli or not os.path.exists(cli):
        pytest.skip("the reel CLI is not built (set REEL_CLI)")
    deadline = time.monotonic() + 30  # a node added by an earlier test shows in the resources shortly
    while ray.cluster_resources().get("CPU") != 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ray.cluster_resources().get("CPU") == 2
    out = tmp_path / "cli"
    env = dict(os.environ, REEL_PYTHON=sys.executable)
    r = subprocess.run([cli, "pack", str(videos), str(out), "--size", "96", "--quality", "85", "--ray",
                        cluster.address, "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    import json
    rep = json.loads(r.stdout.strip().splitlines()[-1])
    assert rep["packed"] == 12 and rep["failed"] == 1 and rep["merged"]
    # by default eight parts per task slot (2 CPUs, 1 thread each), at most one
    # per video: 13 here, more than the cluster runs at once, each handed to
    # the first free CPU
    assert rep["parts"] == 13 and len(rep["part_spans"]) == 13
    assert all(0 <= a <= b for a, b in rep["part_spans"])
    one = tmp_path / "one"
    reel.pack(videos, one, size=96, quality=85)
    assert _records(one) == _records(out)
