#!/usr/bin/env bash
# scripts/run_tests.sh: run every test suite and print one summary line.
#
#   0. (with --build-first) build the normal tree, build/;
#   1. the C tests of the normal tree with ctest;
#   2. the sanitizer tree (build-asan/, REEL_SANITIZE=address,undefined):
#      configured and built here, its C tests run with ctest;
#      2b. the threaded C tests under ThreadSanitizer (build-tsan/, clang);
#      2c. the libFuzzer targets (build-fuzz/, scripts/fuzz.sh): regression
#          inputs, then FUZZ_SECONDS (default 20) of fuzzing each;
#   3. pytest on tests/python, when it holds tests;
#   4. the self-contained wheel: scripts/build_wheel.sh builds it from this
#      tree (the first time also zig, FFmpeg and the bundled libraries, then
#      cached in build-wheel/; after that reel only, a minute or two), libreel
#      with the CUDA kernels (REEL_CUDA=ON, NVRTC from .deps/cuda12: the CUDA
#      build of make test; docs/GPU.md), and scripts/test_wheel.sh tests it.
#      Never skipped.
#
# Each C test binary (tests/c/harness.c) reports "N passed, N failed[, N skipped]";
# those counts and pytest's are summed. A binary that crashed, timed out or
# failed after its summary (e.g. a leak report) counts as one failure more, as
# does a stage that could not run (e.g. the sanitizer build failing).
# The LAST line printed is exactly "N passed, N failed, N skipped".
# Exit status: 0 iff nothing failed.
#
# Options: --build DIR (default build), --asan DIR (default build-asan),
#          --build-first, --no-c, --no-asan, --no-tsan, --no-fuzz, --no-python, --no-wheel,
#          --asan-only, --tsan-only, --fuzz-only,
#          --quick (make check: the C tests of build/ and pytest -m "not slow"
#          without the Ray files; no sanitizer trees, fuzzing or wheel)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

build=build
asan=build-asan
tsan=build-tsan
fuzz=build-fuzz
do_c=1 do_asan=1 do_tsan=1 do_fuzz=1 do_py=1 do_wheel=1 build_first=0 quick=0
ctest_exclude=""
while [ $# -gt 0 ]; do
    case $1 in
        --build) build=$2; shift ;;
        --asan) asan=$2; shift ;;
        --build-first) build_first=1 ;;
        --no-c) do_c=0 ;;
        --no-asan) do_asan=0 ;;
        --no-tsan) do_tsan=0 ;;
        --no-fuzz) do_fuzz=0 ;;
        --tsan-only) do_c=0; do_asan=0; do_fuzz=0; do_py=0; do_wheel=0 ;;
        --fuzz-only) do_c=0; do_asan=0; do_tsan=0; do_py=0; do_wheel=0 ;;
        --no-python) do_py=0 ;;
        --no-wheel) do_wheel=0 ;;
        --asan-only) do_c=0; do_tsan=0; do_fuzz=0; do_py=0; do_wheel=0 ;;
        --quick) quick=1; do_asan=0; do_tsan=0; do_fuzz=0; do_wheel=0 ;;
        *) echo "run_tests.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

