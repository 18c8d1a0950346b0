# tests/python/test_remote.py: remote input (issue 9) against real servers on
# 127.0.0.1: nginx serving the shared videos (frames by URL equal frames by
# path, byte for byte) and a packed store (the loader over its URL equals the
# loader over the local store), moto's S3 with SigV4-signed reads, a wrong
# secret (PermissionDeniedError), a missing object, and no credential in any
# message; remote datasets: a manifest by URL (relative entries resolve
# against it) and an S3 prefix listed with ListObjectsV2 over several pages,
# each giving the batches of the same local dataset byte for byte, the same
# labels and frames that carry the indices reported (REEL_S3_LIST_PAGE makes
# pages of 2 keys), an empty prefix (EMPTY) and a wrong secret; faults
# through a proxy (latency, resets, 503 bursts, bodies cut short, a server
# that stops answering): with retries every clip arrives and the retries are
# counted, without them the failures are named, and nothing hangs; https with
# the test's own certificate (refused by default, trusted as ca_bundle;
# connections and TLS sessions reused, per nginx's log); fetch-ahead and its
# byte budget; a server that ignores Range (read whole, or refused by name);
# bearer tokens; S3 credentials from a profile file; virtual-hosted addressing;
# every value reel shows of a URL (exception, decoder, clip, failure) redacted.
from __future__ import annotations

import os
import threading

import pytest

import reel
import reel._testing
from conftest import read_indices
from faultproxy import fault_proxy
from servers import moto_s3, moto_s3_user, nginx
from servers import with_environ as _with_env

VIDEOS = ["nasa_13013.mp4", "carphone_pristine.mp4", "big_buck_bunny_0_30.webm", "test.avi", "video_90.mov"]


@pytest.fixture(scope="module")
def http_videos(shared_videos):
    with nginx(shared_videos) as base:
        yield base


def _frames(source, idx):
    with reel.VideoDecoder(source, threads=1) as d:
        n = d.metadata.num_frames
        want = sorted({i % n for i in idx})
        return n, bytes(memoryview(d.get_frames_at(want)))


@pytest.mark.parametrize("name", VIDEOS)
def test_frames_by_url_equal_frames_by_path(http_videos, shared_videos, name):
    if not (shared_videos / name).exists():
        pytest.skip(f"{name} not in the shared videos")
    idx = [0, 1, 7, 30, 55, -1]
    with reel.VideoDecoder(str(shared_videos / name)) as d:
        last = d.metadata.num_frames - 1
    idx = [min(i, last) if i >= 0 else last for i in idx]
    n_path, by_path = _frames(str(shared_videos / name), idx)
    n_url, by_url = _frames(f"{http_videos}/{name}", idx)
    assert n_url == n_path
    assert by_url == by_path


def test_missing_and_redacted(http_videos):
    url = http_videos.replace("http://", "http://someone:hunter2@") + "/nothing-here.mp4?X-Amz-Signature=topsecret"
    with pytest.raises(reel.NotFoundError) as e:
        reel.VideoDecoder(url)
    msg = str(e.value)
    assert "404" in msg and "nothing-here.mp4" in msg
    assert "hunter2" not in msg and "topsecret" not in msg and "someone" not in msg


def test_loader_over_a_store_by_url_equals_local(tmp_path):
    src = tmp_path / "videos"
    for c in ("a", "b"):
        (src / c).mkdir(parents=True)
        for v in range(3):
            reel._testing.write_video(str(src / c / f"v{v}.mp4"), width=96, height=64, frames=24, gop=8, seed=v + 1)
    root = tmp_path / "www"
    root.mkdir()
    reel.pack(src, root / "st", size=64, shard_size=1 << 16)  # several shards
    assert len(list((root / "st").glob("shard-*.bin"))) > 1

    def epoch(source):
        with reel.Loader(source, frames_per_clip=4, size=64, batch_size=3, seed=2, decode_threads=2) as L:
            return [(bytes(memoryview(b.frames)), list(memoryview(b.labels))) for b in L]

    local = epoch(root / "st")
    with nginx(root) as base:
        remote = epoch(f"{base}/st")
        assert reel.dataset_info(f"{base}/st") == {"size": 6, "class_names": ["a", "b"], "skipped": []}
        with pytest.raises(reel.NotFoundError):
            reel.Loader(f"{base}/no-store-here")
    assert remote == local


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    pytest.importorskip("boto3")
    with moto_s3() as endpoint:
        keys, client = moto_s3_user(endpoint, "reel")
        client.create_bucket(Bucket="videos")
        d = tmp_path_factory.mktemp("s3src")
        reel._testing.write_video(str(d / "clip.mp4"), width=128, height=96, frames=40, gop=10)
        client.upload_file(str(d / "clip.mp4"), "videos", "train/cat/clip one.mp4")
        yield keys, d / "clip.mp4"


def test_s3_signed_read_equals_local(s3):
    keys, local = s3
    idx = [0, 9, 10, 39]
    want = _frames(str(local), idx)
    got = _with_env(keys, lambda: _frames("s3://videos/train/cat/clip one.mp4", idx))
    assert got == want


