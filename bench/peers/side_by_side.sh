#!/usr/bin/env bash
# jobctl and the peer schedulers side by side: runs the peer harness's matrix (README of
# PEERS_DIR) with jobctl's rows interleaved, one run after another in this one session,
# appends every run's JSON line to a results file, then prints the markdown tables (all
# runs, and jobctl against the best peer of each workload row).
#
#   bench/peers/side_by_side.sh [main|cron|big|pg|all]      (default: all)
#     main  N = 1k, 10k, S = 10, noop and spawn (the peers: quartz-ram, quartz-jdbc, bullmq)
#     cron  N = 1k, 10k, S = 60, all entries at :00 (SPREAD=aligned), against Debian cron
#     big   N = 100k: S = 10 and S = 60, noop (quartz-ram, bullmq) and jobctl noop + spawn
#     pg    both on one PostgreSQL: jobctl-pg (three coordinators) against quartz-jdbc
#           clustered on two JVMs (QUARTZ_NODES=2), S = 10: N = 1k, 10k noop and spawn,
#           N = 100k noop (quartz-jdbc registers ~120 schedules/s: ~15 min for 100k)
#           ("all" leaves it out: run it on its own)
#
# Environment (defaults in brackets):
#   DURATION [60]  measured window of every run (s); WARMUP/GRACE as the harness's
#   ONLY [""]      extended regex on "PEER N S ACTION": run only the rows that match, e.g.
#                  ONLY='^jobctl|^quartz-ram 1000 ' DURATION=20 bench/peers/side_by_side.sh main
#   RESULTS [bench/peers/results/side_by_side-<UTC time>.jsonl]  where the lines go
#   PEERS_DIR [bench/peers/harness]  the harness; it runs the peers (as root, see its
#                  README; its packages: packaging/install-deps --peers)
#   DRY_RUN [0]    1: print the rows and how long they would take, run nothing
# jobctl's runs need the release build: cmake --workflow --preset release
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PEERS_DIR=${PEERS_DIR:-$HERE/harness}
export PEERS_DIR
DURATION=${DURATION:-60}
ONLY=${ONLY:-}
what=${1:-all}
case "$what" in main|cron|big|pg|all) ;; *) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2;; esac
[[ -x $PEERS_DIR/run.sh && -f $PEERS_DIR/lib/analyze.py ]] || {
  echo "side_by_side: the peer harness is not at PEERS_DIR=$PEERS_DIR (need run.sh and lib/analyze.py); set PEERS_DIR" >&2
  exit 2
}
[[ $DURATION =~ ^[0-9]+$ ]] && (( DURATION > 0 )) || { echo "side_by_side: DURATION must be a positive integer" >&2; exit 2; }
mkdir -p "$HERE/results"
OUT=${RESULTS:-$HERE/results/side_by_side-$(date -u +%Y%m%dT%H%M%SZ).jsonl}

# ---------------------------------------------------------------- the matrix
# One row per run: "PEER N S ACTION [VAR=VALUE ...]"; jobctl first in each workload, then the
# peers, as the harness's bench_all.sh orders them.
ROWS=()
row() { ROWS+=("$*"); }
jobctl_row() { # N S ACTION [env]
  local n=$1 s=$2 a=$3; shift 3
  if [[ $a == noop ]]; then row jobctl-coord "$n" "$s" noop "$@"; else row jobctl "$n" "$s" spawn "$@"; fi
}
if [[ $what == main || $what == all ]]; then
  for n in 1000 10000; do
    for a in noop spawn; do
      jobctl_row "$n" 10 "$a"
      row quartz-ram "$n" 10 "$a"
      row quartz-jdbc "$n" 10 "$a"
      # BullMQ noop at <= 1000 fires/s: concurrency 10 measured best (harness README)
      if [[ $a == noop ]]; then row bullmq "$n" 10 noop BULLMQ_CONCURRENCY=10; else row bullmq "$n" 10 spawn; fi
    done
  done
fi
if [[ $what == cron || $what == all ]]; then
  for n in 1000 10000; do
    for a in noop spawn; do
      jobctl_row "$n" 60 "$a" SPREAD=aligned
      row cron "$n" 60 "$a"
    done
  done
fi
if [[ $what == big || $what == all ]]; then
  jobctl_row 100000 10 noop
  row quartz-ram 100000 10 noop
  jobctl_row 100000 10 spawn
  jobctl_row 100000 60 noop
  row bullmq 100000 60 noop                         # default concurrency 100
  row bullmq 100000 60 noop BULLMQ_CONCURRENCY=10   # too low for 1667/s: falls behind
  row quartz-ram 100000 60 noop
  jobctl_row 100000 60 spawn
