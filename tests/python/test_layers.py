# tests/python/test_layers.py: the library's dependency graph is the one
# docs/ARCHITECTURE.md draws (issue 17, Checks), by scripts/check_layers.py:
# no include or call from a module of src/ into one above it (sources and
# built objects), the public headers in the same order, no circle across the
# files of src/io, "is it remote?" asked only where a path enters, no private
# header named like a public one, a module's internal headers included by
# that module alone (another uses the inter-module headers declared for it,
# and calls only what they declare). The check passes on the tree and finds
# each fault planted in a copy of it. docs/ARCHITECTURE.md names every file
# of src/.
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_layers.py"

_spec = importlib.util.spec_from_file_location("check_layers", SCRIPT)
assert _spec and _spec.loader
layers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layers)


def _build_dir() -> Path:
    cli = os.environ.get("REEL_CLI")
    return Path(cli).parent if cli else ROOT / "build"


@pytest.fixture
def copy(tmp_path) -> Path:
    """A copy of the tree's sources and public headers to plant faults in."""
    shutil.copytree(ROOT / "src", tmp_path / "src")
    shutil.copytree(ROOT / "include", tmp_path / "include")
    return tmp_path


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_the_modules_are_the_documented_ones():
    assert {p.name for p in (ROOT / "src").iterdir() if p.is_dir()} == set(layers.ALLOWED)
    assert "pipeline" not in layers.ALLOWED["store"] and "convert" not in layers.ALLOWED["core"]