abspath() { case $1 in /*) echo "$1" ;; *) echo "$root/$1" ;; esac; }
build=$(abspath "$build")
asan=$(abspath "$asan")
tsan=$(abspath "$tsan")
fuzz=$(abspath "$fuzz")

total_pass=0 total_fail=0 total_skip=0
notes=()

note() { notes+=("$*"); echo "run_tests: $*" >&2; }

# run_ctest DIR LABEL: runs ctest in DIR and adds up the harness summaries.
run_ctest() {
    local dir=$1 label=$2 filter=${3:-} summary rc p=0 f=0 s=0 extra=0
    if [ ! -f "$dir/CTestTestfile.cmake" ]; then
        note "$label: $dir is not a configured build tree"
        total_fail=$((total_fail + 1))
        return
    fi
    summary="$dir/test-summary.tsv"
    rm -f "$summary"
    echo "==> $label: ctest in $dir" >&2
    (cd "$dir" && REEL_TEST_SUMMARY_FILE="$summary" \
        ctest --output-on-failure -j2 ${filter:+-R "$filter"} ${ctest_exclude:+-E "$ctest_exclude"})
    rc=$?

    if [ -f "$summary" ]; then
        read -r p f s < <(awk -F'\t' '{p += $2; f += $3; s += $4} END {print p+0, f+0, s+0}' "$summary")
    fi
    if [ $rc -ne 0 ]; then
        # Tests ctest saw fail whose binary reported no failure of its own
        # (crash, timeout, sanitizer report after the summary line).
        local failed_log="$dir/Testing/Temporary/LastTestsFailed.log" name reported
        if [ -f "$failed_log" ]; then
            while IFS= read -r line; do
                name=${line#*:}
                [ -n "$name" ] || continue
                reported=0
                [ -f "$summary" ] && reported=$(awk -F'\t' -v n="$name" \
                    '$1 == n {f += $3} END {print f+0}' "$summary")
                if [ "$reported" -eq 0 ]; then
                    extra=$((extra + 1))
                    note "$label: $name failed without a failing check (crash, timeout, sanitizer report, or not built)"
                fi
            done <"$failed_log"
        fi
        if [ $f -eq 0 ] && [ $extra -eq 0 ]; then
            extra=1
            note "$label: ctest failed (exit $rc)"
        fi
    fi
    f=$((f + extra))
    echo "==> $label: $p passed, $f failed, $s skipped" >&2
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    total_skip=$((total_skip + s))
}

summary_line() {
    echo "$total_pass passed, $total_fail failed, $total_skip skipped"
}

# run_pytest ARGS...: one pytest process over ARGS (at most py_timeout seconds,
# default 1200). Sets
# py_rc, py_summary (1 if pytest printed its summary line) and py_p, py_f
# (failures plus errors) and py_s from that line.
run_pytest() {
    local log line
    log=$(mktemp)
    REEL_CLI="${REEL_CLI:-$build/reel}" \
    REEL_TESTDATA="${REEL_TESTDATA:-$build/testdata}" \
    REEL_SHARED_VIDEOS="${REEL_SHARED_VIDEOS:-$(cd "$root/.." && pwd)/shared/videos}" \
        timeout -k 30 "${py_timeout:-1200}" python3 -m pytest "$@" -q --color=no -o cache_dir="$build/.pytest_cache" 2>&1 |
        tee "$log"
    py_rc=${PIPESTATUS[0]}
    # The last line, like "3 passed, 1 failed, 2 skipped, 1 error in 0.52s".
    line=$(grep -E '([0-9]+ (passed|failed|skipped|errors?|deselected|warnings?)|no tests ran).* in [0-9.]+s' "$log" | tail -n1)
    rm -f "$log"
    py_summary=0
    [ -n "$line" ] && py_summary=1
    py_p=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+' || echo 0)
    py_f=$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+' || echo 0)
    py_s=$(grep -oE '[0-9]+ skipped' <<<"$line" | grep -oE '[0-9]+' || echo 0)
    local e
    e=$(grep -oE '[0-9]+ errors?' <<<"$line" | grep -oE '[0-9]+' || echo 0)
    py_f=$((py_f + e))
}

# add_pytest_counts LABEL: adds run_pytest's counts to the totals; a process
# that failed with no failure counted (a crash, a timeout) counts as one.
add_pytest_counts() {
    if [ "$py_rc" -eq 5 ]; then
        echo "==> pytest $1: no tests collected" >&2
    elif [ "$py_rc" -ne 0 ] && [ "$py_f" -eq 0 ]; then
        py_f=1
        note "pytest $1 failed (exit $py_rc)"
    fi
    echo "==> pytest $1: $py_p passed, $py_f failed, $py_s skipped" >&2
    total_pass=$((total_pass + py_p))
    total_fail=$((total_fail + py_f))
    total_skip=$((total_skip + py_s))
}

# ray_diagnostics RAY_TMPDIR FILE: what Ray's processes logged, and the
# machine's limits, after a pytest process died without its summary. The
# lines that say why (fatal checks, deaths, exits) are repeated in a note.
ray_diagnostics() {
    local dir=$1 file=$2 logs why
    echo "==> $file: Ray's logs in $dir and this machine's limits" >&2
    for logs in "$dir"/ray/session_*/logs; do
        [ -d "$logs" ] && [ ! -L "${logs%/logs}" ] || continue   # not session_latest, the link
        for f in "$logs"/gcs_server.out "$logs"/gcs_server.err "$logs"/raylet.out "$logs"/raylet.err \
                 "$logs"/python-core-driver-*.log; do
            [ -s "$f" ] || continue
            echo "--- ${f#"$dir"/} (its last 20 log lines, no stats dumps)" >&2
            grep -E '^\[|^[A-Z][a-z]+Error|^Traceback|^\*\*\*' "$f" | tail -n 20 | cut -c1-400 >&2
        done
        why=$(cat "$logs"/gcs_server.* "$logs"/raylet.* "$logs"/python-core-driver-*.log 2>/dev/null |
            grep -E '^\[' | grep -E 'FATAL|Check failed|terminate|[Dd]ied|is dead|[Kk]illed|[Ee]xit(ing|ed)?\b|Resource temporarily|Too many|[Oo]ut of memory' |
            tail -n 4 | cut -c1-300)
        [ -n "$why" ] && note "$file: Ray logged: $(tr '\n' '|' <<<"$why")"
    done
    echo "--- limits: ulimit -u $(ulimit -u) -n $(ulimit -n); pids $(cat /sys/fs/cgroup/pids.max 2>/dev/null) now $(cat /sys/fs/cgroup/pids.current 2>/dev/null); memory.max $(cat /sys/fs/cgroup/memory.max 2>/dev/null); $(grep -h oom_kill /sys/fs/cgroup/memory.events 2>/dev/null | tr '\n' ' ')" >&2
    df -h /dev/shm /tmp 2>/dev/null | sed 's/^/    /' >&2
    dmesg 2>/dev/null | grep -iE 'killed process|out of memory' | tail -n 3 >&2
}

