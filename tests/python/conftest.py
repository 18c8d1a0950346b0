# tests/python/conftest.py: shared fixtures for the Python tests: the reel
# package (from an editable or regular install), small synthetic videos whose
# frames carry their index, the shared real videos, and optional numpy/torch.
from __future__ import annotations

import importlib.util
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# the skip list's one reader, shared with scripts/run_tests.sh
_spec = importlib.util.spec_from_file_location("reel_allowed_skips", ROOT / "scripts" / "allowed_skips.py")
assert _spec and _spec.loader
_skips = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_skips)
skip_allowed = _skips.skip_allowed

try:
    import reel
    import reel._reel  # noqa: F401  (the extension must import)
    import reel._testing
except ImportError as exc:  # pragma: no cover - a setup problem, not a test failure mode
    pytest.exit(
        f"cannot import reel ({exc}). Build and install it first, e.g.\n"
        f"    python3 -m pip install --no-build-isolation -e {ROOT}\n",
        returncode=3,
    )

reel.set_ffmpeg_log_level(0)  # the synthetic-video encoder is chatty

# Strict mode (REEL_STRICT=1, which .ci/run sets): a skip fails the test
# unless tests/allowed_skips.txt lists it ("py/<node id> | message | why",
# fnmatch patterns), so a clean clone in CI cannot pass by skipping.
STRICT = os.environ.get("REEL_STRICT") == "1"
ALLOWED_SKIPS = Path(os.environ.get("REEL_ALLOWED_SKIPS") or ROOT / "tests" / "allowed_skips.txt")


def load_allowed_skips(path: Path = ALLOWED_SKIPS) -> list:
    """The (where, message) patterns of the strict-mode skip list (scripts/allowed_skips.py)."""
    return _skips.load_allowed_skips(path)


_RULES: list = []


def _strict_reason(report) -> str:
    """The skip reason of a report when strict mode turns it into a failure, else ''."""
    if not STRICT or not report.skipped or hasattr(report, "wasxfail"):
        return ""
    if not _RULES:
        _RULES.extend(load_allowed_skips())
    longrepr = report.longrepr
    reason = str(longrepr[-1]) if isinstance(longrepr, tuple) else str(longrepr)
    if reason.startswith("Skipped: "):
        reason = reason[len("Skipped: "):]
    where = f"py/{report.nodeid}"
    return "" if skip_allowed(where, reason, _RULES) else f"{where}: {reason}"


def _fail_strict(report, reason: str) -> None:
    report.outcome = "failed"
    report.longrepr = f"strict mode (REEL_STRICT=1): skip not allowed by tests/allowed_skips.txt: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    reason = _strict_reason(report)
    if reason:
        _fail_strict(report, reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    reason = _strict_reason(report)
    if reason:
        _fail_strict(report, reason)


@pytest.fixture(scope="session")
def np():
    return pytest.importorskip("numpy")


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")


class Synth:
    """Writes (once per session) synthetic videos whose frames carry their index."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache: dict = {}

    def __call__(self, ext: str = "mp4", **params) -> str:
        key = (ext, tuple(sorted(params.items())))
        if key not in self.cache:
            path = self.root / f"synth{len(self.cache)}.{ext}"
            args = dict(width=160, height=120, frames=60, gop=16)
            args.update(params)
            reel._testing.write_video(str(path), **args)
            self.cache[key] = str(path)
        return self.cache[key]


@pytest.fixture(scope="session")
def synth(tmp_path_factory) -> Synth:
    return Synth(tmp_path_factory.mktemp("videos"))


@pytest.fixture(scope="session")
def video(synth) -> str:
    """h264 160x120, 60 frames at 25 fps, keyframes every 16, B-frames."""
    return synth()


def read_indices(frames) -> list:
    """The index embedded in each synthetic frame (HWC uint8 Frames)."""
    return reel._testing.read_indices(frames)


@pytest.fixture(scope="session")
def shared_videos() -> Path:
    d = os.environ.get("REEL_SHARED_VIDEOS") or str(ROOT.parent / "shared" / "videos")
    p = Path(d)
    if not p.is_dir() or not any(p.iterdir()):
        pytest.skip(f"shared videos not found at {p} (set REEL_SHARED_VIDEOS)")
    return p


@pytest.fixture(scope="session")
def ffmpeg() -> str:
    exe = shutil.which("ffmpeg")
    if not exe:
        pytest.skip("the ffmpeg CLI is not installed")
    return exe


def run_python(code: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (same environment)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def in_child(fn) -> object:
    """Runs fn() in a forked child and returns its (pickled) result or exception."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            try:
                out = ("ok", fn())
            except BaseException as exc:  # noqa: B902 - report everything to the parent
                out = ("err", repr(exc))
            with os.fdopen(w, "wb") as f:
                pickle.dump(out, f)
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    return pickle.loads(data)
