"""One definition per concept (issue 17 section 2): the field tables of the
C library (reel_loader_settings_get_fields, reel_loader_metrics_get_fields, ...)
drive the metrics JSON and the Python binding alike, and every default that
a public header documents is the one the defaults function sets."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

import reel
from reel import _reel

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "include" / "reel"


# ---------------------------------------------------------------- metrics keys
def _keys(a: dict, b: dict, where: str) -> None:
    assert sorted(a) == sorted(b), f"{where}: only in Python {sorted(set(a) - set(b))}, only in C {sorted(set(b) - set(a))}"


def test_python_metrics_have_the_keys_of_the_c_json(synth, tmp_path):
    bad = tmp_path / "broken.mp4"
    bad.write_text("not a video")
    with reel.Loader([(synth(), 0), (str(bad), 1)], frames_per_clip=2, size=32, batch_size=2, epochs=1,
                     shuffle=False) as L:
        for b in L:
            del b
        m = L.metrics()
        j = json.loads(L._loader.metrics_json())
    _keys(m, j, "top level")
    _keys(m["remote"], j["remote"], "remote")
    assert len(m["stages"]) == len(j["stages"]) == 3
    _keys(m["stages"][0], j["stages"][0], "stages")
    assert len(m["failures"]) == len(j["failures"]) == 1
    _keys(m["failures"][0], j["failures"][0], "failures")
    # the same meaning too: counts, not lists, under the same names
    assert m["failure_count"] == j["failure_count"] == 1
    assert m["failures"][0]["status"] == j["failures"][0]["status"] == _reel.STATUS["NOT_VIDEO"]
    assert m["failures_by_cause"] == j["failures_by_cause"] == {_reel.strerror(_reel.STATUS["NOT_VIDEO"]): 1}
    assert m["frames"] == j["frames"] == 2 and m["clips"] == j["clips"] == 1
    # the keys come from the one C table
    names = [n for n, _ in _reel.fields("loader_metrics")]
    assert {n for n in names if "." not in n} | {"remote", "stages", "failures", "failures_by_cause",
                                                   "failed_not_listed"} == set(j)


def test_metrics_have_no_deprecated_aliases(video):
    """No deprecation layer before 1.0 (issue 26): the renamed key is gone."""
    with reel.Loader([(video, 0)], frames_per_clip=2, size=32, batch_size=1, epochs=1) as L:
        for b in L:
            del b
        m = L.metrics()
    assert "decode_amplification" in m and "amplification" not in m
    with pytest.raises(KeyError):
        m["amplification"]
    with pytest.raises(KeyError):
        m["no_such_metric"]


def test_remote_settings_keys_come_from_the_c_table():
    from reel import _options

    c = [n for n, _ in _reel.fields("remote_settings")]
    assert sorted(_options.REMOTE_OPTIONS) == sorted(c)
    assert set(c) == set(_reel.remote_defaults())


# C fields of reel_loader_settings that no Loader keyword sets (they keep
# their C defaults).
_NO_KEYWORD = {"sampler.seconds_between_clip_starts", "sampler.frame_factor", "decoder.stream_index",
               "decoder.skip_nonref", "decoder.force_scan", "decoder.check_keyframes", "decoder.gop_contexts"}


def test_each_loader_keyword_reaches_its_c_field_by_its_full_name():
    """Issue 26 point 4: a Loader keyword can be followed to its C field by
    reading. The plain ones are rows (keyword, full C field name, converter)
    of _loader.LOADER_FIELDS; the others are converted by name in
    _loader_settings._converted_settings. Together they name every keyword once, and
    every C field of reel_loader_settings is set by one of them."""
    import inspect

    from reel import _loader, _loader_settings

    c_fields = dict(_reel.fields("loader_settings"))
    rows = [k for k, _, _ in _loader.LOADER_FIELDS]
    assert len(rows) == len(set(rows)), "a keyword with two rows"
    for keyword, field, _ in _loader.LOADER_FIELDS:
        assert field in c_fields, f"{keyword}: no C field {field}"
    converted = set(re.findall(r'c\["(\w+)"\]', inspect.getsource(_loader_settings._converted_settings)))
    keywords = set(_loader.loader_defaults())
    assert keywords == set(inspect.signature(reel.Loader).parameters) - {"self", "source"}
    assert not converted & set(rows), f"converted twice: {sorted(converted & set(rows))}"
    assert converted | set(rows) == keywords, f"reach no C field: {sorted(keywords - converted - set(rows))}"
    # each row's value arrives under its C field, converted to its type
    for keyword, field, convert in _loader.LOADER_FIELDS:
        value = 0.25 if c_fields[field] in (4, 5) else 3
        assert _loader.loader_settings({keyword: value})[field] == convert(value), keyword
    # the renamed ones, by their C names
    s = _loader.loader_settings({"decode_threads": 3, "divisor": 2.0, "scale": (0.5, 0.75), "convert_path": "after_rgb",
                                 "apply_rotation": False, "shard_mode": "drop", "corrupt_policy": "skip", "sampling_range_end": 1.5})
    assert s["decode_threads"] == 3 and s["transform.pixels.divisor"] == 2.0
    assert (s["transform.scale_min"], s["transform.scale_max"]) == (0.5, 0.75)
    assert s["transform.pixels.convert_path"] == _reel.CONVERT_PATH_AFTER_RGB
    assert s["transform.pixels.apply_rotation"] == 0
    assert s["shard_mode"] == _reel.SHARD_DROP and s["decoder.corrupt_policy"] == _reel.CORRUPT_SKIP
    # the decoder options by their member paths (reel_loader_settings.decoder)
    d = _loader.loader_settings({"decoder_threads": 2, "index_mode": "read_write", "remote": {"max_retries": 1}})
    assert d["decoder.threads"] == 2 and d["decoder.index_mode"] == _reel.INDEX_READ_WRITE
    assert d["decoder.remote"]["max_retries"] == 1
    assert not {"decoder_threads", "index_mode", "corrupt_policy", "remote"} & (set(c_fields) | set(d))
    assert s["sampler.range_end"] == 1.5
    # every C field is reached by some keyword
    everything = dict(scale=(0.1, 1.0), ratio=(0.5, 2.0), samples=[0], crop="center", resize=(80, 90),
                      size_policy={"factor": 28, "resized_height": 56, "resized_width": 56, "min_pixels": 1.0, "max_pixels": 2e6,
                                   "total_pixels": 1e7},
                      audio={"sample_rate": 16000, "channels": 1, "stream_index": 1, "missing": "zeros"})
    reached = set(_loader.loader_settings(everything)) | set(_loader.loader_settings({"resize": 100}))
    reached |= {field for _, field, _ in _loader.LOADER_FIELDS}
    assert set(c_fields) - reached == _NO_KEYWORD
    with pytest.raises(TypeError, match="no_such"):
        _loader.loader_settings({"no_such": 1})


def test_qwen_defaults_and_the_state_version_are_defined_in_c_only(synth):
    """qwen-vl-utils' numbers and the loader state's version are C's
    (REEL_QWEN_*, the sampler and size policy defaults,
    REEL_CHECKPOINT_VERSION); the Python modules read them from the extension
    and write none of them."""
    from reel import _loader, vlm

    d = _reel.loader_defaults()
    assert (vlm.FPS, vlm.FPS_MIN_FRAMES, vlm.FPS_MAX_FRAMES, vlm.FRAME_FACTOR) == (
        d["sampler.fps"], d["sampler.min_frames"], d["sampler.max_frames"], d["sampler.frame_factor"])
    assert _reel.QWEN_FACTOR == d["size_policy.factor"] == 14 * vlm.SPATIAL_MERGE_SIZE
    header = (INCLUDE / "convert.h").read_text() + (INCLUDE / "loader.h").read_text()
    for name in ("SPATIAL_MERGE_SIZE", "IMAGE_MIN_TOKENS", "IMAGE_MAX_TOKENS", "MODEL_SEQ_LEN",
                 "TOTAL_PIXELS_SHARE"):
        m = re.search(r"#define REEL_QWEN_%s\s+([0-9.]+)" % name, header)
        assert m and float(m.group(1)) == getattr(_reel, "QWEN_" + name), name
    m = re.search(r"#define REEL_CHECKPOINT_VERSION\s+(\d+)", header)
    assert m and int(m.group(1)) == _reel.CHECKPOINT_VERSION == _loader.STATE_VERSION
    with reel.Loader([synth()], frames_per_clip=2, size=32, batch_size=1) as L:
        assert L.state_dict()["version"] == _reel.CHECKPOINT_VERSION
    # no copy of them in the Python code (docstrings may quote them)
    import ast

    for py in ("vlm.py", "_loader.py", "_loader_settings.py", "torch.py", "ray.py"):
        tree = ast.parse((ROOT / "python" / "reel" / py).read_text())
        numbers = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) in (int, float)}
        assert not numbers & {768, 16384, 128000, 0.9}, f"{py} writes {numbers & {768, 16384, 128000, 0.9}} itself"
        for n in ast.walk(tree):
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and "STATE_VERSION" in ast.dump(n):
                assert not isinstance(n.value, ast.Constant), f"{py} sets the state version itself"


def test_status_range_is_exported_not_copied():
    assert _reel.E_LAST == min(_reel.STATUS.values())


# ---------------------------------------------------------------- documented defaults
# Enum types whose documented default is written without its prefix.
ENUM_PREFIX = {
    "reel_sampler_kind": "SAMPLER_", "reel_clip_policy": "CLIP_", "reel_resize_kind": "RESIZE_",
    "reel_crop_kind": "CROP_", "reel_flip_kind": "FLIP_", "reel_filter": "FILTER_",
    "reel_convert_path": "CONVERT_PATH_", "reel_dtype": "DTYPE_", "reel_batch_layout": "BATCH_",
    "reel_shard_mode": "SHARD_", "reel_error_policy": "ON_ERROR_", "reel_index_mode": "INDEX_",
    "reel_corrupt_policy": "CORRUPT_", "reel_color": "COLOR_",
}
UNITS = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def _struct_fields(header: Path, struct: str) -> list:
    """[(type, [names], doc)] of a struct's members, with the doc comment
    before (/** */) or after (/**< */) each declaration."""
    text = header.read_text()
    m = re.search(r"typedef struct %s \{(.*?)\n\} %s;" % (struct, struct), text, re.S)
    assert m, f"no struct {struct} in {header}"
    body = m.group(1)
    out = []
    pending = ""
    pos = 0
    token = re.compile(r"/\*\*<(.*?)\*/|/\*\*(.*?)\*/|([^;/]+?);", re.S)
    while True:
        t = token.search(body, pos)
        if not t:
            break
        pos = t.end()
        if t.group(1) is not None:  # trailing doc: the last declaration's
            if out:
                out[-1][2] += " " + t.group(1)
        elif t.group(2) is not None:
            pending = t.group(2)
        else:
            decl = " ".join(t.group(3).split())
            dm = re.match(r"(?:const )?(?:struct )?([\w ]+?\**)\s*((?:\*?\w+(?:\[\w+\])?\s*,\s*)*\*?\w+(?:\[\w+\])?)$",
                          decl)
            if dm and "(" not in decl:
                names = [re.sub(r"[\[*].*|\*", "", n.strip()).lstrip("*") for n in dm.group(2).split(",")]
                out.append([dm.group(1).strip(), names, pending])
            pending = ""
    return [(t, n, " ".join(re.sub(r"^\s*\*", " ", d, flags=re.M).split())) for t, n, d in out]


def _documented(doc: str) -> str:
    m = re.search(r"\(default\s+([^()]+)\)", doc, re.I)  # "... (default 0): ..."
    if m:
        return m.group(1).strip()
    m = re.search(r"\bdefault\s+(.+?)(?:;|\.\s|\.$|$)", doc, re.I)
    if m:
        return m.group(1).strip()
    m = re.search(r"(-?\d[\d.]*)\b[^.;]*?\(default\)", doc)
    return m.group(1) if m else ""


def _value(text: str, ctype: str):
    text = re.sub(r"\s*\(.*\)$", "", text.strip())  # "4096 (0: the default)"
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*(KiB|MiB|GiB)?", text)
    if m:
        v = float(m.group(1)) * UNITS.get(m.group(2) or "", 1)
        return int(v) if v == int(v) else v
    m = re.fullmatch(r"(\d+)/(\d+)", text)
    if m:
        return float(Fraction(int(m.group(1)), int(m.group(2))))
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", text):
        name = text[len("REEL_"):] if text.startswith("REEL_") else ENUM_PREFIX[ctype] + text
        return getattr(_reel, name)
    raise AssertionError(f"cannot read the documented default {text!r}")


STRUCTS = [
    ("sampler_settings.h", "reel_sampler_settings", "sampler.", "loader"),
    ("decoder.h", "reel_decoder_settings", "decoder.", "loader"),
    ("loader.h", "reel_clip_transform", "transform.", "loader"),
    ("convert.h", "reel_pixel_settings", "transform.pixels.", "loader"),
    ("loader.h", "reel_loader_settings", "", "loader"),
    ("io.h", "reel_remote_settings", "", "remote"),
]


def test_every_documented_default_is_the_one_set():
    actual = {"loader": _reel.loader_defaults(), "remote": _reel.remote_defaults()}
    # the loader's own defaults for its embedded decoder settings, as loader.h documents them
    member = [doc for _, names, doc in _struct_fields(INCLUDE / "loader.h", "reel_loader_settings")
              if names == ["decoder"]]
    m = re.search(r"loader's own defaults[^:]*:\s*(.*?);", member[0] if member else "")
    assert m, "loader.h: reel_loader_settings.decoder documents no defaults of its own"
    own = dict(p.split(None, 1) for p in re.split(r"\s*,\s*", m.group(1)))
    assert set(own) == {"threads", "index_mode", "gop_contexts"}, own
    checked, wrong = [], []
    for header, struct, prefix, table in STRUCTS:
        for ctype, names, doc in _struct_fields(INCLUDE / header, struct):
            text = own.get(names[0], "") if struct == "reel_decoder_settings" and names[0] in own else _documented(doc)
            keys = [prefix + n for n in names]
            if not text or not all(k in actual[table] for k in keys):
                continue
            parts = re.split(r"\s*,\s*|\s+x\s+", text) if len(names) > 1 else [text]
            if len(parts) == 1:
                parts = parts * len(names)
            assert len(parts) == len(names), f"{struct}.{names}: documented {text!r}"
            for key, part in zip(keys, parts):
                want, got = _value(part, ctype), actual[table][key]
                if isinstance(got, tuple):  # float[3]: each
                    ok = all(g == pytest.approx(want) for g in got)
                else:
                    ok = got == pytest.approx(want)
                checked.append(key)
                if not ok:
                    wrong.append(f"{struct} {key}: documented {part!r}, set {got!r}")
    assert not wrong, "\n".join(wrong)
    # a parser that reads nothing would pass: it must have read most fields
    assert len(checked) >= 45, sorted(checked)
    for key in ("alignment", "transform.ratio_min", "transform.crop_height", "transform.pixels.apply_rotation",
                "transform.pixels.divisor", "readahead_max", "failure_log_size", "sampler.kind",
                "decoder.corrupt_policy", "decoder.threads", "decoder.index_mode", "decoder.gop_contexts",
                "decoder.check_keyframes", "world_size", "sampler.seconds_between_frames"):
        assert key in checked, key
