"""The public C API's promises that a compiler or a reading checks (issues 17
and 26): the names compile without a warning, no deprecation layer before
1.0, room to grow in every struct, and ownership stated on every pointer."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _compile(tmp_path: Path, body: str, *flags: str) -> subprocess.CompletedProcess:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        pytest.skip("no C compiler")
    src = tmp_path / "use.c"
    src.write_text('#include "reel/reel.h"\n' + body + "\n")
    return subprocess.run([cc, "-std=c11", "-fsyntax-only", "-Wall", "-I", str(ROOT / "include"), *flags, str(src)],
                          capture_output=True, text=True, timeout=60)


def test_no_deprecation_layer_before_1_0():
    """Issue 26: no aliases, renamed-field unions or deprecated enumerators
    before 1.0; the renames are in CHANGELOG.md, not in the headers."""
    headers = sorted((ROOT / "include" / "reel").glob("*.h"))
    assert not (ROOT / "include" / "reel" / "deprecated.h").exists()
    for header in headers:
        text = header.read_text()
        for word in ("REEL_DEPRECATED", "REEL_FIELD_RENAMED", "REEL_NO_DEPRECATED", "__attribute__((deprecated"):
            assert word not in text, f"{header.name}: {word}"
    changelog = (ROOT / "CHANGELOG.md").read_text()
    for old in ("reel_dataset_free", "resize_mode", "REEL_RESIZE_FUSED", "reel_smart_resize", "REEL_SAMPLE_RANDOM_INDICES",
                "amplification"):
        assert old in changelog, f"CHANGELOG.md does not record {old}"


def test_current_names_compile_cleanly(tmp_path):
    body = ("int f(reel_dataset **d, const reel_loader *l) { reel_stage s = REEL_STAGE_DECODE; reel_error e; int64_t c;\n"
            "  reel_loader_metrics m; e.status = REEL_E_IO; reel_dataset_destroy(d);\n"
            "  return reel_loader_get_metrics(l, &m, NULL) + (int)reel_loader_get_num_failures(l)\n"
            "         + reel_loader_get_failures_by_cause(l, REEL_E_IO, &c, &e) + (int)s + (int)e.status\n"
            "         + REEL_CONVERT_PATH_FUSED; }\n"
            "double g(const reel_loader *l, reel_transform *t, reel_clip_transform *c, reel_failure *f) {\n"
            "  size_t n; reel_remote_stats r = {0}; t->pixels.convert_path = REEL_CONVERT_PATH_AFTER_RGB;\n"
            "  c->pixels.convert_path = t->pixels.convert_path; reel_loader_get_raised_failure(l, f, 0);\n"
            "  double q = 0; reel_remote_stats_get_quantile(&r, 0.5, &q, NULL);\n"
            "  return q + (double)(reel_loader_settings_get_fields(&n) != 0)\n"
            "         + (double)(reel_remote_stats_get_fields(&n) != 0); }")
    r = _compile(tmp_path, body, "-Wextra", "-Werror")
    assert r.returncode == 0, r.stderr


def _public_structs() -> dict:
    """{struct name: its last member's declaration} of every public struct."""
    out = {}
    for header in sorted((ROOT / "include" / "reel").glob("*.h")):
        for m in re.finditer(r"typedef struct (\w+) \{(.*?)\n\} \1;", header.read_text(), re.S):
            body = re.sub(r"/\*.*?\*/", "", m.group(2), flags=re.S)
            out[m.group(1)] = [d.strip() for d in body.split(";") if d.strip()][-1]
    return out


def test_every_public_struct_has_room_to_grow_or_is_named_an_exception():
    """common.h's convention: `uint8_t reserved[N]` last, or one of the structs
    it names (reel allocates them and they grow at the end, or they are fixed);
    test_api.c checks each reserved struct at compile time and its outputs."""
    common = (ROOT / "include" / "reel" / "common.h").read_text()
    rule = common[common.index("/* Room to grow"):common.index("*/", common.index("/* Room to grow"))]
    exceptions = set(re.findall(r"\breel_\w+", rule.split("grow at", 1)[0].split("their end")[0]
                                .split("hands out by pointer", 1)[-1])) | set(
        re.findall(r"\breel_\w+", rule.split("Fixed, never to grow:", 1)[1]))
    structs = _public_structs()
    assert len(structs) >= 30, structs
    checked = (ROOT / "tests" / "c" / "test_api.c").read_text()
    missing = []
    for name, last in structs.items():
        if name in exceptions:
            assert not last.startswith("uint8_t reserved["), f"{name} has reserved: drop it from the exceptions"
            continue
        if not re.fullmatch(r"uint8_t reserved\[\d+\]", last):
            missing.append(f"{name}: last member {last!r}")
        elif f"ENDS_WITH_RESERVED({name});" not in checked:
            missing.append(f"{name}: not checked by ENDS_WITH_RESERVED in tests/c/test_api.c")
    assert not missing, "\n".join(missing)
    assert exceptions >= {"reel_error", "reel_field", "reel_frame_entry", "reel_batch"}, exceptions


OWNERSHIP = re.compile(r"borrowed|returned|static|[Cc]opied|owned by|lives? as long|until|common\.h")


def test_every_pointer_field_says_whose_it_is():
    """common.h states the ownership rule once; every pointer a public struct
    holds (not a callback) refers to it or states its lifetime, on the field
    or in its struct's comment."""
    token = re.compile(r"/\*\*<(.*?)\*/|/\*\*(.*?)\*/|/\*.*?\*/|([^;/]+?);", re.S)
    missing, checked = [], 0
    for header in sorted((ROOT / "include" / "reel").glob("*.h")):
        text = header.read_text()
        for m in re.finditer(r"(/\*\*(?:(?!\*/).)*\*/\s*)?typedef struct (\w+) \{(.*?)\n\} \2;", text, re.S):
            struct_doc, name, body = m.group(1) or "", m.group(2), m.group(3)
            fields = []  # [declaration, its docs]
            pending = ""
            for t in token.finditer(body):
                if t.group(1) is not None and fields:
                    fields[-1][1] += t.group(1)
                elif t.group(2) is not None:
                    pending = t.group(2)
                elif t.group(3) is not None:
                    fields.append([" ".join(t.group(3).split()), pending])
                    pending = ""
            for decl, doc in fields:
                if "*" in decl and "(" not in decl:
                    checked += 1
                    if not OWNERSHIP.search(doc) and not OWNERSHIP.search(struct_doc):
                        missing.append(f"{header.name} {name}: {decl}")
    assert not missing, "\n".join(missing)
    assert checked >= 25, checked


_GETTER = re.compile(r"REEL_API\s+([^;]*?)\b(reel_\w*_get(?:_\w+)?)\s*\(([^;]*?)\);", re.S)


def _getter_rule_breaches(header_name, text):
    """(getters seen, what breaks the rule) in one header's text."""
    seen, wrong = 0, []
    for m in _GETTER.finditer(text):
        ret, name, args = " ".join(m.group(1).split()), m.group(2), " ".join(m.group(3).split())
        seen += 1
        if ret == "void":
            wrong.append(f"{header_name}: void {name}: a getter returns what it gets, or a status")
        if ret == "int" and not args.endswith("reel_error *err"):
            wrong.append(f"{header_name}: int {name}({args}) has no reel_error *err")
        if ret.endswith("*") and not ret.startswith("const ") and ret != "char *":
            wrong.append(f"{header_name}: {ret} {name}: a getter's pointer is const")
        # One that returns its value cannot fail: it takes pointers only (the
        # object, and where it says how many). An argument by value (an index,
        # a label, a quantile) can be out of range: then a sentinel (-1, NULL,
        # 0) would stand for a failure, and the rule wants a status instead.
        if ret != "int":
            scalars = [a for a in args.split(",") if a.strip() and "*" not in a and a.strip() != "void"]
            if scalars:
                wrong.append(f"{header_name}: {ret} {name}({args}) takes {', '.join(s.strip() for s in scalars)}: "
                             "an argument that can be out of range needs an int status and reel_error *err")
    return seen, wrong


def test_getters_follow_one_rule():
    """Issue 26: a getter (a `_get` call) that can fail (it takes an argument
    that can be out of range) returns an `int` status, takes `reel_error *err`
    last and writes its result through a pointer; one that cannot fail returns
    its value or a const pointer, and takes pointers only."""
    seen, wrong = 0, []
    for header in sorted((ROOT / "include" / "reel").glob("*.h")):
        n, w = _getter_rule_breaches(header.name, header.read_text())
        seen, wrong = seen + n, wrong + w
    assert seen >= 40, seen
    assert not wrong, "\n".join(wrong)


def test_the_getter_rule_catches_a_sentinel_getter():
    """The rule's check is no formality: each kind of breach planted in a
    header is caught, and the two allowed forms pass."""
    planted = {
        "REEL_API const char *reel_x_get_name(const reel_x *x, int64_t label);": "int64_t label",
        "REEL_API int64_t reel_x_get_sample(const reel_x *x,\n    int64_t position);": "int64_t position",
        "REEL_API double reel_x_get_quantile(const reel_x *x, double q);": "double q",
        "REEL_API int reel_x_get_count(const reel_x *x, int64_t *n);": "no reel_error",
        "REEL_API void reel_x_get_thing(const reel_x *x, int *out);": "void",
        "REEL_API char **reel_x_get_names(const reel_x *x);": "const",
    }
    for decl, why in planted.items():
        n, wrong = _getter_rule_breaches("planted.h", decl)
        assert n == 1 and len(wrong) == 1 and why in wrong[0], (decl, wrong)
    for good in ("REEL_API int reel_x_get_name(const reel_x *x, int64_t label, const char **name, reel_error *err);",
                 "REEL_API size_t reel_x_get_size(const reel_x *x);",
                 "REEL_API const reel_field *reel_x_get_fields(size_t *count);",
                 "REEL_API const int64_t *reel_x_get_keyframes(const reel_x *x, int64_t *count);"):
        assert _getter_rule_breaches("good.h", good) == (1, []), good
