"""Strict mode (issue 17 section 5): CI runs `make test` with REEL_STRICT=1,
and the only skips it allows are the rules of tests/allowed_skips.txt, each
with a reason and naming a test that exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import load_allowed_skips, skip_allowed

ROOT = Path(__file__).resolve().parents[2]
LIST = ROOT / "tests" / "allowed_skips.txt"
GLOB = re.compile(r"[*?\[]")


def _rules() -> list:
    rules = []
    for line in LIST.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            rules.append([p.strip() for p in line.split(" | ", 2)])
    return rules


def test_ci_runs_make_test_in_strict_mode_and_nothing_else():
    lines = [l.strip() for l in (ROOT / ".ci/run").read_text().splitlines()]
    code = [l for l in lines if l and not l.startswith("#")]
    assert "export REEL_STRICT=1" in code
    assert code[-1] == "make test"
    assert not [l for l in code if "make" in l and l != "make test"]


def test_every_rule_has_a_reason_and_names_a_test_that_exists():
    rules = _rules()
    assert rules and len(load_allowed_skips(LIST)) == len(rules)
    for where, message, why in rules:
        assert len(why) > 20, f"{where}: say why this skip is legitimate"
        assert message and message != "*", f"{where}: the message pattern must say which skip"
        if where.startswith("c/"):
            parts = where.split("/")
            assert len(parts) in (3, 4), where
            src = ROOT / "tests" / "c" / f"{parts[1]}.c"
            assert src.is_file(), f"{where}: no {src}"
            if not GLOB.search(parts[2]):
                assert f"TEST({parts[2]})" in src.read_text(), f"{where}: no such test"
        elif where.startswith("wheel/"):
            assert (ROOT / "scripts" / where[len("wheel/"):]).is_file(), f"{where}: no such runner stage"
        else:
            assert where.startswith("py/"), where
            file, _, name = where[3:].partition("::")
            assert (ROOT / file).is_file(), f"{where}: no {file}"
            if name and not GLOB.search(name):
                assert f"def {name.split('[')[0]}(" in (ROOT / file).read_text(), f"{where}: no such test"


def test_matching_takes_the_test_and_the_message():
    rules = load_allowed_skips(LIST)
    valgrind = "c/test_pipeline_loader/no_leak_under_valgrind_after_a_shutdown_mid_epoch"
    assert skip_allowed(valgrind, "valgrind does not run sanitized binaries", rules)
    assert not skip_allowed(valgrind, "no valgrind", rules)
    assert not skip_allowed("py/tests/python/test_lint.py::test_ruff_clean", "ruff is not installed (make test installs it)", rules)
    assert not skip_allowed("py/tests/python/test_remote.py::test_s3_listing", "could not import 'boto3'", rules)


def test_a_malformed_rule_is_refused(tmp_path):
    bad = tmp_path / "skips.txt"
    bad.write_text("# comment\nc/test_x/y | no reason given\n")
    try:
        load_allowed_skips(bad)
    except ValueError as exc:
        assert "WHERE | MESSAGE | WHY" in str(exc)
    else:
        raise AssertionError("a rule without a reason was accepted")


def test_the_wheel_stage_is_never_skipped():
    """scripts/run_tests.sh builds the wheel (scripts/build_wheel.sh, no
    cache needed) and always tests it: no skip to allow, no option to skip a
    missing wheel, and a failed build counts as a failure."""
    runner = (ROOT / "scripts" / "run_tests.sh").read_text()
    # the build starts in the background (0b) whenever the wheel stage runs
    start = runner[runner.index(" 0b. the wheel's build"):runner.index(" 1. C tests\n")]
    assert "if [ $do_wheel -eq 1 ]; then" in start and "bash scripts/build_wheel.sh >\"$wheel_log\" 2>&1 &" in start
    stage = runner[runner.index(" 4. the wheel\n"):]
    assert 'wait "$wheel_pid" || wheel_ok=0' in stage and "bash scripts/test_wheel.sh 2>&1" in stage
    assert "total_fail=$((total_fail + 1))" in stage.split("bash scripts/test_wheel.sh")[0]
    code = [line for line in stage[:stage.index(" summary\n")].splitlines() if not line.startswith("#")]
    assert not [line for line in code if "skip" in line], code
    assert "--if-present" not in (ROOT / "scripts" / "test_wheel.sh").read_text()
    assert "--if-cached" not in (ROOT / "scripts" / "build_wheel.sh").read_text()
    check = ["python3", str(ROOT / "scripts" / "allowed_skips.py"), "wheel/test_wheel.sh"]
    assert subprocess.run(check + ["no FFmpeg cache in build-wheel/ and no wheel in dist/"], timeout=60).returncode == 1