fi
if [[ $what == pg ]]; then
  for n in 1000 10000 100000; do
    for a in noop spawn; do
      (( n < 100000 )) || [[ $a == noop ]] || continue
      # 100k: the apply holds the loop past the default hold_ttl (10 s; run.sh's header)
      hold=(); (( n < 100000 )) || hold=(JOBCTL_HOLD_TTL=60s)
      if [[ $a == noop ]]; then row jobctl-pg-coord "$n" 10 noop "${hold[@]}"; else row jobctl-pg "$n" 10 spawn; fi
      row quartz-jdbc "$n" 10 "$a" QUARTZ_NODES=2
    done
  done
fi
if [[ -n $ONLY ]]; then
  kept=()
  for r in "${ROWS[@]}"; do
    read -r p n s a _ <<<"$r"
    [[ "$p $n $s $a" =~ $ONLY ]] && kept+=("$r")
  done
  ROWS=("${kept[@]}")
fi
(( ${#ROWS[@]} > 0 )) || { echo "side_by_side: no row matches ONLY='$ONLY'" >&2; exit 2; }

# ---------------------------------------------------------------- how long
# Per run: start/stop of the peer's servers + registration + warm-up + window + grace.
# Registration rates are the ones measured on the 2-core machine (harness README; jobctl:
# coordinator_bench), so the estimate is rough on another host.
estimate_s() { # PEER N S
  local p=$1 n=$2 s=$3 setup reg
  case "$p" in
    jobctl|jobctl-coord) setup=4;  reg=$(( n / 20000 + n / 50000 )) ;;  # job file + apply
    jobctl-pg*)          setup=8;  reg=$(( n / 10000 )) ;;  # + initdb, three coordinators
    quartz-ram)          setup=6;  reg=$(( n / 60000 )) ;;
    quartz-jdbc)         setup=14; reg=$(( n / 120 )) ;;
    bullmq)              setup=6;  reg=$(( n / 3700 )) ;;
    cron)                setup=5;  reg=0 ;;
    *)                   setup=5;  reg=0 ;;
  esac
  local warm=${WARMUP:-$(( s > 10 ? s : 10 ))} grace=${GRACE:-$(( s > 5 ? s : 5 ))}
  echo $(( setup + reg + warm + DURATION + grace ))
}
total=0
for r in "${ROWS[@]}"; do read -r p n s a _ <<<"$r"; total=$(( total + $(estimate_s "$p" "$n" "$s") )); done
{
  echo "side_by_side: ${#ROWS[@]} runs one after another, DURATION=$DURATION s each;"
  printf '  this takes about %d min %02d s (until about %s); results go to %s\n' \
    $(( total / 60 )) $(( total % 60 )) "$(date -d "@$(( $(date +%s) + total ))" +%H:%M)" "$OUT"
  echo "  host: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); keep the machine otherwise idle"
  for r in "${ROWS[@]}"; do echo "    $r"; done
} >&2
[[ ${DRY_RUN:-0} == 1 ]] && exit 0

# ---------------------------------------------------------------- the runs
one() { # PEER N S ACTION [VAR=VALUE ...]
  local p=$1 n=$2 s=$3 a=$4 line rc
  shift 4
  local runner=$PEERS_DIR/run.sh
  [[ $p == jobctl* ]] && runner=$HERE/run.sh
  echo "== $p $n $s $a $* ($(date +%T))" >&2
  line=$(env "$@" "$runner" "$p" "$n" "$s" "$a" "$DURATION")
  rc=$?
  line=$(grep '^{' <<<"$line" | tail -n1)
  if [[ -z $line ]]; then
    # the harness prints nothing when a run fails: keep the row, marked failed
    line=$(printf '{"peer":"%s","n":%d,"period_s":%d,"action":"%s","duration_s":%d,"fires_expected":null,"fires_seen":null,"missed":null,"duplicated":null,"lateness_ms_p50":null,"lateness_ms_p99":null,"lateness_ms_max":null,"register_s":null,"peak_rss_mb":null,"cpu_s":null,"config":{"error":"run failed (exit %d)","env":"%s"}}' \
      "$p" "$n" "$s" "$a" "$DURATION" "$rc" "$*")
  fi
  (( rc == 0 )) || echo "   run failed (exit $rc): $p $n $s $a" >&2
  echo "$line" >> "$OUT"
  echo "$line"
}
started=$(date +%s)
for r in "${ROWS[@]}"; do
  # shellcheck disable=SC2086
  one $r
done
echo "side_by_side: done in $(( ($(date +%s) - started) / 60 )) min; lines in $OUT" >&2
echo
/usr/bin/python3 "$HERE/table.py" "$OUT"
