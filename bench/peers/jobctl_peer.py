#!/usr/bin/python3
"""jobctl's side of the peer benchmark, the parts run.sh does not do in shell.

usage:
  jobctl_peer.py jobfile ANALYZE_PY N S SPREAD COMMAND_JSON OUT
      Writes the job file of the workload: jobs s0..s<N-1>, "@every <S>s", each with the
      anchor that puts its grid on the harness's offset o_i (offset() of ANALYZE_PY, the
      peer harness's lib/analyze.py, so both sides use one definition of the grid).
  jobctl_peer.py records DB OUT
      Reads the coordinator's store after it stopped (DB: the SQLite file, or the
      postgresql:// URL of the database, read with psql): writes one record per scheduled run,
      "i scheduled_ms created_us" (the harness's record format; created = the moment the
      coordinator made the run, in the loop turn whose group commit stores it), and prints
      {"runs":..,"open_runs":..,"spawn_fail":..} (spawn_fail: shards that ended in another
      way than exit status 0).
  jobctl_peer.py window METRICS_AT_START METRICS_AT_END TICKS
      Two /metrics texts taken at the window's start and end -> the window's share of the
      coordinator's histograms (count, and the bucket bound at or below which 50% / 99% of
      the observations fell, in ms) and counters, as one JSON object; with TICKS (CPU ticks of
      the coordinator, its reaped children, agentd and its reaped children at the start, the
      same four at the end, then ticks per second) also where the window's CPU went.
  jobctl_peer.py params
      The run's parameters for analyze.py (params.json) from the P_* environment run.sh sets.
"""
import datetime
import importlib.util
import json
import os
import sqlite3
import subprocess
import sys

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def load_offset(analyze_py):
    spec = importlib.util.spec_from_file_location("peer_analyze", analyze_py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.offset


def instant(ms):
    t = EPOCH + datetime.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (ms % 1000)


def jobfile(analyze_py, n, s, spread, command_json, out):
    offset = load_offset(analyze_py)
    n, s = int(n), int(s)
    command = json.dumps(json.loads(command_json))
    with open(out, "w") as f:
        # allow: every fire is a run even while an earlier one is open (Quartz's default for
        # jobs; without an agent, runs stay pending and "forbid" would skip every later fire)
        f.write('[defaults]\noverlap = "allow"\n')
        for i in range(n):
            f.write(f'\n[[job]]\nname = "s{i}"\nschedule = "@every {s}s"\n'
                    f"anchor = {instant(offset(i, n, s * 1000, spread))}\n"
                    f"command = {command}\n")


RUNS_SQL = ("SELECT j.name, r.scheduled_ms, r.created_ms, r.state FROM runs r "
            "JOIN jobs j ON j.id = r.job_id WHERE r.reason = 'schedule' AND r.state != 'skipped'")
FAIL_SQL = ("SELECT count(*) FROM shards s JOIN runs r ON r.id = s.run_id WHERE r.reason = 'schedule' "
            "AND s.state NOT IN ('pending', 'running', 'succeeded')")


def psql(url, sql):
    """Rows of `sql` on the PostgreSQL database at `url`, as lists of strings."""
    out = subprocess.run(["psql", url, "-X", "-A", "-t", "-F", "|", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         check=True, capture_output=True, text=True).stdout
    return [line.split("|") for line in out.splitlines() if line]


def records(db, out):
    if db.startswith("postgresql://"):
        rows = psql(db, RUNS_SQL)
        ((fail,),) = psql(db, FAIL_SQL)
    else:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        rows = con.execute(RUNS_SQL).fetchall()
        (fail,) = con.execute(FAIL_SQL).fetchone()
    runs = open_runs = 0
    with open(out, "w") as f:
        for name, sched, created, state in rows:
            if not name.startswith("s") or not name[1:].isdigit():
                continue
            runs += 1
            open_runs += state in ("pending", "running")
            f.write(f"{name[1:]} {sched} {int(created) * 1000}\n")
    print(json.dumps({"runs": runs, "open_runs": open_runs, "spawn_fail": int(fail)}))


def parse_metrics(path):
    """{histogram name: {bound: cumulative count}} and {counter name: value}."""
    hists, values = {}, {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            key, _, v = line.rpartition(" ")
            if "_bucket{le=" in key:
                name, _, le = key.partition("_bucket{le=")
                le = le.strip('"}')
                hists.setdefault(name, {})[float("inf") if le == "+Inf" else float(le)] = float(v)
            else:
                values[key] = float(v)
    return hists, values


def window(at_start, at_end, ticks):
    h0, v0 = parse_metrics(at_start)
    h1, v1 = parse_metrics(at_end)
    out = {}
    for name, buckets in sorted(h1.items()):
        delta = {b: c - h0.get(name, {}).get(b, 0) for b, c in buckets.items()}
        count = delta.get(float("inf"), 0)
        entry = {"count": int(count)}
        for q in (0.5, 0.99):
            le = next((b for b in sorted(delta) if count and delta[b] >= q * count), None)
            entry[f"p{int(q * 100)}_le_ms"] = None if le is None or le == float("inf") else le * 1000
        out[name.removeprefix("jobctl_")] = entry
    for name in ("jobctl_fires_total", "jobctl_claims_total", "jobctl_grants_total",
                 "jobctl_heartbeats_total", "jobctl_missed_total", "jobctl_skipped_total",
                 "jobctl_leases_expired_total", "jobctl_stale_token_total"):
        out[name.removeprefix("jobctl_")] = int(v1.get(name, 0) - v0.get(name, 0))
    t = [float(x) for x in ticks.split()]
    if len(t) == 9:
        names = {"coordinator": 0, "agentd": 2, "agentd_children": 3}
        out["cpu_s"] = {k: round((t[4 + i] - t[i]) / t[8], 2) for k, i in names.items()}
    print(json.dumps(out, separators=(",", ":")))


def params():
    """params.json for analyze.py, from the P_* environment run.sh sets."""
    e = os.environ
    spawn = e["P_PEER"] in ("jobctl", "jobctl-pg")
    pg = e["P_PEER"].startswith("jobctl-pg")
    stats = json.loads(e.get("P_STATS") or "{}")
    coordinators = int(e.get("P_COORDINATORS") or 1)
    if pg:
        store = (f"PostgreSQL {e.get('P_PG_VERSION', '')} (fresh initdb, durable defaults, "
                 f"max_connections=300{' ' + e['P_PG_OPTS'] if e.get('P_PG_OPTS') else ''}), "
                 f"{coordinators} coordinators on it: the first serves, the others are standbys")
        who = f"{coordinators} coordinators"
    else:
        store = "SQLite WAL, one group commit per loop turn"
        who = "coordinator"
    config = {
        "jobctl": e["P_VERSION"], "commit": e["P_COMMIT"], "build": e["P_BUILD"] + " (RelWithDebInfo)",
        "processes": f"{who} + 1 agentd" if spawn else f"{who} only (no agent: runs stay pending)",
        "coordinator": {"store": store, "misfire_grace": "30s",
                        "hold_ttl": (e.get("P_HOLD_TTL") or "10s") if pg else None,
                        "lease_ttl": "15s", "heartbeat": "5s", "log_level": e["P_LOG_LEVEL"],
                        "early_dispatch": e.get("P_EARLY") or "1s",
                        "max_jobfile": int(e["P_MAX_JOBFILE"])},
        "job": {"schedule": f'@every {e["P_S"]}s + anchor per job', "overlap": "allow",
                "misfire": "fire-once", "shards": 1,
                "command": "bench_probe peer FILE" if spawn else "/bin/true (never run)"},
        "lateness": ("scheduled instant -> child's main() (bench_probe: after exec and loading libc)"
                     if spawn else "scheduled instant -> run created (store created_ms, ms resolution; "
                     "the loop turn's group commit follows, see window_metrics.fire_lateness_seconds)"),
        "registration": "one jobctl apply of the generated jobs.toml (the CLI's CPU is in cpu_s)",
        "store_after_run": stats,
        "window_metrics": json.loads(e.get("P_WINDOW") or "{}"),
    }
    if spawn:
        config["agent"] = {"agents": 1, "slots": int(e["P_SLOTS"]), "log_level": e["P_LOG_LEVEL"],
                           "allow_run_as": ["root"]}
    if e.get("P_ERROR"):
        config["error"] = e["P_ERROR"]
    num = lambda k: json.loads(e[k]) if e.get(k) else None
    json.dump({"peer": e["P_PEER"], "n": int(e["P_N"]), "period_s": int(e["P_S"]),
               "action": e["P_ACTION"], "duration_s": int(e["P_DURATION"]),
               "warmup_s": int(e["P_WARMUP"]), "grace_s": int(e["P_GRACE"]), "spread": e["P_SPREAD"],
               "window_start_ms": int(e["P_WS"]), "window_end_ms": int(e["P_WE"]),
               "t_stop_ms": int(e["P_T_STOP"]), "register_s": num("P_REGISTER_S"),
               "extra_cpu_s": float(e.get("P_EXTRA_CPU") or 0),
               "spawn_fail": int(stats.get("spawn_fail", 0)) if spawn else 0,
               "config": config}, sys.stdout)
    print()


def main():
    cmd, args = sys.argv[1] if len(sys.argv) > 1 else "", sys.argv[2:]
    if cmd == "jobfile" and len(args) == 6:
        jobfile(*args)
    elif cmd == "records" and len(args) == 2:
        records(*args)
    elif cmd == "window" and len(args) == 3:
        window(*args)
    elif cmd == "params" and not args:
        params()
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
