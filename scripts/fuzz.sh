#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS]: builds the libFuzzer targets (tests/fuzz) with
# clang, address and undefined sanitizers in build-fuzz/, makes each one's
# seed corpus from reel's own generator (and ../shared/reliability's
# reproducers) plus the seeds kept in tests/fuzz/seeds/<target>/, replays
# every regression input in tests/fuzz/regressions/, then fuzzes each target
# SECONDS (default $FUZZ_SECONDS or 300).
# Prints one line per target and ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
secs=${1:-${FUZZ_SECONDS:-300}}
out=${FUZZ_DIR:-build-fuzz}
reel=${REEL_CLI:-build/reel}
passed=0 failed=0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

if ! command -v clang >/dev/null 2>&1; then
    echo "fuzz: clang is not installed (apt-get install -y clang libclang-rt-14-dev)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
[ -x "$reel" ] || bash scripts/cmake_build.sh build >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
if ! CC=clang bash scripts/cmake_build.sh "$out" -DREEL_WERROR=ON -DREEL_FUZZ=ON -DREEL_SANITIZE=address,undefined \
        -DREEL_BUILD_TESTS=OFF -DREEL_BUILD_BENCH=OFF -DREEL_BUILD_CLI=OFF >"$out.log" 2>&1; then
    tail -n 30 "$out.log" >&2
    echo "fuzz: the build of $out failed (log: $out.log)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

# ---------------------------------------------------------------- seed corpora
seeds="$out/seeds"
if [ ! -f "$seeds/.made" ]; then
    rm -rf "$seeds"
    mkdir -p "$seeds"/{fuzz_open_memory,fuzz_sidecar,fuzz_manifest,fuzz_store_index,fuzz_remote_responses,work}
    w="$seeds/work"
    "$reel" synth "$seeds/fuzz_open_memory/h264.mp4" --size 64x48 --frames 10 --gop 4 >/dev/null 2>&1
    "$reel" synth "$seeds/fuzz_open_memory/vp9.webm" --codec vp9 --size 64x48 --frames 8 --gop 4 >/dev/null 2>&1
    "$reel" synth "$seeds/fuzz_open_memory/mjpeg.avi" --codec mjpeg --size 32x24 --frames 6 >/dev/null 2>&1
    "$reel" synth "$seeds/fuzz_open_memory/mpeg4.mkv" --codec mpeg4 --size 64x48 --frames 8 --gop 4 >/dev/null 2>&1
    # the sidecar target's video, and its valid sidecar as the seed
    "$reel" synth "$w/sidecar.mp4" --size 64x48 --frames 24 --gop 8 >/dev/null 2>&1
    "$reel" index "$w/sidecar.mp4" >/dev/null 2>&1
    cp "$w/sidecar.mp4.reelidx" "$seeds/fuzz_sidecar/valid.reelidx"
    printf '\000path,label,start,end\na.mp4,0,0,1.5\nsub/b.mp4,1,,\n' >"$seeds/fuzz_manifest/a.csv"
    printf '\001path\tlabel\na.mp4\tcat\nb.mp4\tdog\n' >"$seeds/fuzz_manifest/b.tsv"
    printf '\002{"path": "a.mp4", "label": "cat", "start": 0.5}\n{"path": "b\\u00e9.mp4", "label": 3}\n' \
        >"$seeds/fuzz_manifest/c.jsonl"
    printf '<?xml version="1.0"?><ListBucketResult><IsTruncated>true</IsTruncated><Contents><Key>train/cat/a&amp;b.mp4</Key></Contents><Contents><Key>train/dog/&#x41;.mp4</Key></Contents><NextContinuationToken>1/abc=</NextContinuationToken></ListBucketResult>' \
        >"$seeds/fuzz_remote_responses/page.xml"
    printf 'Content-Range: bytes 0-262143/2570956\r\n' >"$seeds/fuzz_remote_responses/range.txt"
    touch "$seeds/.made"
