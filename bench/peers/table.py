#!/usr/bin/python3
"""Side-by-side tables from the JSON lines of one session (side_by_side.sh's results file).

usage: table.py RESULTS.jsonl

Prints two markdown tables:
  1. every run, grouped by workload (N, S, action, spread), jobctl first;
  2. per workload and jobctl row: jobctl against the best peer for each metric, as
     "jobctl vs best (peer) = ratio". The best peer is taken among the peers that kept up
     (missed = 0 and duplicated = 0) when any did, else among all that ran: the highest
     fire rate, the lowest p99, missed, duplicated, peak RSS and CPU. Ratios are jobctl /
     best: above 1 is more for jobctl (better for the fire rate, worse for the others).
     A workload no peer ran shows jobctl's figures alone. jobctl-coord's p99 is the run's
     creation (store, per fire; jobctl-pg-coord's likewise); "(committed <= X)" adds the bucket bound of the coordinator's
     committed-lateness histogram over the window.
"""
import json
import sys

COLS = [
    ("peer", "peer"), ("n", "N"), ("period_s", "S"), ("action", "action"),
    ("fires_expected", "expected"), ("fires_seen", "seen"), ("missed", "missed"),
    ("duplicated", "dup"), ("lateness_ms_p50", "p50 ms"), ("lateness_ms_p99", "p99 ms"),
    ("lateness_ms_max", "max ms"), ("fired_per_s_window", "fired/s"), ("register_s", "reg s"),
    ("peak_rss_mb", "RSS MB"), ("peak_pss_mb", "PSS MB"), ("cpu_s", "CPU s"),
    ("cpu_window_s", "CPU s (window)"), ("host_other_cpu_window_s", "other CPU s"),
]
ORDER = {"jobctl": 0, "jobctl-coord": 0, "jobctl-pg": 0, "jobctl-pg-coord": 0, "quartz-ram": 1, "quartz-jdbc": 2, "bullmq": 3, "cron": 4}


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float):
        if abs(v) >= 100:
            return f"{v:.0f}"
        return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    return str(v)


def label(r):
    cfg = r.get("config") or {}
    p = r["peer"]
    if p == "bullmq" and cfg.get("workers"):
        p = f'bullmq (w{cfg.get("workers")}xc{cfg.get("concurrency")})'
    elif cfg.get("nodes", 1) and cfg.get("nodes", 1) > 1:
        p = f'{p} ({cfg["nodes"]} nodes)'
    elif p == "jobctl" and "agent" in cfg:
        p = f'jobctl ({cfg["agent"].get("slots")} slots)'
    elif p.startswith("jobctl-pg"):
        what = [cfg.get("processes", "").split(" coordinators")[0] + " coordinators"]
        if "agent" in cfg:
            what.append(f'{cfg["agent"].get("slots")} slots')
        p = f'{p} ({", ".join(what)})'
    if cfg.get("error"):
        p += " FAILED"
    return p


def workload(r):
    return (r["n"], r["period_s"], r["action"], r.get("spread") or ("aligned" if r["peer"] == "cron" else "uniform"))


def is_jobctl(r):
    return r["peer"].startswith("jobctl")


def kept_up(r):
    return r.get("missed") == 0 and r.get("duplicated") == 0


def best(peers, key, highest=False):
    """(value, label) of the best peer for key, among those that kept up if any did."""
    pool = [p for p in peers if kept_up(p)] or peers
    pool = [p for p in pool if p.get(key) is not None]
    if not pool:
        return None, None
    pick = (max if highest else min)(pool, key=lambda p: p[key])
    return pick[key], label(pick)


def mine(r, key):
    """jobctl's figure; for jobctl-coord's p99, also the window's committed p99 (histogram)."""
    text = fmt(r.get(key))
    hist = ((r.get("config") or {}).get("window_metrics") or {}).get("fire_lateness_seconds") or {}
    if key == "lateness_ms_p99" and r["peer"] in ("jobctl-coord", "jobctl-pg-coord") and hist.get("p99_le_ms"):
        text += f' (committed <= {fmt(float(hist["p99_le_ms"]))})'
    return text


def compare(r, peers, key, highest=False):
    value, who = best(peers, key, highest)
    if who is None:
        return mine(r, key)
    text = f"{mine(r, key)} vs {fmt(value)} {who}"
    mine_v = r.get(key)
    if mine_v is not None and value is not None and value > 0 and mine_v >= 0:
        text += f" = {mine_v / value:.2f}×"
    return text


def main():
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
    rows.sort(key=lambda r: (workload(r), ORDER.get(r["peer"], 9), label(r)))
    print("| " + " | ".join(h for _, h in COLS) + " | spread |")
    print("|" + "|".join("---" for _ in range(len(COLS) + 1)) + "|")
    for r in rows:
        cells = [label(r) if k == "peer" else fmt(r.get(k)) for k, _ in COLS]
        print("| " + " | ".join(cells) + f" | {workload(r)[3]} |")
    print()
    print("| N | S | action | spread | jobctl | fired/s | p99 ms | missed | dup | RSS MB | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if not is_jobctl(r):
            continue
        peers = [p for p in rows if not is_jobctl(p) and workload(p) == workload(r)]
        n, s, action, spread = workload(r)
        cells = [str(n), str(s), action, spread, label(r),
                 compare(r, peers, "fired_per_s_window", highest=True),
                 compare(r, peers, "lateness_ms_p99"), compare(r, peers, "missed"),
                 compare(r, peers, "duplicated"), compare(r, peers, "peak_rss_mb"),
                 compare(r, peers, "cpu_s")]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
