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


def test_every_loader_argument_is_converted_or_a_c_setting():
    """A Loader argument is either converted by name in _settings or carries
    the name of a C setting (so a new setting is one line in C, one here)."""
    import inspect

    from reel import _loader

    converted = set(inspect.signature(_loader._settings).parameters) - {"same_name"}
    leaves = set(_loader._C_SETTINGS)
    for name in inspect.signature(reel.Loader).parameters:
        if name in ("self", "source"):
            continue
        assert name in converted or name in leaves, f"Loader({name}=...) maps to no C setting"
    by_argument = [n for n, _ in _reel.fields("loader_settings") if not n.startswith("size_policy.")]
    assert len(leaves) == len(by_argument), "two C settings share a last name part"
    # the size policy's fields keep their member names (set from size_policy=)
    assert "size_policy.kind" in {n for n, _ in _reel.fields("loader_settings")}


def test_status_range_is_exported_not_copied():
    assert _reel.E_LAST == min(_reel.STATUS.values())


# ---------------------------------------------------------------- documented defaults
# Enum types whose documented default is written without its prefix.
ENUM_PREFIX = {
    "reel_sampler_kind": "SAMPLER_", "reel_clip_policy": "CLIP_", "reel_resize_kind": "RESIZE_",
    "reel_crop_kind": "CROP_", "reel_flip_kind": "FLIP_", "reel_filter": "FILTER_",
    "reel_convert_path": "CONVERT_PATH_", "reel_dtype": "DTYPE_", "reel_batch_layout": "BATCH_",
    "reel_shard_mode": "SHARD_", "reel_error_policy": "ON_ERROR_", "reel_index_mode": "INDEX_",
    "reel_corrupt_policy": "CORRUPT_",
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
    ("sampler.h", "reel_sampler_settings", "sampler.", "loader"),
    ("loader.h", "reel_clip_transform", "transform.", "loader"),
    ("loader.h", "reel_loader_settings", "", "loader"),
    ("io.h", "reel_remote_settings", "", "remote"),
]


def test_every_documented_default_is_the_one_set():
    actual = {"loader": _reel.loader_defaults(), "remote": _reel.remote_defaults()}
    checked, wrong = [], []
    for header, struct, prefix, table in STRUCTS:
        for ctype, names, doc in _struct_fields(INCLUDE / header, struct):
            text = _documented(doc)
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
    for key in ("alignment", "transform.ratio_min", "transform.crop_height", "readahead_max", "failure_log_size",
                "sampler.kind", "corrupt_policy", "world_size", "sampler.seconds_between_frames"):
        assert key in checked, key