# Strict mode (REEL_STRICT=1, which .ci/run sets; CI=true sets it too): a skip
# fails unless tests/allowed_skips.txt lists it with a reason, so a required
# tool, server or data set that is missing cannot pass by skipping. Skips
# nested in a test that ran (one video of a loop) are counted and checked too.
# REEL_STRICT=0 or 1 in the environment overrides.
if [ -z "${REEL_STRICT:-}" ] && [ "${CI:-}" = true ]; then
    export REEL_STRICT=1
fi
[ "${REEL_STRICT:-0}" = 1 ] &&
    echo "==> strict mode (REEL_STRICT=1): only the skips in tests/allowed_skips.txt are allowed" >&2

# ------------------------------------------------------------ format
# The C sources match .clang-format (one check; `make format` fixes them).
if [ $do_c -eq 1 ]; then
    if bash scripts/check_format.sh >&2; then
        total_pass=$((total_pass + 1))
    else
        note "the C sources differ from .clang-format (run make format)"
        total_fail=$((total_fail + 1))
    fi
fi

# ------------------------------------------------------------ 0. build
# A failed build counts as one failure; whatever could be built is still
# tested (tests whose binary is missing fail in ctest as "Not Run").
if [ $build_first -eq 1 ]; then
    echo "==> building $build" >&2
    if ! KEEP_GOING=1 bash scripts/cmake_build.sh "$build" -DREEL_WERROR=ON; then
        note "the build of $build failed; testing what could be built"
        total_fail=$((total_fail + 1))
    fi
