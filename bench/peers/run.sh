#!/usr/bin/env bash
# jobctl in the peer scheduler benchmark: one measurement on the harness's workload; prints
# ONE JSON line on stdout (the fields of the harness's lib/analyze.py), progress on stderr.
#
#   bench/peers/run.sh PEER N S ACTION DURATION
#     PEER      jobctl        coordinator + one local agentd; ACTION must be spawn: each fire
#                             is a run whose child (bench_probe peer) records when it started
#               jobctl-coord  the coordinator alone; ACTION must be noop: a fire is a run made
#                             and committed by the coordinator (read from its store afterwards)
#               jobctl-pg     as jobctl, with three coordinators (JOBCTL_COORDINATORS) on one
#                             PostgreSQL store (`store = "postgresql://..."`): the first holds
#                             the database and serves, the others are standbys; agentd and
#                             the CLI are given every coordinator's URL
#               jobctl-pg-coord  as jobctl-coord, with the coordinators of jobctl-pg; the fires
#                             are read from the database afterwards (psql)
#             The PostgreSQL server of the -pg peers is the harness's for quartz-jdbc: a fresh
#             initdb in the run directory, durable defaults (fsync, synchronous_commit on),
#             max_connections=300, 127.0.0.1:PG_PORT, run as the postgres user when started
#             by root, stopped by its pid at the end.
#     N         number of schedules; S: period in seconds; DURATION: measured window (s)
#
# Registration is one `jobctl apply` (jobs s0..s<N-1>, "@every <S>s", each with the anchor
# that puts it on the harness's grid) into the running coordinator; a job fires from the next
# grid point after the apply, long before the window (WARMUP after the apply) opens.
#
# The harness (run.sh, lib/analyze.py, lib/sampler.py, README.md) is bench/peers/harness
# (PEERS_DIR). Environment knobs (defaults in brackets), as the harness's:
#   PEERS_DIR [bench/peers/harness]  JOBCTL_BUILD [<repo>/build/release]
#   WARMUP [max(10,S)]  GRACE [max(5,S)]  SPREAD [uniform]  KEEP_RUN [0]
#   JOBCTL_SLOTS [2048] agent slots: a shard granted ahead of its instant (early dispatch)
#                   holds a slot while it waits, so at R fires/s the agent needs about
#                   R x early_dispatch slots besides its running ones (10,000 jobs every 10 s:
#                   1,000 fires/s, 1 s ahead); with fewer, shards are granted later, closer
#                   to or after their instants
#   JOBCTL_LOG_LEVEL [info] coordinator and agent log level
#   JOBCTL_COORDINATORS [3] coordinators of the -pg peers   PG_PORT [55433]
#   JOBCTL_HOLD_TTL [""] the -pg coordinators' hold_ttl ("": the default, 10s). An apply of
#                   100,000 jobs keeps the holder's loop busy past 10 s, and a standby then
#                   ends the holder's session and the apply fails: that row needs "60s"
#   PG_OPTS [""] extra postgres server options, as the harness's
#   JOBCTL_EARLY_DISPATCH [spawn: "", the default, 1s; noop: "0s"] the coordinators'
#                   early_dispatch. The noop peers measure run created - scheduled, which
#                   early dispatch would make negative (runs are created ahead), so it is off
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PY=/usr/bin/python3

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
}
log() { echo "[jobctl run.sh $(date +%T)] $*" >&2; }
ERROR=""
die() { ERROR="$*"; log "ERROR: $*"; exit 1; }
now_ms() { date +%s%3N; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

[[ $# -eq 5 ]] || usage
PEER=$1 N=$2 S=$3 ACTION=$4 DURATION=$5
is_uint "$N" && (( N > 0 )) || { log "N must be a positive integer"; exit 2; }
is_uint "$S" && (( S > 0 )) || { log "S must be a positive integer"; exit 2; }
is_uint "$DURATION" && (( DURATION > 0 )) || { log "DURATION must be a positive integer"; exit 2; }
case "$PEER:$ACTION" in
  jobctl:spawn|jobctl-coord:noop|jobctl-pg:spawn|jobctl-pg-coord:noop) ;;
  jobctl:*|jobctl-coord:*|jobctl-pg:*|jobctl-pg-coord:*)
    log "$PEER does not run ACTION '$ACTION': jobctl and jobctl-pg run spawn (every run is a child process), jobctl-coord and jobctl-pg-coord run noop (no agent)"
    exit 2 ;;
  *) log "unknown PEER '$PEER' (jobctl | jobctl-coord | jobctl-pg | jobctl-pg-coord; the other peers are run by \$PEERS_DIR/run.sh)"; exit 2 ;;
