#!/usr/bin/env bash
# scripts/check_format.sh [--fix]: the C sources against .clang-format
# (clang-format 14, Debian 12's). Without --fix, lists the files that differ
# and fails; with --fix (what `make format` runs), rewrites them.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fmt=${CLANG_FORMAT:-clang-format}
if ! command -v "$fmt" >/dev/null 2>&1; then
    echo "format: $fmt is not installed (apt-get install -y clang-format)" >&2
    exit 1
fi
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null || find src include cli python tests tools bench -name '*.[ch]')
if [ "${1:-}" = --fix ]; then
    "$fmt" -i "${files[@]}"
    echo "format: ${#files[@]} files formatted"
    exit 0
fi
bad=()
for f in "${files[@]}"; do
    if ! "$fmt" --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
    echo "format: ${#bad[@]} file(s) differ from .clang-format (run make format): ${bad[*]}" >&2
    exit 1
fi
echo "format: ${#files[@]} files match .clang-format"