def test_the_tree_keeps_its_layers_sources_and_objects():
    r = subprocess.run([sys.executable, str(SCRIPT), str(_build_dir())], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    found, had_objects = layers.check(ROOT, _build_dir())
    assert found == []
    assert had_objects, f"no objects in {_build_dir()}: linked calls were not checked (build the tree first)"


def test_the_reader_sees_includes_and_calls():
    assert layers.included_module("pipeline/dataset_internal.h", "store") == "pipeline"
    assert layers.included_module("reel/convert.h", "core") == "convert"
    assert layers.IDENT_RE.findall(layers.code_of('/* reel_loader_next( */ x = reel_a(ds, "reel_b");')) == ["reel_a"]
    tree = layers.Tree(ROOT)
    assert tree.defined["reel_dataset_get_size"] == "pipeline/dataset.c"
    assert tree.defined["reel_decoder_open"] == "decoder/open.c" and "reel__io_is_remote" in tree.defined
    assert layers.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_planted_upward_include_and_call_are_found(copy):
    assert layers.check(copy)[0] == []
    _append(copy / "src" / "core" / "error.c", '\n#include "pipeline/loader_internal.h"\n')
    _append(copy / "src" / "store" / "index.c", "\nint reel__planted(void);\nint reel__planted(void)\n{\n"
            "    return (int)reel_dataset_get_size(0);\n}\n")
    _append(copy / "include" / "reel" / "common.h", '\n#include "convert.h"\n')
    found, _ = layers.check(copy)
    assert any("src/core/error.c: core -> pipeline" in f for f in found), found
    assert any("src/store/index.c: store -> pipeline (calls reel_dataset_get_size)" in f for f in found), found
    assert any("include/reel/common.h: core -> convert" in f for f in found), found


def test_a_planted_src_io_circle_is_found(copy):
    io = copy / "src" / "io"
    # the leaf calls the front end: io.c -> io_common.c -> io.c
    _append(io / "io_common.c", "\nint reel__planted(const char *u)\n{\n    return reel__io_open(0, u, 0, 0);\n}\n")
    # a header circle, and a transport on top of the front end
    _append(io / "pool.h", '\n#include "io/http.h"\n')
    _append(io / "http.h", '\n#include "io/pool.h"\n')
    (io / "file.c").write_text('#include "io/io_front.h"\n' + (io / "file.c").read_text())
    found, _ = layers.check(copy)
    assert any(f.startswith("src/io call cycle among") and "io/io.c" in f and "io/io_common.c" in f
               for f in found), found
    assert any(f.startswith("src/io include cycle among io/http.h, io/pool.h") for f in found), found
    assert any("file.c is a transport but includes io/io_front.h" in f for f in found), found


def test_a_source_that_asks_again_whether_it_is_remote_is_found(copy):
    _append(copy / "src" / "pipeline" / "source_video.c",
            "\nint reel__planted(const char *p);\nint reel__planted(const char *p)\n{\n"
            "    return reel__io_is_remote(p);\n}\n")
    found, _ = layers.check(copy)
    assert found == ["src/pipeline/source_video.c asks reel__io_is_remote: the entry (or the public entry above) "
                     "has decided it"], found


def test_a_private_header_named_like_a_public_one_is_found(copy):
    shutil.copy(copy / "src" / "pipeline" / "entry.h", copy / "src" / "pipeline" / "dataset.h")
    found, _ = layers.check(copy)
    assert "private header src/pipeline/dataset.h is named like a public one" in found, found


def test_a_module_that_reaches_into_another_ones_internals_is_found(copy):
    src = copy / "src"
    # the loader's video source writes the decoder's settings again; the
    # builder reads the sampler's internals; the dataset uses the store's
    # reader side that is the loader's, and a decoder header no one declared
    _append(src / "pipeline" / "source_video.c", '\n#include "decoder/internal.h"\n')
    _append(src / "pack" / "record.c", '\n#include "pipeline/sampler_internal.h"\n')
    _append(src / "pack" / "pack.c", '\n#include "store/store_for_pipeline.h"\n')
    _append(src / "pipeline" / "loader.c", '\n#include "decoder/decode_plan.h"\n')
    # a prototype written out by hand instead of a header: a call of another
    # module's reel__ function that no inter-module header declares for it
    _append(src / "pipeline" / "ring.c", "\nuint16_t reel__f32_to_f16(float f);\nint reel__planted(void);\n"
            "int reel__planted(void)\n{\n    return reel__f32_to_f16(1.0f);\n}\n")
    found, _ = layers.check(copy)
    assert sorted(found) == sorted([
        "private: src/pipeline/source_video.c includes decoder/internal.h, an internal header of src/decoder "
        "(its module's alone)",
        "private: src/pack/record.c includes pipeline/sampler_internal.h, an internal header of src/pipeline "
        "(its module's alone)",
        "private: src/pack/pack.c includes store/store_for_pipeline.h, an inter-module header not declared for pack",
        "private: src/pipeline/loader.c includes decoder/decode_plan.h, which is no inter-module header "
        "(check_layers.INTER_MODULE)",
        "private: src/pipeline/ring.c calls reel__f32_to_f16 of src/convert, declared in no inter-module header "
        "for pipeline",
    ]), found


def test_an_inter_module_header_states_its_purpose_and_exists(copy):
    dtype = copy / "src" / "convert" / "dtype.h"
    dtype.write_text(dtype.read_text().split("*/", 1)[1])
    shutil.move(copy / "src" / "decoder" / "decoder_for_loader.h", copy / "src" / "decoder" / "gone.h")
    found, _ = layers.check(copy)
    assert "inter-module header src/convert/dtype.h does not open with its purpose (/* dtype.h: ...)" in found, found
    assert ("inter-module header decoder/decoder_for_loader.h is declared in INTER_MODULE but is not in src/"
            in found), found


def test_the_inter_module_headers_are_the_ones_in_use():
    """Each declared header is included by some module it is declared for (no stale entry)."""
    tree = layers.Tree(ROOT)
    used = {(inc, f.split("/")[0]) for f, incs in tree.raw_includes.items() for inc in incs}
    for h, users in layers.INTER_MODULE.items():
        if not h.startswith("core/"):
            assert {m for inc, m in used if inc == h} & users, f"{h}: declared for {sorted(users)}, used by none"


def test_the_architecture_names_every_file_of_src():
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    files = sorted(p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src").glob("*/*.[ch]"))
    assert len(files) > 90  # the glob sees the tree
    # by its path, or by its name in the section of its module
    missing = [f for f in files if f not in doc and f"`{f.split('/')[1]}`" not in doc]
    assert missing == [], f"docs/ARCHITECTURE.md does not name {missing}"


def test_a_call_circle_among_the_loaders_files_is_found(copy):
    assert layers.cycle_findings(layers.Tree(copy)) == []
    # loader_vary.c (stage 1 and 3 of variable batches) calling back up into
    # loader_stages.c, which calls it: the circle the loader had until
    # reel__batchbuf_note_failure moved down into ring.c
    _append(copy / "src" / "pipeline" / "loader_vary.c",
            "\nint reel__planted(reel_loader *l, reel_slot *s);\nint reel__planted(reel_loader *l, reel_slot *s)\n{\n"
            "    reel__loader_slot_finish(l, s);\n    return 0;\n}\n")
    found, _ = layers.check(copy)
    assert found == ["src/pipeline call cycle among pipeline/loader_stages.c, pipeline/loader_vary.c"], found