esac
# AGENT: runs are spawned by an agent (else the coordinators alone); PG: the -pg store
AGENT=0 PG=0
[[ $PEER == jobctl || $PEER == jobctl-pg ]] && AGENT=1
[[ $PEER == jobctl-pg* ]] && PG=1

PEERS_DIR=${PEERS_DIR:-$HERE/harness}
for f in lib/analyze.py lib/sampler.py; do
  [[ -f $PEERS_DIR/$f ]] || { log "ERROR: $PEERS_DIR/$f not found: jobctl is measured with the peer harness's own analyzer and sampler; set PEERS_DIR to the harness folder (the one with run.sh and lib/)"; exit 2; }
done
BUILD=${JOBCTL_BUILD:-$REPO/build/release}
JOBCTL=$BUILD/cmd/jobctl/jobctl AGENTD=$BUILD/agentd/agentd PROBE=$BUILD/bench/bench_probe
for b in "$JOBCTL" "$AGENTD" "$PROBE"; do
  [[ -x $b ]] || { log "ERROR: $b missing: build first (cmake --workflow --preset release), or set JOBCTL_BUILD"; exit 2; }
done

WARMUP=${WARMUP:-$(( S > 10 ? S : 10 ))}
GRACE=${GRACE:-$(( S > 5 ? S : 5 ))}
SPREAD=${SPREAD:-uniform}
KEEP_RUN=${KEEP_RUN:-0}
SLOTS=${JOBCTL_SLOTS:-2048}
LOG_LEVEL=${JOBCTL_LOG_LEVEL:-info}
NCOORD=1
if (( PG )); then
  NCOORD=${JOBCTL_COORDINATORS:-3}
  is_uint "$NCOORD" && (( NCOORD > 0 )) || { log "JOBCTL_COORDINATORS must be a positive integer"; exit 2; }
fi
PG_PORT=${PG_PORT:-55433}
PG_OPTS=${PG_OPTS:-}
HOLD_TTL=${JOBCTL_HOLD_TTL:-}
if [[ $ACTION == noop ]]; then EARLY=${JOBCTL_EARLY_DISPATCH-0s}; else EARLY=${JOBCTL_EARLY_DISPATCH:-}; fi
[[ -z $EARLY || $EARLY =~ ^[0-9]+(ms|s)$ ]] || { log "JOBCTL_EARLY_DISPATCH must be a duration like 1s"; exit 2; }
[[ -z $HOLD_TTL || $HOLD_TTL =~ ^[0-9]+[smh]$ ]] || { log "JOBCTL_HOLD_TTL must be a duration like 60s"; exit 2; }
case "$SPREAD" in uniform|seconds|aligned) ;; *) log "SPREAD must be uniform|seconds|aligned"; exit 2;; esac

RUN=$(mktemp -d "${TMPDIR:-/tmp}/jobctl-peers-run.XXXXXX")
chmod 755 "$RUN"
: > "$RUN/roots"
SAMPLER_PID="" COORD_PID="" AGENT_PID="" PG_PID=""
COORD_PIDS=() URLS=()
URL="" TOKEN="" STORE=""
T_REG_START="" T_REG_END="" REGISTER_S=null WS="" WE="" T_STOP=""
EXTRA_CPU=0 MAX_JOBFILE=0
PRINTED=0

alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }
wait_gone() { # pid timeout_s
  local pid=$1 t=$(( $2 * 10 ))
  while alive "$pid" && (( t-- > 0 )); do sleep 0.1; done
  ! alive "$pid"
}
stop_pid() { # pid signal timeout_s  (only processes this script started)
  local pid=$1 sig=$2 to=$3
  alive "$pid" || return 0
  kill "-$sig" "$pid" 2>/dev/null || true
  wait_gone "$pid" "$to" || { log "pid $pid did not exit on SIG$sig; SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; }
  wait "$pid" 2>/dev/null || true
}
add_root() { echo "$1" >> "$RUN/roots"; }
metrics() { # FILE: the coordinator's /metrics now
  curl -sf --max-time 5 -H "Authorization: Bearer $TOKEN" "$URL/metrics" > "$1" || : > "$1"
}
# "self_ticks children_ticks" of a process (utime+stime, cutime+cstime), for the CPU split
ticks() { [[ -n ${1:-} && -r /proc/$1/stat ]] && awk '{ sub(/^.*\) /, ""); print $12 + $13, $14 + $15 }' "/proc/$1/stat" || echo "0 0"; }
coord_ticks() { # the coordinators' ticks, summed
  local p a=0 b=0 x y
  for p in "${COORD_PIDS[@]}"; do read -r x y <<<"$(ticks "$p")"; a=$(( a + x )); b=$(( b + y )); done
  echo "$a $b"
}
snapshot() { # SUFFIX: metrics (of the first coordinator, the one that serves) and CPU ticks
  metrics "$RUN/metrics.$1"
  echo "$(coord_ticks) $(ticks "$AGENT_PID")" > "$RUN/ticks.$1"
}

# The JSON line, from what the run left: records, samples and the coordinator's store.
emit_line() {
  local recs=() stats='{}' window='{}'
  [[ -n $T_REG_END ]] || T_REG_END=$(now_ms)
  [[ -n $WS ]] || { WS=$(( T_REG_END + WARMUP * 1000 )); WE=$(( WS + DURATION * 1000 )); T_STOP=$(( WE + GRACE * 1000 )); }
  if [[ -f $RUN/data/jobctl.db ]]; then
    stats=$("$PY" "$HERE/jobctl_peer.py" records "$RUN/data/jobctl.db" "$RUN/store.rec" 2>"$RUN/records.log") || stats='{}'
  elif [[ -n $STORE ]] && alive "$PG_PID"; then
    stats=$("$PY" "$HERE/jobctl_peer.py" records "$STORE" "$RUN/store.rec" 2>"$RUN/records.log") || stats='{}'
  fi
  if (( AGENT )); then recs+=("$RUN/jobctl.rec"); else recs+=("$RUN/store.rec"); fi
  if [[ -s $RUN/metrics.start && -s $RUN/metrics.end ]]; then
    window=$("$PY" "$HERE/jobctl_peer.py" window "$RUN/metrics.start" "$RUN/metrics.end" \
      "$(cat "$RUN/ticks.start") $(cat "$RUN/ticks.end") $(getconf CLK_TCK)") || window='{}'
  fi
  local version commit
  version=$("$JOBCTL" --version 2>/dev/null | head -n1 || echo unknown)
  commit=$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo unknown)
  P_PEER=$PEER P_N=$N P_S=$S P_ACTION=$ACTION P_DURATION=$DURATION P_WARMUP=$WARMUP P_GRACE=$GRACE \
  P_SPREAD=$SPREAD P_WS=$WS P_WE=$WE P_T_STOP=$T_STOP P_REGISTER_S=$REGISTER_S P_EXTRA_CPU=$EXTRA_CPU \
  P_VERSION=$version P_COMMIT=$commit P_BUILD=$BUILD P_MAX_JOBFILE=$MAX_JOBFILE \
  P_LOG_LEVEL=$LOG_LEVEL P_SLOTS=$SLOTS P_COORDINATORS=$NCOORD P_PG_OPTS=$PG_OPTS P_HOLD_TTL=$HOLD_TTL P_EARLY=$EARLY \
  P_PG_VERSION=${PG_VERSION:-} P_STATS=$stats P_WINDOW=$window P_ERROR=$ERROR \
  "$PY" "$HERE/jobctl_peer.py" params > "$RUN/params.json"
  "$PY" "$PEERS_DIR/lib/analyze.py" "$RUN/params.json" "$RUN/samples" "${recs[@]}"
  PRINTED=1
}

