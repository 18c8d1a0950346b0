#!/usr/bin/env bash
# scripts/cmake_build.sh DIR [CMAKE_ARG...]: configure DIR if needed, then build it.
#
# First configure: Ninja if `ninja` is on PATH, else Unix Makefiles. Later runs
# only build (CMake re-globs sources by itself) unless the arguments changed or
# the tree is half-configured. $CMAKE_ARGS (e.g. from `make CMAKE_ARGS=...`)
# is appended to the arguments; $JOBS sets the parallelism (default: cores);
# KEEP_GOING=1 builds every target that can be built despite failures
# (the exit status still reports the failure).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dir=${1:?usage: scripts/cmake_build.sh DIR [CMAKE_ARG...]}
shift
# shellcheck disable=SC2206
args=("$@" ${CMAKE_ARGS:-})
stamp="$dir/.reel-configure-args"
want="${args[*]:-}"

if [ ! -f "$dir/CMakeCache.txt" ]; then
    if command -v ninja >/dev/null 2>&1; then gen=Ninja; else gen="Unix Makefiles"; fi
    cmake -S . -B "$dir" -G "$gen" "${args[@]}"
    printf '%s\n' "$want" >"$stamp"
elif [ ! -f "$dir/build.ninja" ] && [ ! -f "$dir/Makefile" ] ||
     [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    cmake -S . -B "$dir" "${args[@]}"
    printf '%s\n' "$want" >"$stamp"
fi

keep=()
if [ "${KEEP_GOING:-0}" = 1 ]; then
    if [ -f "$dir/build.ninja" ]; then keep=(-- -k 0); else keep=(-- -k); fi
fi
cmake --build "$dir" -j "${JOBS:-$(nproc 2>/dev/null || echo 2)}" "${keep[@]}"
