#!/usr/bin/env bash
# man_test.sh JOBCTL PAGE: checks that the man page jobctl.1 covers the command line the
# binary really has, and that every built man page formats without warnings.
#
# 1. Walks jobctl's command tree by parsing `jobctl --help` and `jobctl <path> --help`
#    (CLI11's layout: an "Options:" block of lines starting "  -", a "Subcommands:" block of
#    lines starting "  name"). Every command path must have a section in the page headed
#    "jobctl <path>" (scdoc "## jobctl <path>", roff .SS), and each of its long options must
#    appear in that section. Global options must appear under GLOBAL OPTIONS. A group
#    command with nothing but subcommands (jobctl token) needs no section of its own.
#    Commands documented in the page but unknown to the binary are fine.
# 2. If man and groff are installed, runs `man --warnings -E UTF-8 -l -Tutf8 -Z` on every
#    page built beside PAGE and fails on any warning.
set -uo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 JOBCTL_BINARY BUILT_JOBCTL_1" >&2
  exit 2
fi
jobctl=$1
page=$2
[[ -x $jobctl ]] || { echo "FAIL: $jobctl is not an executable" >&2; exit 1; }
[[ -r $page ]] || { echo "FAIL: cannot read $page (is the man target built?)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
problems=()

# The page as text: "@@ TITLE" for each .SH/.SS heading, other roff requests dropped, font
# and escape sequences removed, so that "\fB--wait\fR" reads "--wait".
sed -e 's/\\f[BIRP]//g' -e 's/\\&//g' -e "s/\\\\(aq/'/g" -e "s/\\\\\\*(Aq/'/g" \
    -e 's/\\-/-/g' -e 's/\\(em/--/g' "$page" |
  awk '/^\.S[HS] / { sub(/^\.S[HS] +/, ""); gsub(/"/, ""); print "@@ " $0; next }
       /^[.'"'"']/ { next }
       { print }' > "$tmp/page.txt"

# Prints the text of the sections whose heading satisfies the awk condition on `title`.
section_text() {
  awk -v want="$1" -v subs="$2" '
    function matches(title,   rest, word, n, list, i) {
      if (want == "GLOBAL OPTIONS") return title == want
      if (title == "jobctl " want) return 1
      if (index(title, "jobctl " want " ") != 1) return 0
      # "jobctl agents drain" is the section of agents drain, not of agents.
      rest = substr(title, length("jobctl " want " ") + 1)
      split(rest, word, " ")
      n = split(subs, list, " ")
      for (i = 1; i <= n; i++) if (word[1] == list[i]) return 0
      return 1
    }
    /^@@ / { on = matches(substr($0, 4)); if (on) found = 1; next }
    on { print }
    END { exit found ? 0 : 1 }' "$tmp/page.txt"
}

help_of() {
  # shellcheck disable=SC2086  # the path is words on purpose
  "$jobctl" $1 --help 2>&1
}

subcommands_in() {
  awk '/^Subcommands:/ { on = 1; next } on && /^$/ { on = 0 } on && /^  [a-z]/ { print $1 }'
}

long_options_in() {
  awk '/^Options:/ { on = 1; next } on && /^[^ ]/ { on = 0 } on && /^  -/ { print $1 }' |
    tr ',' '\n' | grep -E '^--[a-z0-9]' | grep -vx -- '--help' || true
}

check_options() {  # WHERE TEXT_FILE OPTIONS...
  local where=$1 file=$2 opt
  shift 2
  for opt in "$@"; do
    if ! grep -Eq -- "(^|[^A-Za-z0-9-])${opt}([^A-Za-z0-9-]|\$)" "$file"; then
      problems+=("option $opt of '$where' is not documented in its section")
    fi
  done
}

# Global options.
root_help=$(help_of "")
if [[ -z $root_help ]] || ! grep -q '^Subcommands:' <<<"$root_help"; then
  echo "FAIL: '$jobctl --help' printed no command list:" >&2
  echo "$root_help" >&2
  exit 1
fi
mapfile -t global_opts < <(long_options_in <<<"$root_help")
if section_text "GLOBAL OPTIONS" "" > "$tmp/global.txt"; then
  check_options "jobctl" "$tmp/global.txt" "${global_opts[@]}"
else
  problems+=("the page has no GLOBAL OPTIONS section")
fi

# Every command path, breadth first.
mapfile -t queue < <(subcommands_in <<<"$root_help")
commands=0
while [[ ${#queue[@]} -gt 0 ]]; do
  path=${queue[0]}
  queue=("${queue[@]:1}")
  commands=$((commands + 1))
  help=$(help_of "$path")
  mapfile -t subs < <(subcommands_in <<<"$help")
  mapfile -t opts < <(long_options_in <<<"$help")
  for s in "${subs[@]}"; do queue+=("$path $s"); done
  if section_text "$path" "${subs[*]}" > "$tmp/section.txt"; then
    check_options "jobctl $path" "$tmp/section.txt" "${opts[@]}"
  elif [[ ${#subs[@]} -eq 0 || ${#opts[@]} -gt 0 ]]; then
    problems+=("command 'jobctl $path' has no section (## jobctl $path) in the page")
  fi
done
echo "checked ${#global_opts[@]} global options and $commands commands against $page"

# Formatting: every page built beside jobctl.1.
if command -v man > /dev/null && command -v groff > /dev/null; then
  shopt -s nullglob
  for built in "$(dirname "$page")"/*.[1-9]; do
    MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$built" > /dev/null 2> "$tmp/warnings"
    rc=$?
    if [[ $rc -ne 0 || -s $tmp/warnings ]]; then
      problems+=("$(basename "$built"): man reported (exit $rc): $(tr '\n' ' ' < "$tmp/warnings")")
    else
      echo "$(basename "$built"): formats without warnings"
    fi
  done
else
  echo "SKIP: man or groff is not installed; the pages were not checked for roff warnings"
fi

if [[ ${#problems[@]} -gt 0 ]]; then
  printf 'FAIL: %s\n' "${problems[@]}" >&2
  exit 1
fi
echo "PASS"