cleanup() {
  local rc=$?
  set +e
  stop_pid "$AGENT_PID" TERM 90
  stop_coordinators
  if [[ -n $SAMPLER_PID ]]; then kill -USR1 "$SAMPLER_PID" 2>/dev/null; stop_pid "$SAMPLER_PID" TERM 5; fi
  if (( rc != 0 )); then
    for f in "$RUN"/*.log "$RUN"/pg/log; do
      [[ -s $f ]] && { echo "---- tail $f" >&2; tail -n 20 "$f" >&2; }
    done
    # A failed run still prints its line: what was recorded, the rest counted as missed.
    (( PRINTED )) || { [[ -n $ERROR ]] || ERROR="stopped (exit $rc)"; emit_line || true; }
  fi
  stop_pid "$PG_PID" INT 60   # postgres "fast" shutdown, after the fires were read
  if [[ $KEEP_RUN == 1 ]]; then log "run dir kept: $RUN"; else rm -rf "$RUN"; fi
  exit $rc
}
stop_coordinators() { # standbys first, so that none takes over from the one that serves
  local k
  for (( k = ${#COORD_PIDS[@]} - 1; k >= 0; k-- )); do stop_pid "${COORD_PIDS[$k]}" TERM 60; done
  COORD_PIDS=() COORD_PID=""
}
trap cleanup EXIT
trap 'ERROR="interrupted"; exit 130' INT TERM

# Sleeps until the epoch ms given, checking every second that the servers are alive.
sleep_until() {
  local until=$1 now left p
  while :; do
    now=$(now_ms); left=$(( until - now ))
    (( left <= 0 )) && return 0
    for p in "${COORD_PIDS[@]}" ${AGENT_PID:+"$AGENT_PID"} ${PG_PID:+"$PG_PID"}; do
      alive "$p" || die "process $p died during the measurement"
    done
    sleep "$( (( left > 1000 )) && echo 1 || printf '0.%03d' "$left")"
  done
}

# ---------------------------------------------------------------- setup (not measured)
if (( AGENT )); then
  COMMAND="[\"$PROBE\", \"peer\", \"$RUN/jobctl.rec\"]"
else
  COMMAND='["/bin/true"]'
fi
"$PY" "$HERE/jobctl_peer.py" jobfile "$PEERS_DIR/lib/analyze.py" "$N" "$S" "$SPREAD" "$COMMAND" "$RUN/jobs.toml"
# the job file must fit: max_jobfile, twice its size and at least the 8 MiB default
MAX_JOBFILE=$(( $(stat -c %s "$RUN/jobs.toml") * 2 ))
(( MAX_JOBFILE > 8 << 20 )) || MAX_JOBFILE=$(( 8 << 20 ))

"$PY" "$PEERS_DIR/lib/sampler.py" "$RUN/roots" "$RUN/samples" 0.25 &
SAMPLER_PID=$!

# ---------------------------------------------------------------- servers
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
as_pg() { # runs as the postgres user when root (the server refuses to run as root)
  if (( $(id -u) == 0 )); then setpriv --reuid=postgres --regid=postgres --init-groups "$@"; else "$@"; fi
}
start_postgres() { # as the harness's start_postgres for quartz-jdbc
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
  [[ -x $bin/initdb ]] || die "PostgreSQL not installed (packaging/install-deps)"
  port_free "$PG_PORT" || die "127.0.0.1:$PG_PORT is in use (set PG_PORT)"
  PG_VERSION=$("$bin/postgres" --version | awk '{ print $3 }')
  mkdir -p "$RUN/pg"
  (( $(id -u) != 0 )) || chown postgres:postgres "$RUN/pg"
  as_pg "$bin/initdb" -D "$RUN/pg/data" -A trust -U postgres -E UTF8 --no-sync >"$RUN/pg/initdb.log" 2>&1 \
    || die "initdb failed"
  # setpriv execs (no fork), so the background job is the postmaster itself
  # shellcheck disable=SC2086
  as_pg "$bin/postgres" -D "$RUN/pg/data" -c listen_addresses=127.0.0.1 -p "$PG_PORT" \
    -c unix_socket_directories="$RUN/pg" -c max_connections=300 $PG_OPTS >"$RUN/pg/log" 2>&1 &
  local t=300
  until PGCONNECT_TIMEOUT=1 psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; do
    (( t-- > 0 )) || die "postgres did not start"
    sleep 0.1
  done
  PG_PID=$(head -n1 "$RUN/pg/data/postmaster.pid")
  add_root "$PG_PID"
  psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -qc 'CREATE DATABASE jobctl' >/dev/null \
    || die "CREATE DATABASE failed"
  STORE="postgresql://postgres@127.0.0.1:$PG_PORT/jobctl"
  log "postgres $PG_VERSION pid $PG_PID on 127.0.0.1:$PG_PORT"
}
readyz() { # URL: whether that coordinator serves (a standby answers 503)
  curl -sf --max-time 2 -o /dev/null "$1/readyz"
}
start_coordinator() { # K: coordinator K, data directory data (K = 0) or data<K>
  local k=$1 data=$RUN/data port t pid
  (( k == 0 )) || data=$RUN/data$k
  if (( k > 0 )); then
    # tokens live in the database: another coordinator is handed the admin token only
    mkdir -p "$data"; chmod 700 "$data"
    install -m 600 "$RUN/data/admin.token" "$data/admin.token"
  fi
  : > "$RUN/coordinator$k.log"   # before the server starts: the wait below reads it at once
  "$JOBCTL" serve --config "$RUN/coordinator.toml" --listen 127.0.0.1:0 --data "$data" \
    >"$RUN/coordinator$k.log" 2>&1 &
  pid=$!
  COORD_PIDS+=("$pid")
  add_root "$pid"
  for (( t = 300; ; t-- )); do
    port=$(sed -n 's/^jobctl serve: listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$RUN/coordinator$k.log" | head -n1)
    [[ -n $port ]] && break
    alive "$pid" || die "coordinator $k exited at start"
    (( t > 0 )) || die "coordinator $k did not start listening"
    sleep 0.1
  done
  URLS+=("http://127.0.0.1:$port")
}

(( PG )) && start_postgres
{
  printf 'max_jobfile = %d\nlog_level = "%s"\n' "$MAX_JOBFILE" "$LOG_LEVEL"
  [[ -z $STORE ]] || printf 'store = "%s"\n' "$STORE"
  [[ -z $STORE || -z $HOLD_TTL ]] || printf 'hold_ttl = "%s"\n' "$HOLD_TTL"
  [[ -z $EARLY ]] || printf 'early_dispatch = "%s"\n' "$EARLY"
} > "$RUN/coordinator.toml"
start_coordinator 0
COORD_PID=${COORD_PIDS[0]}
URL=${URLS[0]}
TOKEN=$(head -n1 "$RUN/data/admin.token")
if (( PG )); then
  # the first one holds the database before the standbys start
  for (( t = 300; ; t-- )); do
    readyz "$URL" && break
    alive "$COORD_PID" || die "coordinator 0 exited at start"
    (( t > 0 )) || die "coordinator 0 does not serve (/readyz)"
    sleep 0.1
  done
  for (( k = 1; k < NCOORD; k++ )); do start_coordinator "$k"; done
  for (( k = 1; k < NCOORD; k++ )); do
    ! readyz "${URLS[$k]}" || die "coordinator $k serves too: two coordinators hold one database"
  done
fi
ALL_URLS=$(IFS=,; echo "${URLS[*]}")
cli() { HOME="$RUN" XDG_STATE_HOME="$RUN/state" XDG_CONFIG_HOME="$RUN/config" \
        JOBCTL_COORDINATOR="$ALL_URLS" JOBCTL_TOKEN="$TOKEN" "$JOBCTL" --no-color "$@"; }
log "coordinators ${COORD_PIDS[*]} on $ALL_URLS${STORE:+ (store $STORE; the first serves)}"

if (( AGENT )); then
  printf 'allow_run_as = ["root"]\n' > "$RUN/agentd.toml"
  coord_args=()
  for u in "${URLS[@]}"; do coord_args+=(--coordinator "$u"); done
  "$AGENTD" --config "$RUN/agentd.toml" "${coord_args[@]}" --token-file "$RUN/data/agent.token" \
    --name bench --slots "$SLOTS" --state-dir "$RUN/agent" --log-level "$LOG_LEVEL" \
    >"$RUN/agentd.log" 2>&1 &
  AGENT_PID=$!
  add_root "$AGENT_PID"
  for (( t = 300; ; t-- )); do
    cli -o json agents 2>/dev/null | "$PY" -c 'import json, sys; sys.exit(not any(a["connected"] for a in json.load(sys.stdin)))' && break
    alive "$AGENT_PID" || die "agentd exited at start"
    (( t > 0 )) || die "agentd did not connect"
    sleep 0.1
  done
  log "agentd pid $AGENT_PID connected, $SLOTS slots"
fi

# ---------------------------------------------------------------- registration
T_REG_START=$(now_ms)
# bash's `times` after the command: the CPU of the jobctl CLI (a child of this subshell)
apply_cpu=$( { cli apply "$RUN/jobs.toml" >"$RUN/apply.log" 2>&1 || echo failed > "$RUN/apply.failed"; times; } | tail -n1 )
T_REG_END=$(now_ms)
[[ ! -e $RUN/apply.failed ]] || die "jobctl apply failed: $(tail -n3 "$RUN/apply.log" | tr '\n' ' ')"
EXTRA_CPU=$(awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } } END { printf "%.3f", s }' <<<"$apply_cpu")
REGISTER_S=$("$PY" -c "print(($T_REG_END - $T_REG_START) / 1000.0)")

# ---------------------------------------------------------------- window
WS=$(( T_REG_END + WARMUP * 1000 ))
WE=$(( WS + DURATION * 1000 ))
T_STOP=$(( WE + GRACE * 1000 ))
log "$PEER n=$N S=$S $ACTION: registered in ${REGISTER_S}s; window $(date -d @$(( WS / 1000 )) +%T)..$(date -d @$(( WE / 1000 )) +%T), stop at $(date -d @$(( T_STOP / 1000 )) +%T)"
sleep_until "$WS"; snapshot start
sleep_until "$WE"; snapshot end
sleep_until "$T_STOP"
kill -USR1 "$SAMPLER_PID"; wait "$SAMPLER_PID" || true; SAMPLER_PID=""
stop_pid "$AGENT_PID" TERM 90; AGENT_PID=""
stop_coordinators

emit_line