fi

# ------------------------------------------------------------ 0b. the wheel's build, in the background
# On a fresh clone the wheel's libraries take about 11 minutes of one core's
# time (docs/WHEEL.md); the test stages leave a core idle much of the time
# (pytest is one process, servers wait), so the build runs beside them at low
# priority with one job, and stage 4 waits for it. Stopped if this script
# ends first.
wheel_pid='' wheel_log=''
if [ $do_wheel -eq 1 ]; then
    wheel_log=$(mktemp)
    echo "==> the wheel: building in the background (log $wheel_log)" >&2
    JOBS=1 nice -n 15 bash scripts/build_wheel.sh >"$wheel_log" 2>&1 &
    wheel_pid=$!
fi
# On exit: stop the background wheel build; under CI, also remove the
# editable install of stage 2, whose import hook would point every later
# `import reel` on this machine at a clone that is then deleted.
on_exit() {
    [ -n "$wheel_pid" ] && kill "$wheel_pid" 2>/dev/null
    [ "${CI:-}" = true ] && python3 -m pip uninstall -y -q reel >/dev/null 2>&1
    true
}
trap on_exit EXIT

# ------------------------------------------------------------ 1. C tests
if [ $do_c -eq 1 ]; then
    # the quick tier leaves out the one long C test (every shared video, every
    # way of reading it: about 45 s here); make test runs it in every tree
    ctest_exclude=""
    [ $quick -eq 1 ] && ctest_exclude='^test_real_videos$'
    run_ctest "$build" "C tests"
    ctest_exclude=""
fi

# ------------------------------------------------------------ 2. sanitizers
if [ $do_asan -eq 1 ]; then
    echo "==> sanitizer tree: building $asan" >&2
    if ! KEEP_GOING=1 bash scripts/cmake_build.sh "$asan" -DREEL_WERROR=ON -DREEL_SANITIZE=address,undefined \
        -DREEL_BUILD_CLI=OFF "-DREEL_TEST_CLI=$build/reel"; then
        note "the sanitizer build of $asan failed; testing what could be built"
        total_fail=$((total_fail + 1))
    fi
    supp=""
    [ -f tests/c/lsan.supp ] && supp=":suppressions=$root/tests/c/lsan.supp"
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS="${LSAN_OPTIONS:-print_suppressions=0}$supp" \
        run_ctest "$asan" "C tests (address,undefined)"
fi

# ------------------------------------------------------------ 2b. ThreadSanitizer
# The threaded parts (loader, ring, queues, store reader, API) under TSan, in
# build-tsan/ with clang (the tests link libreel statically). FFmpeg is not
# instrumented: tests/c/tsan.supp suppresses frames inside libav* only.
if [ $do_tsan -eq 1 ]; then
    if command -v clang >/dev/null 2>&1; then
        echo "==> ThreadSanitizer tree: building $tsan" >&2
        if ! CC=clang KEEP_GOING=1 bash scripts/cmake_build.sh "$tsan" -DREEL_WERROR=ON -DREEL_SANITIZE=thread \
            -DREEL_BUILD_CLI=OFF -DREEL_BUILD_BENCH=OFF "-DREEL_TEST_CLI=$build/reel"; then
            note "the ThreadSanitizer build of $tsan failed; testing what could be built"
            total_fail=$((total_fail + 1))
        fi
        TSAN_OPTIONS="suppressions=$root/tests/c/tsan.supp:halt_on_error=1:exitcode=66" \
            run_ctest "$tsan" "C tests (thread)" "test_(pipeline_units|pipeline_loader|loader_vary|pipeline_failures|store|api|pinned|remote_faults|remote_audio_share|frames_near|gpu_loader_store)$"
    else
        note "no clang: the ThreadSanitizer tests did not run (apt-get install -y clang)"
        total_fail=$((total_fail + 1))
    fi
fi