def test_s3_wrong_secret_is_permission_denied_and_never_printed(s3):
    keys, _ = s3
    bad = dict(keys, AWS_SECRET_ACCESS_KEY="wrong-secret-never-print")

    def open_it():
        with pytest.raises(reel.PermissionDeniedError) as e:
            reel.VideoDecoder("s3://videos/train/cat/clip one.mp4")
        return str(e.value)

    msg = _with_env(bad, open_it)
    assert "403" in msg and "videos/train/cat" in msg
    assert "wrong-secret" not in msg and keys["AWS_SECRET_ACCESS_KEY"] not in msg
    with pytest.raises(reel.NotFoundError):
        _with_env(keys, lambda: reel.VideoDecoder("s3://videos/train/cat/missing.mp4"))


def _kinetics(root, classes=("archery", "bowling"), per_class=2):
    for ci, c in enumerate(classes):
        (root / c).mkdir(parents=True)
        for v in range(per_class):
            reel._testing.write_video(str(root / c / f"v{v}.mp4"), width=96, height=64, frames=24, gop=8,
                                      seed=10 * ci + v + 1)
    return root


def _epoch(source):
    with reel.Loader(source, frames_per_clip=4, size=48, batch_size=2, seed=3, decode_threads=2) as L:
        return [(bytes(memoryview(b.frames)), list(memoryview(b.labels)), [c.frame_indices for c in b.info])
                for b in L]


def test_loader_over_a_manifest_by_url_equals_the_local_run(tmp_path):
    root = _kinetics(tmp_path / "www" / "ds")
    lines = ["path,label"] + [f"{c}/v{v}.mp4,{c}" for c in ("archery", "bowling") for v in range(2)]
    (root / "train.csv").write_text("\n".join(lines) + "\n")
    local = _epoch(root / "train.csv")
    with nginx(tmp_path / "www") as base:
        url = f"{base}/ds/train.csv"
        assert reel.dataset_info(url) == {"size": 4, "class_names": ["archery", "bowling"], "skipped": []}
        assert _epoch(url) == local
        # a query string is not part of the manifest's name, nor of its folder
        assert _epoch(url + "?version=2") == local
        with pytest.raises(reel.NotFoundError) as e:
            reel.dataset_info(f"{base}/ds/missing.csv?X-Amz-Signature=topsecret")
        assert "missing.csv" in str(e.value) and "topsecret" not in str(e.value)
        # an http folder is not a dataset: HTTP has no listing
        with pytest.raises(reel.NotFoundError) as e:
            reel.dataset_info(f"{base}/ds/")
        assert "manifest" in str(e.value)


