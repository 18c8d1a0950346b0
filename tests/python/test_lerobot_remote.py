# test_lerobot_remote.py: reel.lerobot over URLs: the tests' LeRobot-style dataset served by
# nginx (http and https) and by moto's S3 (SigV4-signed) on 127.0.0.1; items and the Loader's
# batches equal the local dataset's, tables and videos go through reel's remote input (remote=
# reaches both; videos by ranges), and a missing table or refused key is named, redacted.
import os
import shutil

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("pyarrow")
pytest.importorskip("av")  # the data is made the way LeRobot makes it: PyAV

import reel  # noqa: E402
import reel._testing  # noqa: E402
import reel._reel as _reel  # noqa: E402
import reel.lerobot as rl  # noqa: E402

import lerobot_data as ld  # noqa: E402
from servers import environ as _env  # noqa: E402
from servers import moto_s3, moto_s3_user, nginx, nginx_path, self_signed_cert  # noqa: E402

FRONT, WRIST, SIDE = "observation.images.front", "observation.images.wrist", "observation.images.side"
DELTAS = {FRONT: [-0.2, -1 / 30, 0.0, 0.1], SIDE: [-1 / 30, 0.0], "action": [0.0, 1 / 30, 2 / 30]}
# range reads in small pieces: a video is never fetched whole
SMALL_READS = {"whole_object_max": 0, "readahead_min": 4096, "readahead_max": 16384}


@pytest.fixture(scope="module")
def www(tmp_path_factory):
    """A folder holding the dataset at ds/ (4 episodes, 102 rows, 3 cameras in
    5 files) and a copy at broken/ without the data file of episodes 2-3."""
    top = tmp_path_factory.mktemp("www")
    meta = ld.make_dataset(str(top / "ds"))
    shutil.copytree(top / "ds", top / "broken")
    os.unlink(top / "broken/data/chunk-000/file-001.parquet")
    return top, meta


@pytest.fixture(scope="module")
def http(www):
    if not nginx_path():
        pytest.skip("nginx is not installed (make test installs it)")
    log = www[0].parent / "nginx-access.log"
    with nginx(www[0], log=log) as base:
        yield base, log



@pytest.fixture(scope="module")
def s3(www):
    """The dataset under s3://robots/sets/ds/ on moto, read with a user's
    signed requests; yields the credentials (set in the environment while
    the module's tests run)."""
    pytest.importorskip("boto3")
    pytest.importorskip("moto")
    with moto_s3() as endpoint:
        keys, client = moto_s3_user(endpoint, "robot")
        client.create_bucket(Bucket="robots")
        src = www[0] / "ds"
        for d, _, files in os.walk(src):
            for f in files:
                rel = os.path.relpath(os.path.join(d, f), src)
                client.upload_file(os.path.join(d, f), "robots", f"sets/ds/{rel}")
        with _env(keys):
            yield keys


@pytest.fixture(scope="module")
def local(www):
    return rl.LeRobotDataset(str(www[0] / "ds"), delta_timestamps=DELTAS)


def _same_item(got, want):
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        if isinstance(v, torch.Tensor):
            assert got[k].dtype == v.dtype and torch.equal(got[k], v), k
        else:
            assert got[k] == v, k


def _root(kind, http, s3):
    return f"{http[0]}/ds" if kind == "http" else "s3://robots/sets/ds"


# ---------------------------------------------------------------- items and batches
@pytest.mark.parametrize("kind", ["http", "s3"])
def test_items_by_url_equal_the_local_ones(kind, request, local, www):
    """Every sample of every episode and camera (files shared by episodes,
    a 60 fps camera, pad masks): the same frames, rows and tasks."""
    http = request.getfixturevalue("http") if kind == "http" else None
    s3 = request.getfixturevalue("s3") if kind == "s3" else None
    root = _root(kind, http, s3)
    ds = rl.LeRobotDataset(root, delta_timestamps=DELTAS)
    assert len(ds) == len(local) == 102 and ds.video_keys == local.video_keys == [FRONT, WRIST, SIDE]
    assert ds.fingerprint == local.fingerprint and ds.num_episodes == 4
    assert ds.video_path(3, SIDE) == f"{root}/videos/{SIDE}/chunk-000/file-001.mp4"
    for i in range(len(ds)):
        _same_item(ds[i], local[i])
    # the frames carry their rows' codes (what the local items are checked against in test_lerobot.py)
    item = ds[50]
    q = ds.query(50)
    assert [ld.read_code(f) for f in item[FRONT]] == [www[1]["expected"][FRONT][r] for r in q["indices"][FRONT]]


@pytest.mark.parametrize("kind", ["http", "s3"])
def test_loader_by_url_gives_the_local_batches(kind, request, www):
    http = request.getfixturevalue("http") if kind == "http" else None
    s3 = request.getfixturevalue("s3") if kind == "s3" else None

    def epoch(root, **kw):
        with rl.Loader(root, delta_timestamps=DELTAS, batch_size=8, seed=3, **kw) as loader:
            out = list(loader)
            assert loader.metrics()["failure_count"] == 0
            return out, loader.state_dict()

    want, want_state = epoch(str(www[0] / "ds"))
    got, state = epoch(_root(kind, http, s3), remote={"max_retries": 2})
    assert len(got) == len(want) == 13 and state == want_state
    for b, w in zip(got, want):
        _same_item(b, w)


