"""Damaged audio follows the corrupt policy (issue 28): corrupt bytes inside
one AAC packet and one MP3 packet in the middle of a video. "fail" names the
file, the packet's time and the codec's reason; "skip" gives the ffmpeg
CLI's samples (`-err_detect ignore_err ... aresample=async=1:min_hard_comp=0`)
with the dropped packet's gap as zeros, reported as missing, the count
right and `valid` the longest clean run; the Loader delivers such a sample
under "skip" (its frames, a narrowed audio_valid, the metrics' count) and
fails it under "fail"."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest

import reel
from audio_clips import MONO16K, NATIVE, cut, make_video

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")


def _packets(path):
    """(pts_time, pos, size) of the first audio stream's packets."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries",
                          "packet=pts_time,pos,size", "-of", "json", path], check=True, capture_output=True,
                         text=True).stdout
    return [(float(p["pts_time"]), int(p["pos"]), int(p["size"])) for p in json.loads(out)["packets"]]


def _damage_middle(path):
    """Overwrites the middle audio packet's bytes after its first two (mp4:
    ffprobe's pos is the packet's first byte); returns its time in seconds."""
    packets = _packets(path)
    t, pos, size = packets[len(packets) // 2]
    data = bytearray(open(path, "rb").read())
    rng = random.Random(7)
    for i in range(pos + 2, pos + size):
        data[i] = rng.randrange(256)
    with open(path, "wb") as f:
        f.write(bytes(data))
    return t


def _mp3_video(tmp_path):
    video = make_video(tmp_path, "mp3src", 2)
    out = tmp_path / "mp3.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", video, "-c:v", "copy", "-c:a", "libmp3lame",
                    "-ar", "44100", "-b:a", "128k", str(out)], check=True)
    return str(out)


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    d = tmp_path_factory.mktemp("audio_corrupt")
    aac = make_video(d, "aac", 1)
    mp3 = _mp3_video(d)
    clean = make_video(d, "clean", 3)
    return {"aac": (aac, _damage_middle(aac)), "mp3": (mp3, _damage_middle(mp3)), "clean": clean}


def _cli(path, settings):
    """The CLI's samples with -err_detect ignore_err, [C, N] from a0."""
    af = "aresample=async=1:min_hard_comp=0"
    if settings.get("channels") == 1:
        af += ",pan=mono|c0=0.5*c0+0.5*c1"
    if settings.get("sample_rate"):
        af += f",aresample={settings['sample_rate']}"
    raw = subprocess.run(["ffmpeg", "-nostdin", "-v", "quiet", "-err_detect", "ignore_err", "-i", path, "-map",
                          "0:a:0", "-af", af, "-f", "f32le", "-"], check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype=np.float32).reshape(-1, settings.get("channels") or 2).T


@pytest.mark.parametrize("codec", ["aac", "mp3"])
def test_fail_names_the_file_the_packets_time_and_the_reason(damaged, codec):
    path, t = damaged[codec]
    with reel.VideoDecoder(path, audio=True) as dec:
        assert dec.get_audio_played_in_range(0.0, 1.0).missing == 0  # before the damage
        with pytest.raises(reel.CorruptError) as e:
            dec.get_audio_played_in_range(0.0, 4.0)
    msg = str(e.value)
    assert path in msg and f"corrupt audio packet at {t:.6f} s: " in msg, msg
    assert msg.split(f"{t:.6f} s: ", 1)[1], msg  # the codec's reason