# ------------------------------------------------------------ 2c. fuzz targets
# Each libFuzzer target replays its regression inputs, then fuzzes for
# FUZZ_SECONDS (20 here; `make fuzz` runs longer).
if [ $do_fuzz -eq 1 ]; then
    echo "==> fuzz targets: ${FUZZ_SECONDS:-20} s each (scripts/fuzz.sh)" >&2
    flog=$(mktemp)
    REEL_CLI="$build/reel" FUZZ_DIR="$fuzz" bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}" 2>&1 | tee "$flog" >&2
    fl=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$flog" | tail -n1)
    fp=$(grep -oE '^[0-9]+' <<<"$fl" || echo 0)
    ff=$(grep -oE '[0-9]+ failed' <<<"$fl" | grep -oE '[0-9]+' || echo 1)
    rm -f "$flog"
    echo "==> fuzz: $fp passed, $ff failed" >&2
    total_pass=$((total_pass + fp))
    total_fail=$((total_fail + ff))
fi

# ------------------------------------------------------------ 3. pytest
if [ $do_py -eq 1 ]; then
    if [ -d tests/python ] &&
        [ -n "$(find tests/python \( -name 'test_*.py' -o -name '*_test.py' \) -print -quit)" ]; then
        # pytest, and ruff + mypy for tests/python/test_lint.py
        if ! python3 -c 'import pytest, ruff, mypy' >/dev/null 2>&1; then
            echo "==> installing pytest ruff mypy" >&2
            python3 -m pip install -q pytest ruff mypy 2>/dev/null ||
                python3 -m pip install -q --user pytest ruff mypy 2>/dev/null ||
                python3 -m pip install -q --user --break-system-packages pytest ruff mypy ||
                note "could not install pytest, ruff and mypy"
        fi
        # ------------------------------------------------ python package (begin)
        # Build and install the reel package from this tree (editable, so the
        # tests import python/reel and the current extension). The CMake build
        # in build/python/ is incremental: a rebuild with nothing changed is quick.
        # numpy and torch for the zero-copy (DLPack) and DataLoader tests:
        # torch==2.13.0 is the CPU build this machine kind provides locally.
        # Where they cannot be installed those tests skip with a message.
        if ! python3 -c 'import numpy, torch' >/dev/null 2>&1; then
            echo "==> pip install numpy torch==2.13.0 (for the PyTorch tests)" >&2
            python3 -m pip install -q numpy "torch==2.13.0" >/dev/null 2>&1 ||
                note "numpy/torch could not be installed: the PyTorch tests will skip"
        fi
        echo "==> pip install -e . (the reel Python package)" >&2
        mkdir -p "$build"
        # -Werror for the extension too (REEL_WERROR, as the C trees).
        pip_flags=(-q --config-settings=cmake.define.REEL_WERROR=ON -e "$root")
        python3 -c 'import scikit_build_core' >/dev/null 2>&1 && pip_flags=(--no-build-isolation "${pip_flags[@]}")
        if ! python3 -m pip install "${pip_flags[@]}" >/dev/null 2>"$build/pip-install.log" &&
           ! python3 -m pip install --user --break-system-packages "${pip_flags[@]}" >/dev/null 2>>"$build/pip-install.log"; then
            tail -n 30 "$build/pip-install.log" >&2
            note "pip install -e . failed (log: $build/pip-install.log); pytest runs against whatever reel is installed"
            total_fail=$((total_fail + 1))
        fi
        # ------------------------------------------------ python package (end)
        # The Ray test files run each in a pytest process of its own, after the
        # rest: Ray's driver (its C++ core worker) ends the whole process with
        # _exit(1) when it loses its raylet or GCS, which would take every
        # later test's result with it (seen once in CI at test_ray.py, not
        # reproduced here). Each gets its own RAY_TMPDIR, whose logs are shown
        # when the process dies without pytest's summary line.
        ray_files=()
        for t in tests/python/test_ray*.py; do [ -f "$t" ] && ray_files+=("$t"); done
        ignore=()
        for t in "${ray_files[@]+"${ray_files[@]}"}"; do ignore+=("--ignore=$t"); done
        # the quick tier: no Ray cluster, no test marked slow (pyproject.toml)
        quick_args=()
        if [ $quick -eq 1 ]; then
            quick_args=(-m "not slow")
            ray_files=()
        fi
        echo "==> pytest tests/python${quick_args:+ -m 'not slow'}${ray_files:+ (the Ray files after, each alone)}" >&2
        run_pytest tests/python "${ignore[@]+"${ignore[@]}"}" "${quick_args[@]+"${quick_args[@]}"}"
        if [ "$py_rc" -ne 0 ] && [ "$py_summary" -eq 0 ]; then
            note "pytest tests/python died without its summary (exit $py_rc)"
        fi
        add_pytest_counts tests/python
        for t in "${ray_files[@]+"${ray_files[@]}"}"; do
            for attempt in 1 2; do
                ray_tmp=$(mktemp -d /tmp/reel-ray.XXXXXX)
                echo "==> pytest $t (RAY_TMPDIR=$ray_tmp, attempt $attempt)" >&2
                RAY_TMPDIR=$ray_tmp py_timeout=600 run_pytest "$t"
                if [ "$py_summary" -eq 0 ]; then
                    ray_diagnostics "$ray_tmp" "$t"
                fi
                rm -rf "$ray_tmp"
                # One more try only for Ray's silent exit (status 1, no summary):
                # a signal, a timeout or a summary with failures stands.
                if [ "$py_summary" -eq 0 ] && [ "$py_rc" -eq 1 ] && [ $attempt -eq 1 ]; then
                    note "$t: the pytest process exited 1 without its summary (Ray's driver exit; logs above): run once more"
                    continue
                fi
                [ "$py_summary" -eq 0 ] && note "$t: the pytest process died without its summary (exit $py_rc)"
                break
            done
            add_pytest_counts "$t"
        done
    else
        echo "==> pytest: no tests in tests/python, skipped" >&2
    fi
