#!/bin/sh
# Every C++ source of the tree is formatted as .clang-format says (Google style, 100 columns;
# STYLE.md §11). A file that is not fails this test with the lines that differ; to fix it:
#   clang-format -i FILE
# Exit 77 (skipped) where clang-format is not installed, except under CI, where it must be.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
if ! command -v clang-format >/dev/null 2>&1; then
  if [ "${CI:-}" = true ]; then
    echo "format_check: clang-format is missing (packaging/install-deps installs it)" >&2
    exit 1
  fi
  echo "format_check: skipped: clang-format is not installed (packaging/install-deps)" >&2
  exit 77
fi
if [ -d .git ] || [ -f .git ]; then
  files=$(git ls-files '*.cc' '*.h')
else
  files=$(find agentd bench cmd lib tests -name '*.cc' -o -name '*.h')
fi
# shellcheck disable=SC2086
clang-format --dry-run --Werror $files
echo "format_check: $(echo "$files" | wc -w) files formatted as .clang-format says"