@pytest.mark.parametrize("settings", [{}, MONO16K], ids=["native", "16k_mono"])
@pytest.mark.parametrize("codec", ["aac", "mp3"])
def test_skip_equals_the_cli_with_the_gap_reported_missing(damaged, codec, settings):
    path, t = damaged[codec]
    ref = _cli(path, settings)
    with reel.VideoDecoder(path, audio=dict(settings) or True, corrupt_policy="skip") as dec:
        a = dec.get_audio_played_in_range(0.0, 4.5)
        rate = a.sample_rate
        got = np.asarray(a.data)
        assert a.corrupt_packets == 1
        lo, hi = a.missing_span
        assert a.missing == hi - lo > 0
        own = round((t - dec.audio_metadata["start_seconds"]) * rate)  # the packet's own first sample
        if settings:  # resampled: the span reaches back over the filter
            assert a.first_sample + lo < own < a.first_sample + hi
        else:
            assert a.first_sample + lo == own
            assert not got[:, lo:hi].any()
            # the gap is at least the packet (1024 AAC, 1152 MP3 samples; MP3's next frame gives nothing either)
            assert hi - lo >= (1024 if codec == "aac" else 1152)
        vlo, vhi = max(0, -a.first_sample), min(ref.shape[1] - a.first_sample, a.num_samples)
        outside = np.ones(a.num_samples, dtype=bool)
        outside[lo:hi] = False
        want = cut(ref, a.first_sample, a.num_samples)
        assert np.abs(got[:, outside] - want[:, outside]).max() <= 1e-6
        assert a.valid == ((vlo, lo) if lo - vlo >= vhi - hi else (hi, vhi))
        # the clips over the damage in reverse (restarts) report the same
        for k in range(7, -1, -1):
            dec.get_audio_played_in_range(4.0, 4.2)
            t0 = round(t * 4) / 4 - 1 + k / 4
            c = dec.get_audio_played_in_range(t0, t0 + 0.5)
            off = c.first_sample - a.first_sample
            assert np.array_equal(np.asarray(c.data), got[:, off:off + c.num_samples])
            m0, m1 = max(lo - off, 0), min(hi - off, c.num_samples)
            assert c.missing == max(m1 - m0, 0) and c.corrupt_packets == (1 if m1 > m0 else 0)
            if m1 > m0:
                assert c.missing_span == (m0, m1)
                assert c.valid == ((0, m0) if m0 >= c.num_samples - m1 else (m1, c.num_samples))
            else:
                assert c.missing_span == (0, 0) and c.valid == (0, c.num_samples)


@pytest.mark.parametrize("settings", [NATIVE, MONO16K], ids=["native", "16k_mono"])
def test_the_loader_delivers_a_damaged_sample_under_skip_and_fails_it_under_fail(damaged, settings):
    paths = [damaged["clean"], damaged["aac"][0]]
    kw = dict(frames_per_clip=25, clips_per_video=4, frame_stride=1, size=(32, 48), crop=None, batch_size=4,
              shuffle=False, epochs=1, decode_threads=2, audio=settings)
    with reel.Loader(paths, corrupt_policy="skip", **kw) as ld:
        batches = list(ld)
        m = ld.metrics()
    assert sum(len(b.info) for b in batches) == 8 and all(b.num_failed == 0 for b in batches)
    dec_audio = {"sample_rate": settings["sample_rate"], "channels": 1 if settings["channels"] == 1 else None}
    bad = 0
    with reel.VideoDecoder(damaged["aac"][0], audio=dec_audio, corrupt_policy="skip") as dec:
        for b in batches:
            valid = np.asarray(b.audio_valid)
            for i, info in enumerate(b.info):
                assert info.num_frames == 25
                if info.path != damaged["aac"][0]:
                    assert info.audio_missing == 0 and info.audio_corrupt_packets == 0
                    continue
                a = dec.get_audio_for_frames(list(info.frame_indices))
                assert tuple(valid[i]) == a.valid
                assert (info.audio_missing, info.audio_missing_span, info.audio_corrupt_packets) == \
                    (a.missing, a.missing_span, a.corrupt_packets)
                n = int(np.asarray(b.audio_lengths)[i])
                assert np.array_equal(np.asarray(b.audio)[i, :, :n], np.asarray(a.data))
                bad += info.audio_corrupt_packets
                if a.missing:
                    assert a.valid[1] - a.valid[0] < n  # narrowed
    assert bad >= 1 and m["audio_corrupt_packets"] == bad
    with reel.Loader(paths, corrupt_policy="fail", on_error="skip", **kw) as ld:
        batches = list(ld)
        m = ld.metrics()
    assert sum(b.num_failed for b in batches) == 1 and m["failure_count"] == 1
    assert "corrupt audio packet at" in m["failures"][0]["reason"], m["failures"][0]
    assert m["audio_corrupt_packets"] == 0
    assert {info.path for b in batches for info in b.info} == {damaged["clean"]}


