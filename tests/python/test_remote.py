# tests/python/test_remote.py: remote input (issue 9) against real servers on
# 127.0.0.1: nginx serving the shared videos (frames by URL equal frames by
# path, byte for byte) and a packed store (the loader over its URL equals the
# loader over the local store), moto's S3 with SigV4-signed reads, a wrong
# secret (PermissionDeniedError), a missing object, and no credential in any
# message; remote datasets: a manifest by URL (relative entries resolve
# against it) and an S3 prefix listed with ListObjectsV2 over several pages,
# each giving the batches of the same local dataset byte for byte.
from __future__ import annotations

import os

import pytest

import reel
import reel._testing
from servers import moto_s3, nginx

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
        with reel.Loader(source, frames_per_clip=4, size=64, batch_size=3, seed=2, num_threads=2) as L:
            return [(bytes(memoryview(b.frames)), list(memoryview(b.labels))) for b in L]

    local = epoch(root / "st")
    with nginx(root) as base:
        remote = epoch(f"{base}/st")
        assert reel.dataset_info(f"{base}/st") == {"size": 6, "class_names": ["a", "b"]}
        with pytest.raises(reel.NotFoundError):
            reel.Loader(f"{base}/no-store-here")
    assert remote == local


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    boto3 = pytest.importorskip("boto3")
    import json
    with moto_s3() as endpoint:
        # moto checks signatures once its first 3 (unauthenticated) actions
        # have made a user, its access key and a policy allowing S3
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1",
                           aws_access_key_id="bootstrap", aws_secret_access_key="bootstrap")
        iam.create_user(UserName="reel")
        key = iam.create_access_key(UserName="reel")["AccessKey"]
        iam.put_user_policy(UserName="reel", PolicyName="s3", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
        keys = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
                "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"])
        client.create_bucket(Bucket="videos")
        d = tmp_path_factory.mktemp("s3src")
        reel._testing.write_video(str(d / "clip.mp4"), width=128, height=96, frames=40, gop=10)
        client.upload_file(str(d / "clip.mp4"), "videos", "train/cat/clip one.mp4")
        yield keys, d / "clip.mp4"


def _with_env(env, fn):
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return fn()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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
    with reel.Loader(source, frames_per_clip=4, size=48, batch_size=2, seed=3, num_threads=2) as L:
        return [(bytes(memoryview(b.frames)), list(memoryview(b.labels)), [c.frame_indices for c in b.info])
                for b in L]


def test_loader_over_a_manifest_by_url_equals_the_local_run(tmp_path):
    root = _kinetics(tmp_path / "www" / "ds")
    lines = ["path,label"] + [f"{c}/v{v}.mp4,{c}" for c in ("archery", "bowling") for v in range(2)]
    (root / "train.csv").write_text("\n".join(lines) + "\n")
    local = _epoch(root / "train.csv")
    with nginx(tmp_path / "www") as base:
        url = f"{base}/ds/train.csv"
        assert reel.dataset_info(url) == {"size": 4, "class_names": ["archery", "bowling"]}
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
        info = _with_env(keys, lambda: reel.dataset_info(prefix))
        assert info == local_info == {"size": 4, "class_names": ["archery", "bowling"]}
    assert _with_env(keys, lambda: _epoch("s3://videos/kinetics/train/")) == local
    with pytest.raises(reel.ReelError) as e:
        _with_env(keys, lambda: reel.dataset_info("s3://videos/nothing-here/"))
    assert "nothing-here" in str(e.value)
    bad = dict(keys, AWS_SECRET_ACCESS_KEY="wrong-secret-never-print")
    with pytest.raises(reel.PermissionDeniedError) as e:
        _with_env(bad, lambda: reel.dataset_info("s3://videos/kinetics/train/"))
    assert "wrong-secret" not in str(e.value) and keys["AWS_SECRET_ACCESS_KEY"] not in str(e.value)