fi
# fuzz_store_index's stores (its own folder marker: older seed folders lack them):
# two small videos packed as jpeg, raw, raw+zstd (42x32: rows of 126 bytes) and
# h264; the target reads each fuzzed index against the shards of the store of
# its header's format, and every index is a seed
if [ ! -f "$seeds/fuzz_store_index/.stores" ]; then
    w="$seeds/work"
    rm -rf "$w/stores" "$w/sds"
    mkdir -p "$w/sds/cat" "$w/sds/dog" "$seeds/fuzz_store_index"
    "$reel" synth "$w/sds/cat/v.mp4" --size 64x48 --frames 6 --gop 3 >/dev/null 2>&1
    "$reel" synth "$w/sds/dog/v.mp4" --size 48x36 --frames 6 --gop 3 >/dev/null 2>&1
    for f in "jpeg --format jpeg" "raw --format raw" "rawz --format raw --zstd 3" "h264 --format h264"; do
        set -- $f
        name=$1
        shift
        "$reel" pack "$w/sds" "$w/stores/$name" --size 32 --threads 1 --no-progress "$@" >/dev/null 2>&1
        cp "$w/stores/$name/store.idx" "$seeds/fuzz_store_index/$name.idx"
    done
    touch "$seeds/fuzz_store_index/.stores"
fi
export REEL_FUZZ_STORES="$(cd "$seeds" && pwd)/work/stores"
export REEL_FUZZ_VIDEO="$(cd "$seeds" && pwd)/work/sidecar.mp4"
shared_rel="$root/../shared/reliability"

for bin in "$out"/fuzz/fuzz_*; do
    name=$(basename "$bin")
    corpus="$out/corpus/$name"
    mkdir -p "$corpus"
    cp -n "$seeds/$name"/* "$corpus"/ 2>/dev/null
    # seeds kept in the tree (tests/fuzz/seeds/<target>/: e.g. whole HTTP answers)
    [ -d "tests/fuzz/seeds/$name" ] && cp -n "tests/fuzz/seeds/$name"/* "$corpus"/ 2>/dev/null
    reg="tests/fuzz/regressions/$name"
    # 1. regressions: every input found once must stay fixed
    inputs=()
    [ -d "$reg" ] && for f in "$reg"/*; do [ -f "$f" ] && inputs+=("$f"); done
    if [ "$name" = fuzz_open_memory ] && [ -d "$shared_rel" ]; then
        for f in "$shared_rel"/*.mp4; do [ -f "$f" ] && inputs+=("$f"); done
    fi
    ok=1
    if [ ${#inputs[@]} -gt 0 ] && ! "$bin" -timeout=20 "${inputs[@]}" >"$out/$name.regress.log" 2>&1; then
        ok=0
        echo "FAIL  $name: a regression input fails again (log: $out/$name.regress.log)" >&2
        tail -n 20 "$out/$name.regress.log" >&2
    fi
    # 2. fuzzing
    if [ $ok -eq 1 ] && ! "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2560 -max_len=262144 \
            -print_final_stats=1 -artifact_prefix="$out/$name-" "$corpus" >"$out/$name.log" 2>&1; then
        ok=0
        echo "FAIL  $name: a crash, leak or hang (log: $out/$name.log; the input is $out/$name-*)" >&2
        grep -E "ERROR|SUMMARY|runtime error" "$out/$name.log" | head -n 5 >&2
    fi
    execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$out/$name.log" 2>/dev/null | grep -oE '[0-9]+$' || echo 0)
    cov=$(grep -oE 'cov: [0-9]+' "$out/$name.log" 2>/dev/null | tail -n1 | grep -oE '[0-9]+' || echo 0)
    if [ $ok -eq 1 ]; then
        passed=$((passed + 1))
        echo "PASS  $name: ${#inputs[@]} regression inputs, ${secs} s: $execs execs, coverage $cov edges, corpus $(ls "$corpus" | wc -l)" >&2
    else
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