def test_a_truncated_file_ends_valid_at_the_cut_under_skip_and_is_named_under_fail(tmp_path):
    src = make_video(tmp_path, "whole_src", 4)
    whole = tmp_path / "whole.mp4"
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", src, "-c", "copy", "-movflags", "+faststart",
                    str(whole)], check=True)
    packets = _packets(str(whole))
    t, pos, size = packets[len(packets) * 6 // 10]  # cut in the middle of this audio packet
    cutf = tmp_path / "cut.mp4"
    cutf.write_bytes(whole.read_bytes()[:pos + size // 2])
    ref = _cli(str(cutf), {})
    with reel.VideoDecoder(str(cutf), audio=True, corrupt_policy="skip") as dec:
        a = dec.get_audio_played_in_range(0.0, 4.5)
        assert 0 < ref.shape[1] < a.num_samples
        assert a.first_sample + ref.shape[1] == round((t - dec.audio_metadata["start_seconds"]) * a.sample_rate)
        assert a.valid == (0, ref.shape[1]) and a.corrupt_packets == 1 and a.missing == 0
        assert np.abs(np.asarray(a.data) - cut(ref, a.first_sample, a.num_samples)).max() <= 1e-6
    with reel.VideoDecoder(str(cutf), audio=True) as dec:
        with pytest.raises(reel.CorruptError, match="cut.mp4: corrupt audio packet at "):
            dec.get_audio_played_in_range(0.0, 4.5)


def test_reel_frames_audio_follows_skip_corrupt(damaged):
    cli = os.environ.get("REEL_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("the reel CLI is not built (set REEL_CLI)")
    path, t = damaged["aac"]
    at = [int(t * 25) + d for d in (-3, 0, 3)]
    args = [cli, "frames", path, "--at", ",".join(map(str, at)), "--raw", os.devnull, "--audio", "-", "--stats"]
    res = subprocess.run(args, capture_output=True)
    assert res.returncode != 0 and b"corrupt audio packet at" in res.stderr, res.stderr
    res = subprocess.run(args + ["--skip-corrupt"], capture_output=True, check=True)
    with reel.VideoDecoder(path, audio=True, corrupt_policy="skip") as dec:
        a = dec.get_audio_for_frames(at)
    assert a.missing > 0
    assert np.array_equal(np.frombuffer(res.stdout, dtype=np.float32).reshape(-1, 2).T, np.asarray(a.data))
    line = [x for x in res.stderr.decode().splitlines() if x.startswith("audio:")][0]
    assert (f"valid [{a.valid[0]}, {a.valid[1]}), missing {a.missing} in [{a.missing_span[0]}, "
            f"{a.missing_span[1]}), 1 corrupt packets") in line, line


def test_pack_audio_keeps_the_frames_of_a_damaged_audio_and_the_loader_names_it(damaged, tmp_path):
    d = tmp_path / "videos"
    d.mkdir()
    shutil.copy(damaged["clean"], d / "clean.mp4")
    shutil.copy(damaged["aac"][0], d / "damaged.mp4")
    store = tmp_path / "st"
    reel.pack(d, store, size=32, shard_size=1 << 16, audio=True, format="raw")  # the packer's policy: fail
    recs = {os.path.basename(r["path"]): r for r in reel._reel.store_records(str(store))}
    assert recs["damaged.mp4"]["status"] == 0 and recs["clean.mp4"]["audio"]["status"] == 0
    assert recs["damaged.mp4"]["audio"]["status"] == reel._reel.STATUS["CORRUPT"]
    kw = dict(frames_per_clip=4, size=32, batch_size=2, shuffle=False, epochs=1)
    with reel.Loader(str(store), audio=NATIVE, on_error="skip", **kw) as ld:
        paths = [os.path.basename(i.path) for b in ld for i in b.info]
        m = ld.metrics()
    assert paths == ["clean.mp4"] and m["failure_count"] == 1
    assert "damaged.mp4" in m["failures"][0]["reason"] and "corrupt audio packet at" in m["failures"][0]["reason"]
    with reel.Loader(str(store), **kw) as ld:  # the frames are stored
        assert sorted(os.path.basename(i.path) for b in ld for i in b.info) == ["clean.mp4", "damaged.mp4"]


def test_damage_before_the_first_frame_meets_the_policy(tmp_path):
    """The open decodes up to a0's first frame and the first window goes on
    with that decoder, unless a packet it met was refused: then the window
    decodes from the first byte again and meets the damage under the policy
    (fail: the error naming the packet; skip: counted)."""
    path = make_video(tmp_path, "early", 4)
    packets = _packets(path)
    t, pos, size = packets[1]  # the first packet is AAC's priming: packet 1 is the first frame's
    data = bytearray(open(path, "rb").read())
    rng = random.Random(11)
    for i in range(pos + 2, pos + size):
        data[i] = rng.randrange(256)
    open(path, "wb").write(bytes(data))
    probe = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:a:0", "-f", "null", "-"],
                           capture_output=True, text=True).stderr
    if "Error" not in probe and "error" not in probe:
        pytest.skip("the codec took the damaged packet (its bytes decoded)")
    with reel.VideoDecoder(path, audio=True) as dec:
        with pytest.raises(reel.CorruptError) as e:
            dec.get_audio_played_in_range(0.0, 1.0)
    assert f"corrupt audio packet at {t:.6f} s: " in str(e.value), str(e.value)
    with reel.VideoDecoder(path, audio=True, corrupt_policy="skip") as dec:
        a = dec.get_audio_played_in_range(0.0, 1.0)
        assert a.corrupt_packets == 1, a  # before a0: dropped without a gap (a0 is the next frame's)


def _pack_under_skip(damaged, tmp_path):
    """The clean and the damaged AAC video packed with audio under "skip":
    the videos' folder, the store's and its records by file name."""
    d = tmp_path / "videos"
    d.mkdir()
    shutil.copy(damaged["clean"], d / "clean.mp4")
    shutil.copy(damaged["aac"][0], d / "damaged.mp4")
    store = tmp_path / "skip"
    reel.pack(d, store, size=32, shard_size=1 << 16, audio=True, format="raw", corrupt_policy="skip")
    return d, store, {os.path.basename(r["path"]): r for r in reel._reel.store_records(str(store))}


def test_pack_takes_the_loaders_corrupt_policy(damaged, tmp_path):
    """reel.pack(corrupt_policy=...) and `reel pack --skip-corrupt`: under
    "skip" the damaged video's record keeps its audio with the damage said
    (valid narrowed, as the video's whole window says); under "fail" the CLI
    goes on (exit 0, the frames stored) and names the video and the reason."""
    d, store, recs = _pack_under_skip(damaged, tmp_path)
    a = recs["damaged.mp4"]["audio"]
    assert recs["damaged.mp4"]["status"] == 0 and a["status"] == 0
    assert a["valid"][1] - a["valid"][0] < a["samples"]  # narrowed to the longest clean run
    assert a["missing"] > 0 and a["corrupt_packets"] == 1 and a["missing_span"][0] < a["missing_span"][1]
    assert recs["clean.mp4"]["audio"]["missing"] == 0
    # a Loader over the store gives each clip what the Loader over the videos does
    kw = dict(frames_per_clip=25, clips_per_video=4, size=32, batch_size=2, shuffle=False, epochs=1,
              audio=NATIVE, corrupt_policy="skip")
    got = {}
    for source in (str(store), sorted(str(p) for p in d.glob("*.mp4"))):
        with reel.Loader(source, **kw) as ld:
            for b in ld:
                plane, lengths, valid = np.asarray(b.audio), np.asarray(b.audio_lengths), np.asarray(b.audio_valid)
                for i, c in enumerate(b.info):
                    got.setdefault((os.path.basename(c.path), c.clip), []).append(
                        (tuple(c.frame_indices), c.audio_first_sample, tuple(valid[i]), c.audio_missing,
                         tuple(c.audio_missing_span), c.audio_corrupt_packets, plane[i, :, :lengths[i]].tobytes()))
    assert len(got) == 8 and all(len(v) == 2 and v[0] == v[1] for v in got.values())
    assert sum(v[0][3] > 0 for v in got.values()) >= 1  # a clip crosses the gap
    with pytest.raises(ValueError, match="corrupt_policy"):
        reel.pack(d, tmp_path / "bad", size=32, audio=True, corrupt_policy="ignore")
    cli = os.environ.get("REEL_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("the reel CLI is not built (set REEL_CLI)")
    base = [cli, "pack", str(d), "--size", "32", "--format", "raw", "--shard-size", "65536", "--audio", "--no-progress"]
    res = subprocess.run(base + [str(tmp_path / "cli_fail")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    named = [x for x in res.stderr.splitlines() if x.startswith("reel pack: frames packed, audio not:")]
    assert len(named) == 1 and "damaged.mp4" in named[0] and "corrupt audio packet at" in named[0], res.stderr
    res = subprocess.run(base + [str(tmp_path / "cli_skip"), "--skip-corrupt"], capture_output=True,
                         text=True)
    assert res.returncode == 0 and "audio not" not in res.stderr, res.stderr
    for name in sorted(os.listdir(store)):  # the same store reel.pack made under "skip", byte for byte
        if name.startswith("shard-") or name == "store.idx":
            assert (store / name).read_bytes() == (tmp_path / "cli_skip" / name).read_bytes(), name
    res = subprocess.run(base + [str(tmp_path / "cli_bad"), "--corrupt-policy", "skip"], capture_output=True,
                         text=True)
    assert res.returncode == 2 and "--corrupt-policy" in res.stderr, res.stderr  # one name: --skip-corrupt


@pytest.mark.parametrize("codec", ["aac", "mp3"])
def test_ffmpegs_lines_from_a_damaged_audio_packet_name_the_file(damaged, codec):
    """The audio object's codec and demuxer lines go where the decoder's go
    (src/decoder/log.c): shown as "[aac @ <file>] ...", never FFmpeg's
    "[aac @ 0x...]". A fresh interpreter, at FFmpeg's default log level."""
    path, _ = damaged[codec]
    p = subprocess.run([sys.executable, "-c",
                        "import reel\n"
                        f"with reel.VideoDecoder({path!r}, audio=True, corrupt_policy='skip') as d:\n"
                        "    a = d.get_audio_played_in_range(0.0, 10.0)\n"
                        "    assert a.missing > 0\n"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("[")]
    assert lines, p.stderr  # the codec's complaint about the damaged packet
    assert all(f" @ {path}] " in ln for ln in lines), lines
    assert not any(" @ 0x" in ln for ln in lines), lines


def test_the_store_keeps_the_damage_as_store_md_lays_it_out(damaged, tmp_path):
    """docs/STORE.md's version-3 audio block: the stream's part, H spans of
    24 bytes before the frames; an index whose spans say another valid range
    than the stored one is refused by name, though its checksums are right."""
    import struct
    import zlib

    def crc(b: bytes) -> int:
        return zlib.crc32(b, 0xFFFFFFFF) ^ 0xFFFFFFFF

    d = tmp_path / "videos"
    d.mkdir()
    shutil.copy(damaged["aac"][0], d / "damaged.mp4")
    store = tmp_path / "st"
    reel.pack(d, store, size=32, shard_size=1 << 16, audio=True, format="raw", corrupt_policy="skip")
    idx = bytearray((store / "store.idx").read_bytes())
    assert struct.unpack_from("<I", idx, 8)[0] == 3
    e = 128  # the one entry
    size = struct.unpack_from("<I", idx, e + 4)[0]
    a = e + 140
    first, samples, vlo, vhi = struct.unpack_from("<qqqq", idx, a + 32)
    slo, shi = struct.unpack_from("<qq", idx, a + 80)
    h, zero = struct.unpack_from("<II", idx, a + 96)
    assert h == 1 and zero == 0 and (slo, shi) != (vlo, vhi) and slo <= vlo <= vhi <= shi <= samples
    lo, hi, packets = struct.unpack_from("<qqq", idx, a + 104)
    assert packets == 1 and first <= lo < hi <= first + samples
    rec = reel._reel.store_records(str(store))[0]["audio"]
    assert rec["valid"] == (vlo, vhi) and rec["missing"] == hi - lo and rec["missing_span"] == (lo - first, hi - first)
    struct.pack_into("<q", idx, a + 48, vlo + 1)  # a valid range the spans do not give
    struct.pack_into("<I", idx, e + size - 4, crc(bytes(idx[e:e + size - 4])))
    struct.pack_into("<I", idx, len(idx) - 4, crc(bytes(idx[:-4])))
    (store / "store.idx").write_bytes(bytes(idx))
    with pytest.raises(reel.CorruptError, match="damaged.mp4: impossible audio values"):
        reel._reel.store_records(str(store))


def test_a_store_under_fail_names_the_packet_as_the_video_does(damaged, tmp_path):
    """A store packed under "skip" keeps the damaged audio with its spans;
    a Loader over it under "fail" fails the sample whose clip the damage
    touches with the message the Loader over the video gives: the file, the
    packet's time in seconds and the codec's reason (the record keeps them,
    a line a span, as its reason), never the clip's sample range."""
    d, store, recs = _pack_under_skip(damaged, tmp_path)
    t = damaged["aac"][1]
    assert recs["damaged.mp4"]["status"] == 0 and recs["damaged.mp4"]["audio"]["status"] == 0
    assert recs["damaged.mp4"]["reason"].startswith(f"corrupt audio packet at {t:.6f} s: ")
    assert recs["clean.mp4"]["reason"] == ""
    kw = dict(frames_per_clip=25, clips_per_video=4, size=32, batch_size=1, shuffle=False, epochs=1, audio=NATIVE,
              corrupt_policy="fail", on_error="skip")
    reasons = []
    for source in (str(store), [str(d / "clean.mp4"), str(d / "damaged.mp4")]):
        with reel.Loader(source, **kw) as ld:
            paths = [os.path.basename(i.path) for b in ld for i in b.info]
            m = ld.metrics()
        assert set(paths) == {"clean.mp4"} and m["failure_count"] == 1, (paths, m["failures"])
        reasons.append(m["failures"][0]["reason"])
    assert reasons[0] == reasons[1], reasons
    assert reasons[0].startswith(f"{d / 'damaged.mp4'}: corrupt audio packet at {t:.6f} s: "), reasons
    assert reasons[0].split(f"{t:.6f} s: ", 1)[1], reasons  # the codec's reason
    with reel.Loader(str(store), **dict(kw, corrupt_policy="skip")) as ld:  # skip: delivered, the damage said
        assert sum(i.audio_corrupt_packets for b in ld for i in b.info) >= 1