fi

# ------------------------------------------------------------ 4. the wheel
# scripts/build_wheel.sh builds it from this tree (on a fresh clone zig,
# FFmpeg and the bundled libraries too, cached in build-wheel/ afterwards),
# then scripts/test_wheel.sh tests it and prints its own "N passed, N
# failed" last. A failed build counts as one failure and the test runs on
# no wheel (one failure more), never a skip.
if [ $do_wheel -eq 1 ]; then
    t_wheel=$(date +%s)
    wheel_ok=1
    wait "$wheel_pid" || wheel_ok=0
    wheel_pid=''
    cat "$wheel_log" >&2
    rm -f "$wheel_log"
    if [ $wheel_ok -ne 1 ]; then
        note "make wheel failed: the wheel stage tests no wheel"
        total_fail=$((total_fail + 1))
        rm -f dist/reel-*.whl
    fi
    wlog=$(mktemp)
    bash scripts/test_wheel.sh 2>&1 | tee "$wlog" >&2
    wl=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$wlog" | tail -n1)
    rm -f "$wlog"
    if [ -z "$wl" ]; then
        note "test_wheel.sh printed no summary"
        total_fail=$((total_fail + 1))
    else
        total_pass=$((total_pass + $(grep -oE '^[0-9]+' <<<"$wl")))
        total_fail=$((total_fail + $(grep -oE '[0-9]+ failed' <<<"$wl" | grep -oE '[0-9]+')))
    fi
    echo "==> the wheel stage: $(($(date +%s) - t_wheel)) s after the tests (its build ran beside them)" >&2
fi

# ------------------------------------------------------------ summary
for n in "${notes[@]+"${notes[@]}"}"; do echo "note: $n" >&2; done
summary_line
[ $total_fail -eq 0 ]