# ---------------------------------------------------------------- remote input
def _logged(log):
    """nginx's log lines, split, once it has stopped growing (it writes a
    line after its answer; bounded: 5 s)."""
    import time

    rows, seen = [], -1
    for _ in range(50):
        rows = [ln.split() for ln in log.read_text().splitlines() if ln.strip()]
        if len(rows) == seen:
            break
        seen = len(rows)
        time.sleep(0.1)
    return rows


def test_videos_are_read_by_ranges(http, www):
    """A camera of 600 frames in one file of about 1 MB (H.264 in place of
    the AV1 one, whose flat frames take 70 KB: FFmpeg's first 64 KiB read
    would be most of it), read with small range requests: two samples fetch
    a part of it (nginx answered every request for it with 206, a range, and
    sent less than half of the file), the tables whole."""
    base, log = http
    big = www[0] / "big"
    ld.make_dataset(str(big), episodes=(300, 300), cameras={FRONT: (320, 240, 1, (0, 0))}, data_files=(0, 0))
    video = f"videos/{FRONT}/chunk-000/file-000.mp4"
    reel._testing.write_video(str(big / video), width=320, height=240, frames=600, fps_num=30, fps_den=1, gop=30)
    local = rl.LeRobotDataset(str(big))
    log.write_text("")
    ds = rl.LeRobotDataset(f"{base}/big", remote=SMALL_READS)
    for i in (10, 450):
        _same_item(ds[i], local[i])
    rows = _logged(log)
    mp4 = [r for r in rows if r[6] == f"/big/{video}"]
    assert mp4 and {r[3] for r in mp4} == {"206"} and all(r[5].startswith("bytes=") for r in mp4), mp4
    sent = sum(int(r[4]) for r in mp4)
    assert sent < (big / video).stat().st_size / 2, (sent, (big / video).stat().st_size)
    assert {r[6] for r in rows} >= {"/big/meta/info.json", "/big/data/chunk-000/file-000.parquet"}


def test_remote_settings_reach_tables_and_videos(www, tmp_path):
    """https with the test's own certificate: trusted through remote=
    {"ca_bundle"}, the tables and the videos read; without it, the first
    table (meta/info.json) is refused, by name."""
    if not nginx_path():
        pytest.skip("nginx is not installed (make test installs it)")
    cert, key = self_signed_cert(tmp_path)
    with nginx(www[0], tls=(cert, key)) as base:
        ds = rl.LeRobotDataset(f"{base}/ds", remote={"ca_bundle": str(cert)}, cameras=[FRONT])
        local = rl.LeRobotDataset(str(www[0] / "ds"), cameras=[FRONT])
        _same_item(ds[70], local[70])
        with rl.Loader(f"{base}/ds", cameras=[WRIST], batch_size=16, remote={"ca_bundle": str(cert)}) as loader:
            assert sum(len(b["index"]) for b in loader) == 102
        with pytest.raises(reel.ReelError, match=r"meta/info\.json"):
            rl.LeRobotDataset(f"{base}/ds")


def test_a_missing_table_is_named_with_the_url_redacted(http):
    base = http[0]
    host = base.split("://", 1)[1]
    with pytest.raises(reel.NotFoundError) as e:
        rl.LeRobotDataset(f"http://robot:pw-never-shown@{host}/broken")
    msg = str(e.value)
    assert f"{host}/broken/data/chunk-000/file-001.parquet" in msg and "404" in msg, msg
    assert "pw-never-shown" not in msg and "pw-never-shown" not in str(e.value.path)
    with pytest.raises(reel.NotFoundError, match=r"/nothing/meta/info\.json"):
        rl.LeRobotDataset(f"{base}/nothing")
    # the tables of the other episodes are there: a selection without them reads
    assert len(rl.LeRobotDataset(f"{base}/broken", episodes=[0, 1])) == 24 + 31


def test_s3_wrong_secret_is_refused_and_never_printed(s3):
    bad = dict(s3, AWS_SECRET_ACCESS_KEY="wrong-secret-never-print")
    with _env(bad):
        with pytest.raises(reel.PermissionDeniedError) as e:
            rl.LeRobotDataset("s3://robots/sets/ds")
    msg = str(e.value)
    assert "robots/sets/ds/meta/info.json" in msg and "403" in msg, msg
    assert "wrong-secret" not in msg and s3["AWS_SECRET_ACCESS_KEY"] not in msg
    with pytest.raises(reel.NotFoundError, match=r"s3://robots/sets/none/meta/info\.json"):
        rl.LeRobotDataset("s3://robots/sets/none")


def test_remote_read(http, www, tmp_path):
    """reel._reel.remote_read: a whole object by URL or path, equal to the
    file; refused past max_bytes by name; a bad remote= key by name."""
    rel = "ds/meta/episodes/chunk-000/file-000.parquet"
    want = (www[0] / rel).read_bytes()
    assert _reel.remote_read(f"{http[0]}/{rel}") == want
    assert _reel.remote_read(str(www[0] / rel), remote=SMALL_READS) == want
    assert _reel.remote_read(f"{http[0]}/{rel}", remote=SMALL_READS, max_bytes=len(want)) == want
    with pytest.raises(reel.ReelError, match=rf"file-000\.parquet: {len(want)} bytes, more than the 100 bytes"):
        _reel.remote_read(f"{http[0]}/{rel}", max_bytes=100)
    (tmp_path / "empty").write_bytes(b"")
    assert _reel.remote_read(str(tmp_path / "empty")) == b""
    with pytest.raises(ValueError, match="remote"):
        _reel.remote_read(f"{http[0]}/{rel}", remote={"no_such_setting": 1})