@pytest.mark.slow
def test_s3_prefix_is_a_dataset_listed_over_pages(s3, tmp_path):
    boto3 = pytest.importorskip("boto3")
    keys, _ = s3
    client = boto3.client("s3", endpoint_url=keys["AWS_ENDPOINT_URL"], region_name="us-east-1",
                          aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"])
    root = _kinetics(tmp_path / "kin")
    for f in sorted(root.rglob("*.mp4")):
        client.upload_file(str(f), "videos", f"kinetics/train/{f.relative_to(root)}")
    # more than one page of keys (1,000 a page): sidecars, hidden and
    # non-video objects the listing walks past, as a local scan would
    for i in range(1010):
        client.put_object(Bucket="videos", Key=f"kinetics/train/archery/notes/{i:05d}.txt", Body=b"x")
    client.put_object(Bucket="videos", Key="kinetics/train/bowling/.hidden.mp4", Body=b"x")
    client.put_object(Bucket="videos", Key="kinetics/trainee/other.mp4", Body=b"x")  # not under the prefix
    local_info = reel.dataset_info(root)
    local = _epoch(root)
    for prefix in ("s3://videos/kinetics/train/", "s3://videos/kinetics/train"):
        info = _with_env(keys, lambda p=prefix: reel.dataset_info(p))
        assert info == local_info == {"size": 4, "class_names": ["archery", "bowling"], "skipped": []}
    assert _with_env(keys, lambda: _epoch("s3://videos/kinetics/train/")) == local
    with pytest.raises(reel.ReelError) as e:
        _with_env(keys, lambda: reel.dataset_info("s3://videos/nothing-here/"))
    assert "nothing-here" in str(e.value)
    bad = dict(keys, AWS_SECRET_ACCESS_KEY="wrong-secret-never-print")
    with pytest.raises(reel.PermissionDeniedError) as e:
        _with_env(bad, lambda: reel.dataset_info("s3://videos/kinetics/train/"))
    assert "wrong-secret" not in str(e.value) and keys["AWS_SECRET_ACCESS_KEY"] not in str(e.value)


def _s3_client(keys):
    boto3 = pytest.importorskip("boto3")
    return boto3.client("s3", endpoint_url=keys["AWS_ENDPOINT_URL"], region_name="us-east-1",
                        aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"])


# a class and a file whose names URLs encode (moto 5 refuses the signature of
# keys with & ' < >, so XML entities in keys are covered by the C unit test
# of the listing parser instead)
ODD_CLASSES = ("archery", "bowling", "hip hop")


def _odd_kinetics(root):
    _kinetics(root, classes=ODD_CLASSES)
    reel._testing.write_video(str(root / "archery" / "v2 extra.mp4"), width=96, height=64, frames=24, gop=8, seed=7)
    return root


def _labels_and_frames(source, *roots):
    """{path below the first of `roots` it is under: label} over one epoch of
    `source`, checking on the way that every clip's frames carry the indices
    the loader reports."""
    got = {}
    with reel.Loader(source, frames_per_clip=4, crop=None, size=(64, 96), layout="BTHWC", batch_size=2, seed=5,
                     decode_threads=2, epochs=1) as L:
        for b in L:
            assert read_indices(b.frames) == [i for info in b.info for i in info.frame_indices]
            for info in b.info:
                root = next((r for r in roots if info.path.startswith(r)), None)
                assert root is not None, (info.path, roots)
                got[info.path[len(root):]] = info.label
    return got


def test_s3_prefix_over_small_pages_equals_the_local_folder(s3, tmp_path):
    keys, _ = s3
    client = _s3_client(keys)
    root = _odd_kinetics(tmp_path / "kin")
    for f in sorted(root.rglob("*.mp4")):
        client.upload_file(str(f), "videos", f"paged/train/{f.relative_to(root)}")
    for k in ("bowling/notes.txt", "hip hop/.hidden.mp4", ".cache/x.mp4", "readme.md"):
        client.put_object(Bucket="videos", Key=f"paged/train/{k}", Body=b"x")
    client.put_object(Bucket="videos", Key="paged/empty/readme.txt", Body=b"x")
    client.put_object(Bucket="videos", Key="paged/empty/a/.hidden.mp4", Body=b"x")
    local_info = reel.dataset_info(root)
    assert local_info == {"size": 7, "class_names": sorted(ODD_CLASSES), "skipped": []}
    local = _labels_and_frames(str(root), f"{root}/")
    # 2 keys a page: 11 objects under the prefix take 6 pages, all followed
    paged = dict(keys, REEL_S3_LIST_PAGE="2")
    for url in ("s3://videos/paged/train/", "s3://videos/paged/train"):
        assert _with_env(paged, lambda u=url: reel.dataset_info(u)) == local_info
    remote = _with_env(paged, lambda: _labels_and_frames("s3://videos/paged/train/", "s3://videos/paged/train/"))
    assert remote == local and len(local) == 7
    assert local["archery/v2 extra.mp4"] == 0 and local["bowling/v0.mp4"] == 1 and local["hip hop/v1.mp4"] == 2
    # a prefix with objects but no video, and one with no object at all
    for url in ("s3://videos/paged/empty/", "s3://videos/paged/nothing-here/"):
        with pytest.raises(reel.ReelError) as e:
            _with_env(paged, lambda u=url: reel.dataset_info(u))
        assert e.value.status == reel.Status.EMPTY and url in str(e.value), str(e.value)
    # the page size is checked, not taken blindly
    with pytest.raises(reel.InvalidArgumentError) as e:
        _with_env(dict(keys, REEL_S3_LIST_PAGE="0"), lambda: reel.dataset_info("s3://videos/paged/train/"))
    assert "REEL_S3_LIST_PAGE" in str(e.value)
    # wrong credentials: refused, named, and the secrets never printed
    bad = dict(paged, AWS_SECRET_ACCESS_KEY="wrong-secret-never-print")
    with pytest.raises(reel.PermissionDeniedError) as e:
        _with_env(bad, lambda: reel.dataset_info("s3://videos/paged/train/"))
    msg = str(e.value)
    assert e.value.status == reel.Status.PERMISSION and "s3://videos/paged/train" in msg
    assert "wrong-secret" not in msg and keys["AWS_SECRET_ACCESS_KEY"] not in msg


def test_remote_manifests_resolve_relative_entries_against_their_url(s3, tmp_path):
    keys, _ = s3
    client = _s3_client(keys)
    www = tmp_path / "www"
    root = _odd_kinetics(www / "ds")
    videos = sorted(str(f.relative_to(root)) for f in root.rglob("*.mp4"))
    local = _labels_and_frames(str(root), f"{root}/")

    def jsonl(prefix):
        import json
        return "".join(json.dumps({"path": prefix + v, "label": v.split("/")[0]}) + "\n" for v in videos)

    # by http: relative entries next to the manifest and one folder up
    (root / "lists").mkdir()
    (root / "lists" / "train.jsonl").write_text(jsonl("../"))
    (root / "train.csv").write_text("path,label\n" + "".join(f'"{v}",{v.split("/")[0]}\n' for v in videos))
    with nginx(www) as base:
        for url in (f"{base}/ds/train.csv", f"{base}/ds/lists/train.jsonl"):
            assert reel.dataset_info(url) == {"size": 7, "class_names": sorted(ODD_CLASSES), "skipped": []}
        assert _labels_and_frames(f"{base}/ds/train.csv", f"{base}/ds/") == local
        assert _labels_and_frames(f"{base}/ds/lists/train.jsonl", f"{base}/ds/lists/../") == local
    # by s3: relative entries, and an absolute URL (elsewhere in the bucket) kept
    moved = "archery/v1.mp4"
    for v in videos:
        client.upload_file(str(root / v), "videos", f"elsewhere/{v}" if v == moved else f"mani/{v}")
    text = jsonl("").replace(f'"{moved}"', f'"s3://videos/elsewhere/{moved}"')
    assert text.count('"s3://videos/elsewhere/') == 1
    client.put_object(Bucket="videos", Key="mani/train.jsonl", Body=text.encode())
    info = _with_env(keys, lambda: reel.dataset_info("s3://videos/mani/train.jsonl"))
    assert info == {"size": 7, "class_names": sorted(ODD_CLASSES), "skipped": []}
    remote = _with_env(keys, lambda: _labels_and_frames("s3://videos/mani/train.jsonl", "s3://videos/mani/",
                                                        "s3://videos/elsewhere/"))
    assert remote == local
    # a URL curl cannot parse fails at once, not after retries
    with pytest.raises(reel.InvalidArgumentError) as e:
        reel.dataset_info("http://[::1/train.csv")
    assert "tries" not in str(e.value)


# many small range requests per video, so the faults below hit every video
SMALL_READS = {"whole_object_max": 0, "readahead_min": 4096, "readahead_max": 8192}


def _faulty_set(tmp_path):
    root = _kinetics(tmp_path / "www" / "ds", per_class=3)
    lines = ["path,label"] + [f"{c}/v{v}.mp4,{c}" for c in ("archery", "bowling") for v in range(3)]
    (root / "train.csv").write_text("\n".join(lines) + "\n")
    return root


def _run(source, **kw):
    with reel.Loader(source, frames_per_clip=4, size=48, batch_size=2, seed=3, decode_threads=2, epochs=1, **kw) as L:
        batches = [(bytes(memoryview(b.frames)), list(memoryview(b.labels))) for b in L]
        return batches, L.metrics()


def test_faults_with_retries_deliver_every_clip_and_count_the_retries(tmp_path):
    root = _faulty_set(tmp_path)
    local, _ = _run(root / "train.csv")
    with nginx(tmp_path / "www") as base, fault_proxy(base) as proxy:
        proxy.latency = 0.02
        proxy.reset_every = 7
        proxy.burst_every = 11
        proxy.cut_every = 13
        got, m = _run(f"{proxy.base}/ds/train.csv",
                      remote=dict(SMALL_READS, max_retries=6, request_timeout=10))
        assert proxy.faults["reset"] > 0 and proxy.faults["503"] > 0 and proxy.faults["cut"] > 0
    assert m["coverage"] == 1.0 and m["failure_count"] == 0
    assert got == local
    r = m["remote"]
    assert r["requests"] >= 6 and r["retries"] > 0 and r["failures"] == 0
    assert r["bytes_fetched"] > 0 and 0 < r["request_p50_s"] <= r["request_p99_s"]
    # retries by cause: resets, 503 bursts and bodies cut short, each seen
    by = r["retries_by_cause"]
    assert sum(by.values()) == r["retries"] and sum(r["failures_by_cause"].values()) == 0
    assert by["connection"] > 0 and by["server"] > 0 and by["short_body"] > 0, by
    # stage 1 over URLs is I/O-bound: a larger pool by default, named "fetch"
    assert m["stages"][0]["threads"] >= 8 and m["stages"][0]["name"] == "fetch"


def test_faults_without_retries_are_named_failures(tmp_path):
    _faulty_set(tmp_path)
    with nginx(tmp_path / "www") as base, fault_proxy(base) as proxy:
        # the manifest itself is fetched before the faults begin
        info = reel.dataset_info(f"{proxy.base}/ds/train.csv")
        assert info["size"] == 6
        proxy.reset_every = 9
        proxy.burst_every = 7
        proxy.burst_length = 1
        proxy.cut_every = 11
        with reel.Loader(f"{base}/ds/train.csv".replace(base, proxy.base), frames_per_clip=4, size=48,
                         batch_size=2, seed=3, decode_threads=2, on_error="skip", epochs=1,
                         remote=dict(SMALL_READS, max_retries=0, request_timeout=10)) as L:
            n = sum(len(b) for b in L)
            m = L.metrics()
    assert m["failure_count"] > 0 and n == 6 - m["failure_count"]
    assert m["coverage"] < 1.0 and m["remote"]["failures"] > 0
    assert sum(m["remote"]["failures_by_cause"].values()) == m["remote"]["failures"]
    assert m["remote"]["retries"] == 0 and sum(m["remote"]["retries_by_cause"].values()) == 0
    reasons = " | ".join(f["reason"] for f in m["failures"])
    assert f"{proxy.base}/ds/" in reasons  # each failure names its video's URL
    assert any(w in reasons for w in ("HTTP 503", "cut short", "partial file", "reset", "receiving data",
                                      "Empty reply")), reasons


def test_a_server_that_stops_answering_hits_the_time_limits(tmp_path):
    _faulty_set(tmp_path)
    with nginx(tmp_path / "www") as base, fault_proxy(base) as proxy:
        assert reel.dataset_info(f"{proxy.base}/ds/train.csv")["size"] == 6
        proxy.stall = True
        # the request timeout: a named failure (here the epoch's only sample,
        # so the epoch ends with it), not a hang
        with reel.Loader([(f"{proxy.base}/ds/archery/v0.mp4", 0)], frames_per_clip=2, size=32, batch_size=1,
                         decode_threads=1, epochs=1, remote=dict(request_timeout=0.5, max_retries=0)) as L:
            with pytest.raises(reel.ReelError) as e:
                list(L)
            m = L.metrics()
        assert "archery/v0.mp4" in str(e.value) and "timeout" in str(e.value).lower()
        assert m["failure_count"] == 1 and m["remote"]["failures"] == 1
        # the per-sample time limit interrupts a transfer that would wait 30 s
        # (the message says which limit ended it, so no clock is needed)
        with reel.Loader([(f"{proxy.base}/ds/bowling/v1.mp4", 0)], frames_per_clip=2, size=32, batch_size=1,
                         decode_threads=1, epochs=1, sample_time_limit=0.5,
                         remote=dict(request_timeout=30, max_retries=0)) as L:
            with pytest.raises(reel.ReelError) as e:
                list(L)
            m = L.metrics()
        assert "bowling/v1.mp4" in str(e.value) and m["failure_count"] == 1
        assert "time limit" in str(e.value) or "timed out" in str(e.value).lower(), str(e.value)


def test_no_secret_in_messages_metrics_or_trace(s3, tmp_path):
    keys, _ = s3
    secret = keys["AWS_SECRET_ACCESS_KEY"]

    def run():
        with reel.Loader("s3://videos/train/", frames_per_clip=2, size=32, batch_size=1, epochs=1, trace=True,
                         decode_threads=1) as L:
            n = sum(len(b) for b in L)
            L.write_trace(tmp_path / "trace.json")
            return n, L.metrics()

    n, m = _with_env(keys, run)
    assert n == 1 and m["remote"]["requests"] > 0 and m["remote"]["bytes_fetched"] > 0
    assert secret not in repr(m) and keys["AWS_ACCESS_KEY_ID"] not in repr(m)
    text = (tmp_path / "trace.json").read_text()
    assert "clip one.mp4" in text and secret not in text


def test_fetch_by_gop_reads_only_the_packets_a_clip_needs(tmp_path):
    """An 8-frame clip from the middle of a 60 s video costs the container's
    head and index plus one request for its GOP's packets: not the file, and
    not the readahead's megabytes."""
    reel._testing.write_video(str(tmp_path / "long.mp4"), width=320, height=240, frames=1500, gop=25, seed=3)
    size = (tmp_path / "long.mp4").stat().st_size
    want = list(range(750, 758))
    with reel.VideoDecoder(str(tmp_path / "long.mp4")) as v:
        local = bytes(memoryview(v.get_frames_at(want)))
        pos = v._dec.frame_table()[2]
    gop_bytes = pos[775] - pos[750]  # keyframes every 25 frames
    with nginx(tmp_path) as base:
        # whole_object_max=0: not fetched whole, as a large file would not be
        with reel.VideoDecoder(f"{base}/long.mp4", remote={"whole_object_max": 0}) as v:
            opened = v.remote_stats
            got = bytes(memoryview(v.get_frames_at(want)))
            after = v.remote_stats
    assert got == local
    # opening: the head and the index (moov), two requests; the index check
    # reads only packets the head holds already
    assert opened["requests"] <= 2, opened
    assert opened["object_bytes"] == size and after["object_bytes"] == size
    clip_bytes = after["bytes_fetched"] - opened["bytes_fetched"]
    assert after["requests"] - opened["requests"] == 1  # one GET for the run
    assert 0 < clip_bytes <= gop_bytes
    assert after["bytes_fetched"] < 0.15 * size, (after, size)


def test_shutdown_stops_a_stalled_transfer_at_once(tmp_path):
    """The interrupt reaches a transfer that receives nothing: closing a loader
    whose only request is stalled, and the worker freed after a per-sample
    time limit, both end the transfer rather than wait out its 30 s request
    timeout. Events and bounded waits, no clock: the close runs in a thread
    that must be done within 10 s (a third of the timeout it cuts short)."""
    reel._testing.write_video(str(tmp_path / "v.mp4"), width=96, height=64, frames=24, gop=8)

    def closes_within(obj, bound=10.0):
        t = threading.Thread(target=obj.close)
        t.start()
        t.join(bound)
        return not t.is_alive()

    with nginx(tmp_path) as base, fault_proxy(base) as proxy:
        proxy.stall = True
        L = reel.Loader([(f"{proxy.base}/v.mp4", 0)], frames_per_clip=2, size=32, batch_size=1, decode_threads=1,
                        epochs=1, remote=dict(request_timeout=30, max_retries=0))
        for _ in range(1000):  # the open request reaches the proxy and stalls there (bounded: 10 s)
            if proxy.faults["stall"]:
                break
            threading.Event().wait(0.01)
        assert proxy.faults["stall"] >= 1, proxy.faults
        assert closes_within(L)
        L = reel.Loader([(f"{proxy.base}/v.mp4", 0)], frames_per_clip=2, size=32, batch_size=1, decode_threads=1,
                        epochs=1, sample_time_limit=0.3, remote=dict(request_timeout=30, max_retries=0))
        try:
            with pytest.raises(reel.ReelError):
                list(L)
        finally:
            assert closes_within(L)  # the close waits for the interrupted worker


def test_index_cache_for_urls(tmp_path, monkeypatch):
    """Sidecar indexes of videos at URLs live in a local cache (REEL_INDEX_CACHE
    or index_cache_dir), named by the URL and valid only for the object's
    size and ETag: built once (`reel index URL --cache DIR`, or a decoder
    with index_mode="read_write"), used by later opens, and ignored once the object
    changes."""
    import subprocess
    from pathlib import Path as P
    www = tmp_path / "www"
    www.mkdir()
    reel._testing.write_video(str(www / "v.mkv"), width=96, height=64, frames=40, gop=8, seed=1)
    cache = tmp_path / "idx"
    want = [0, 17, 39]
    with reel.VideoDecoder(str(www / "v.mkv")) as d:
        local = bytes(memoryview(d.get_frames_at(want)))
    with nginx(www) as base:
        url = f"{base}/v.mkv"
        monkeypatch.setenv("REEL_INDEX_CACHE", str(cache))
        with reel.VideoDecoder(url, index_mode="read") as d:  # nothing cached yet
            assert d.metadata.index_source != "sidecar"
        cli = P(__file__).resolve().parents[2] / "build" / "reel"
        r = subprocess.run([str(cli), "index", url + "?token=secret", "--cache", str(cache)], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert len(list(cache.glob("*.reelidx"))) == 1 and "secret" not in r.stdout + r.stderr
        with reel.VideoDecoder(url, index_mode="read") as d:
            assert d.metadata.index_source == "sidecar"
            assert bytes(memoryview(d.get_frames_at(want))) == local
        # the object changes under the same URL: a new ETag, the cached index is stale
        reel._testing.write_video(str(www / "v.mkv"), width=96, height=64, frames=30, gop=8, seed=2)
        with reel.VideoDecoder(str(www / "v.mkv")) as d:
            changed = bytes(memoryview(d.get_frames_at([0, 17, 29])))
        with reel.VideoDecoder(url, index_mode="read") as d:
            assert d.metadata.index_source != "sidecar" and d.metadata.num_frames == 30
            assert bytes(memoryview(d.get_frames_at([0, 17, 29]))) == changed
        # without a cache, no sidecar is looked for next to a URL
        monkeypatch.delenv("REEL_INDEX_CACHE")
        with reel.VideoDecoder(url, index_mode="read_write") as d:
            assert d.metadata.index_source != "sidecar"
        assert not (www / "v.mkv.reelidx").exists()


def _small_videos(folder, n, width=96, height=64, frames=32):
    folder.mkdir()
    for i in range(n):
        reel._testing.write_video(str(folder / f"v{i:02d}.mp4"), width=width, height=height, frames=frames, gop=8,
                                  seed=i)
    return [(str(folder / f"v{i:02d}.mp4"), i % 3) for i in range(n)]


def _loader_run(items, **kw):
    with reel.Loader(items, frames_per_clip=4, size=32, batch_size=4, seed=5, epochs=1, **kw) as L:
        return [bytes(memoryview(b.frames)) for b in L], L.metrics()


def test_https_verifies_by_default_and_the_loader_shares_connections_and_tls_sessions(tmp_path):
    """Over https with the test's own certificate: refused by default (named,
    no retries), accepted with it as ca_bundle; the loader's videos share
    kept-alive connections (far fewer than videos, as many as transfers ran
    at once) and a new connection resumes the TLS session. nginx's log is
    the witness: its connection serials and $ssl_session_reused (one worker:
    the serials after a second marker request are the loader's)."""
    import ssl
    import urllib.request

    from servers import self_signed_cert
    n = 12
    local_items = _small_videos(tmp_path / "www", n)
    local, _ = _loader_run(local_items, decode_threads=2)
    cert, key = self_signed_cert(tmp_path)
    log = tmp_path / "access.log"
    # nginx closes a connection after 4 requests, so that later ones are new
    with nginx(tmp_path / "www", tls=(cert, key), log=log, keepalive_requests=4) as base:
        def logged(count):
            for _ in range(500):  # nginx writes its log line after the answer (bounded: 5 s)
                rows = [line.split() for line in log.read_text().splitlines() if line.strip()]
                if len(rows) >= count:
                    break
                threading.Event().wait(0.01)
            return rows

        unverified = ssl.create_default_context()
        unverified.check_hostname, unverified.verify_mode = False, ssl.CERT_NONE
        urllib.request.urlopen(f"{base}/v00.mp4", context=unverified, timeout=30).close()
        marker = int(logged(1)[-1][0])
        with pytest.raises(reel.ReelError) as e:
            reel.VideoDecoder(f"{base}/v00.mp4")
        assert "v00.mp4" in str(e.value) and "certificate" in str(e.value).lower(), str(e.value)
        urllib.request.urlopen(f"{base}/v00.mp4", context=unverified, timeout=30).close()
        after = int(logged(2)[-1][0])
        # not retried: a retried failure says "(after N tries)"; and the
        # refused decoder's connections lie between the two markers
        assert "tries" not in str(e.value) and "try)" not in str(e.value), str(e.value)
        assert after >= marker + 2, (marker, after)
        log.write_text("")
        items = [(f"{base}/v{i:02d}.mp4", lab) for i, (_, lab) in enumerate(local_items)]
        got, m = _loader_run(items, decode_threads=2, open_threads=3,
                             remote=dict(SMALL_READS, ca_bundle=str(cert)))
        r = m["remote"]
        rows = logged(r["requests"])
    assert got == local
    assert min(int(row[0]) for row in rows) > after
    assert r["requests"] == len(rows) and r["requests"] >= 2 * n  # open + the clip's fetch ahead
    serials = {row[0] for row in rows}
    assert r["connections"] == len(serials)
    # kept alive across videos: a connection per transfer at once (3 open + 2
    # decode threads), and one more each time nginx closed one after 4 requests
    assert len(serials) <= 5 + len(rows) // 4 < len(rows)
    assert max(int(row[1]) for row in rows) == 4
    firsts = [row for row in rows if row[1] == "1"]  # each connection's first request: its handshake
    assert len(firsts) == len(serials)
    assert sum(row[2] == "r" for row in firsts) >= len(firsts) - 5, rows  # later handshakes resumed a session


def test_prefetch_fetches_a_clip_ahead_so_decoding_makes_no_request(tmp_path):
    reel._testing.write_video(str(tmp_path / "long.mp4"), width=160, height=120, frames=600, gop=25, seed=4)
    want = [300, 302, 310, 451]  # two GOPs far apart: two runs, two requests
    with reel.VideoDecoder(str(tmp_path / "long.mp4")) as v:
        local = bytes(memoryview(v.get_frames_at(want)))
        v.prefetch(want)  # local: nothing to do
    with nginx(tmp_path) as base:
        # small reads: the two runs are further apart than readahead_min
        with reel.VideoDecoder(f"{base}/long.mp4", remote=SMALL_READS) as v:
            a = v.remote_stats
            v.prefetch(want)
            b = v.remote_stats
            got = bytes(memoryview(v.get_frames_at(want)))
            c = v.remote_stats
            with pytest.raises(IndexError):
                v.prefetch([10**6])
    assert got == local
    assert b["requests"] - a["requests"] == 2
    assert c["requests"] == b["requests"] and c["bytes_fetched"] == b["bytes_fetched"]


def test_bytes_in_flight_budget_bounds_the_fetch_ahead(tmp_path):
    """Stage 1 fetches each clip's packets ahead of decoding; with a budget of
    1 byte each fetch-ahead runs alone (the others wait, counted), so the
    peak is one clip's bytes; the default budget lets them overlap. Batches
    are the same either way."""
    n = 12
    local_items = _small_videos(tmp_path / "www", n, width=320, height=240, frames=96)
    local, _ = _loader_run(local_items, decode_threads=1)
    biggest = max(os.path.getsize(p) for p, _ in local_items)
    with nginx(tmp_path / "www") as base, fault_proxy(base) as proxy:
        proxy.latency = 0.03  # so that the fetches of 6 open threads overlap
        items = [(f"{proxy.base}/v{i:02d}.mp4", lab) for i, (_, lab) in enumerate(local_items)]
        tight, mt = _loader_run(items, decode_threads=1, open_threads=6, remote=dict(SMALL_READS, max_bytes_in_flight=1))
        loose, ml = _loader_run(items, decode_threads=1, open_threads=6, remote=SMALL_READS)
    assert tight == local and loose == local
    rt, rl = mt["remote"], ml["remote"]
    assert 0 < rt["bytes_in_flight_peak"] <= biggest
    assert rt["budget_waits"] > 0 and rt["budget_wait_seconds"] > 0 and rt["budget_skips"] == 0
    assert rl["budget_waits"] == 0 and rl["bytes_in_flight_peak"] > rt["bytes_in_flight_peak"]


class _PlainServer:
    """http.server on 127.0.0.1 serving a folder: it ignores Range (always 200
    and the whole file), and with `token` answers 401 unless the request
    carries "Authorization: Bearer <token>"."""

    def __init__(self, root, token=None):
        import functools
        import http.server
        import threading
        outer = self
        self.auths = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - http.server's name
                outer.auths.append(self.headers.get("Authorization"))
                if token and self.headers.get("Authorization") != f"Bearer {token}":
                    self.send_error(401)
                    return
                super().do_GET()

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     functools.partial(Handler, directory=str(root)))
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def test_a_server_that_ignores_range_is_read_whole_or_refused_by_name(tmp_path):
    reel._testing.write_video(str(tmp_path / "v.mp4"), width=160, height=120, frames=300, gop=25, seed=2)
    size = (tmp_path / "v.mp4").stat().st_size
    want = [0, 149, 299]
    with reel.VideoDecoder(str(tmp_path / "v.mp4")) as d:
        local = bytes(memoryview(d.get_frames_at(want)))
    with _PlainServer(tmp_path) as srv:
        # small enough: the one whole answer is kept, every read is local
        with reel.VideoDecoder(f"{srv.base}/v.mp4", remote={"readahead_min": 4096}) as d:
            assert bytes(memoryview(d.get_frames_at(want))) == local
            s = d.remote_stats
        assert s["requests"] == 1 and s["bytes_fetched"] == size
        # larger than the whole-object limit: refused, and the message says why
        with pytest.raises(reel.ReelError) as e:
            reel.VideoDecoder(f"{srv.base}/v.mp4", remote={"readahead_min": 4096, "whole_object_max": size // 2})
        assert "ignores Range" in str(e.value) and "v.mp4" in str(e.value)


def test_bearer_token_is_sent_and_never_printed(tmp_path):
    reel._testing.write_video(str(tmp_path / "v.mp4"), width=96, height=64, frames=20, gop=8, seed=3)
    with reel.VideoDecoder(str(tmp_path / "v.mp4")) as d:
        local = bytes(memoryview(d.get_frames_at([0, 19])))
    token = "tok-SECRET-123"
    with _PlainServer(tmp_path, token=token) as srv:
        with pytest.raises(reel.PermissionDeniedError) as e:
            reel.VideoDecoder(f"{srv.base}/v.mp4")
        assert "401" in str(e.value) and token not in str(e.value)
        with reel.VideoDecoder(f"{srv.base}/v.mp4", remote={"bearer_token": token}) as d:
            assert bytes(memoryview(d.get_frames_at([0, 19]))) == local
        # the loader sends it too; nothing it reports carries it
        with reel.Loader([(f"{srv.base}/v.mp4", 0)], frames_per_clip=2, size=32, batch_size=1, epochs=1,
                         remote={"bearer_token": token}) as L:
            assert sum(len(b) for b in L) == 1
            assert token not in repr(L.metrics())
    assert f"Bearer {token}" in srv.auths


def test_every_value_reel_shows_of_a_url_is_redacted(tmp_path):
    """User info and query strings (a presigned X-Amz-Signature) never show:
    not in messages, nor in ReelError.path, repr(VideoDecoder),
    metadata.path, ClipInfo.path or the loader's failures; a URL's raw CR/LF
    shows as %0D%0A, so a message stays one line."""
    reel._testing.write_video(str(tmp_path / "v.mp4"), width=96, height=64, frames=12, gop=6, seed=4)
    secrets = ("PASSWORDX", "SIGX", "user:")
    with _PlainServer(tmp_path) as srv:
        auth = srv.base.replace("http://", "http://user:PASSWORDX@")
        url, missing = f"{auth}/v.mp4?X-Amz-Signature=SIGX", f"{auth}/gone.mp4?X-Amz-Signature=SIGX"
        shown = srv.base.replace("http://", "http://***@") + "/v.mp4?***"
        with reel.VideoDecoder(url) as d:
            values = {"repr": repr(d), "metadata.path": d.metadata.path}
        assert values["metadata.path"] == shown and shown in values["repr"]
        with pytest.raises(reel.NotFoundError) as e:
            reel.VideoDecoder(missing, remote={"max_retries": 0})
        values["ReelError.path"], values["str(e)"] = e.value.path, str(e.value)
        assert e.value.path == srv.base.replace("http://", "http://***@") + "/gone.mp4?***"
        with reel.Loader([(url, 0), (missing, 1)], frames_per_clip=2, size=32, batch_size=2, epochs=1,
                         on_error="skip", decode_threads=1, remote={"max_retries": 0}) as L:
            info = [c for b in L for c in b.info]
            failures = L.metrics()["failures"]
        assert [c.path for c in info] == [shown]
        assert [f["path"] for f in failures] == [values["ReelError.path"]]
        values["ClipInfo.path"], values["failures"] = info[0].path, repr(failures)
        with pytest.raises(reel.NotFoundError) as e:
            reel.VideoDecoder(f"{srv.base}/x\r\nInjected: line.mp4?q=1", remote={"max_retries": 0})
        assert "\n" not in str(e.value) and "\r" not in str(e.value) and "\n" not in e.value.path
        assert "/x%0D%0AInjected: line.mp4?***" in str(e.value) and e.value.path.endswith("/x%0D%0AInjected: line.mp4?***")
    for k, v in values.items():
        assert not any(s in v for s in secrets), f"{k}: {v}"


def test_a_store_packed_from_urls_keeps_no_credential(tmp_path):
    """reel.pack over a manifest of signed URLs: the store's records name the
    videos redacted (packed and failed alike), and no byte of the store
    holds the password or the signature."""
    reel._testing.write_video(str(tmp_path / "v.mp4"), width=96, height=64, frames=12, gop=6, seed=4)
    with _PlainServer(tmp_path) as srv:
        auth = srv.base.replace("http://", "http://user:PASSWORDX@")
        (tmp_path / "list.csv").write_text(f"path,label\n{auth}/v.mp4?X-Amz-Signature=SIGX,0\n"
                                           f"{auth}/gone.mp4?X-Amz-Signature=SIGX,1\n")
        rep = reel.pack(tmp_path / "list.csv", tmp_path / "st", size=32, threads=1)
    assert rep["packed"] == 1 and rep["failed"] == 1
    shown = srv.base.replace("http://", "http://***@")
    records = reel._reel.store_records(str(tmp_path / "st"))
    assert sorted(r["path"] for r in records) == [f"{shown}/gone.mp4?***", f"{shown}/v.mp4?***"]
    assert all("SIGX" not in r["reason"] and "PASSWORDX" not in r["reason"] for r in records)
    for f in (tmp_path / "st").rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert b"PASSWORDX" not in data and b"SIGX" not in data, f


def test_s3_credentials_from_a_profile_file_and_virtual_hosted_addressing(s3, tmp_path):
    keys, local = s3
    idx = [0, 10, 39]
    want = _frames(str(local), idx)
    creds = tmp_path / "credentials"
    creds.write_text(f"[default]\naws_access_key_id = nope\naws_secret_access_key = nope\n\n"
                     f"[reel-test]\naws_access_key_id = {keys['AWS_ACCESS_KEY_ID']}\n"
                     f"aws_secret_access_key = {keys['AWS_SECRET_ACCESS_KEY']}\n")
    env = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SHARED_CREDENTIALS_FILE": str(creds),
           "AWS_PROFILE": "reel-test", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": keys["AWS_ENDPOINT_URL"]}
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        env.pop(k)
    saved = {k: os.environ.pop(k, None) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    try:
        assert _with_env(env, lambda: _frames("s3://videos/train/cat/clip one.mp4", idx)) == want
        # the default profile's wrong key: refused
        with pytest.raises(reel.PermissionDeniedError):
            _with_env(dict(env, AWS_PROFILE="default"), lambda: reel.VideoDecoder("s3://videos/train/cat/clip one.mp4"))
        # virtual-hosted addressing: videos.localhost:PORT (curl resolves *.localhost to loopback)
        virt = dict(env, REEL_S3_ADDRESSING="virtual",
                    AWS_ENDPOINT_URL=keys["AWS_ENDPOINT_URL"].replace("127.0.0.1", "localhost"))
        assert _with_env(virt, lambda: _frames("s3://videos/train/cat/clip one.mp4", idx)) == want
    finally:
        for k, v in saved.items():
            if v is not None:
                os.environ[k] = v
