#!/usr/bin/env python3
"""W9 (issue 33), a first cut: N real `lansync node` processes on loopback, each given the one
or two started before it as `--peer` (members pass each other on; past eight members each keeps
a bounded view, Docs/SCALE.md). For each size it reports what issue 33 asks of W9:

- sessions per node (connected peers in `status`), and how many nodes keep a bounded view;
- idle CPU per node (ms of CPU a second, from /proc/PID/stat over 10 s, after the edits settled);
- RSS per node (VmRSS);
- an edit's time to reach every replica: a CLI `add` on a node chosen in turn, then each replica
  file polled (read-only SQLite) until the item is there; p50 and p99 over the edits of the time
  the *last* replica got it, counted from when the CLI returned (its commit is done by then).

    python3 Benchmarks/w9-loopback.py --lansync .build/release/lansync --sizes 8,32 --edits 20

Not asserted anywhere: a benchmark. Every loopback peer dials from 127.0.0.1, so nodes start
0.2 s apart to keep the per-address handshake bound (8 pending) out of the figures.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

TICKS = os.sysconf("SC_CLK_TCK")


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def cli(binary, *args):
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True).stdout


def status(binary, d):
    return json.loads(cli(binary, "status", "--dir", d, "--json"))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


# One read-only connection per replica, kept open: opening a file costs far more than a query,
# and with 200 replicas a poller that reopens them takes a core from the nodes it measures.
CONNECTIONS = {}


def has_item(path, item):
    try:
        db = CONNECTIONS.get(path)
        if db is None:
            db = CONNECTIONS[path] = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        return db.execute("SELECT 1 FROM item WHERE item_id = ?", (item,)).fetchone() is not None
    except sqlite3.Error:
        return False


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def run_size(binary, n, edits, work):
    dirs = [os.path.join(work, f"n{i}") for i in range(n)]
    cli(binary, "cluster", "create", os.path.join(work, "cluster.pem"))
    for i, d in enumerate(dirs):
        cli(binary, "init", "--dir", d, "--cluster", os.path.join(work, "cluster.pem"), "--name", f"n{i}")
    ports = free_ports(n)
    procs = []
    started = time.monotonic()
    for i, d in enumerate(dirs):
        peers = []
        for back in (1, 2):
            if i - back >= 0:
                peers += ["--peer", f"127.0.0.1:{ports[i - back]}"]
        log = open(d + ".log", "w")
        procs.append(subprocess.Popen(
            [binary, "node", "--dir", d, "--listen", f"127.0.0.1:{ports[i]}", "--no-mdns", "--no-api", *peers],
            stdout=log, stderr=log))
        time.sleep(0.2)
    try:
        # Every replica holds every other's first edit: the cluster is connected.
        cli(binary, "add", "--dir", dirs[0], "--id", "first", "v=1")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all(has_item(os.path.join(d, "replica.sqlite"), "first") for d in dirs):
            time.sleep(0.1)
        formed = time.monotonic() - started
        reach = []
        for k in range(edits):
            d = dirs[(k * 7) % n]
            item = f"w9-{k}"
            cli(binary, "add", "--dir", d, "--id", item, f"v={k}")
            t0 = time.monotonic()
            pending = set(dirs)
            last = 0.0
            while pending and time.monotonic() - t0 < 30:
                for other in list(pending):
                    if has_item(os.path.join(other, "replica.sqlite"), item):
                        pending.discard(other)
                        last = time.monotonic() - t0
                if pending:
                    time.sleep(0.005)
            reach.append(last if not pending else float("inf"))
            time.sleep(0.2)
        time.sleep(10)
        before = [cpu_seconds(p.pid) for p in procs]
        time.sleep(10)
        idle = [(cpu_seconds(p.pid) - b) / 10 * 1000 for p, b in zip(procs, before)]
        rss = [rss_mb(p.pid) for p in procs]
        sessions, bounded = [], 0
        for d in dirs:
            s = status(binary, d)
            sessions.append(sum(1 for p in s["peers"] if p.get("connected")))
            if (s.get("view") or {}).get("mode") == "bounded":
                bounded += 1
        return {
            "nodes": n,
            "formed_s": round(formed, 1),
            "sessions_mean": round(statistics.mean(sessions), 1),
            "sessions_max": max(sessions),
            "bounded_views": bounded,
            "idle_cpu_ms_per_s_mean": round(statistics.mean(idle), 2),
            "idle_cpu_ms_per_s_max": round(max(idle), 2),
            "rss_mb_max": round(max(rss), 1),
            "reach_ms_p50": round(percentile(reach, 50) * 1000, 1),
            "reach_ms_p99": round(percentile(reach, 99) * 1000, 1),
            "unreached_edits": sum(1 for r in reach if r == float("inf")),
        }
    finally:
        for db in CONNECTIONS.values():
            db.close()
        CONNECTIONS.clear()
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lansync", required=True, help="the release lansync binary")
    parser.add_argument("--sizes", default="8,32", help="cluster sizes, comma-separated")
    parser.add_argument("--edits", type=int, default=20, help="edits timed per size")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (every node's log)")
    args = parser.parse_args()
    for n in [int(x) for x in args.sizes.split(",")]:
        work = tempfile.mkdtemp(prefix=f"lansync-w9-{n}-")
        try:
            print(json.dumps(run_size(os.path.abspath(args.lansync), n, args.edits, work)), flush=True)
        finally:
            if args.keep:
                print(f"kept {work}", file=sys.stderr)
            else:
                shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
