#!/usr/bin/env python3
"""W9 (issue 33): N real `lansync node` processes on loopback, each given the one or two started
before it as `--peer` (members pass each other on; past eight members each keeps a bounded view,
Docs/SCALE.md). For each size it reports what issue 33 asks of W9:

- sessions per node (connected peers in `status`), and how many nodes keep a bounded view;
- idle CPU per node (ms of CPU a second, from /proc/PID/stat over 10 s, after the edits settled);
- RSS per node (VmRSS);
- an edit's time to reach every replica: a CLI `add` on a node chosen in turn; each replica
  records when it committed the field (`field.changed_at`, ms), so the reach is the last
  replica's commit minus the origin's, with no busy poller taking CPU from the nodes (the
  replicas are polled every 50 ms only to know when to read them); p50 and p99 over the edits,
  and the same for the moment half the replicas had it;
- CPU per node per edit: all nodes' CPU during the edits, less their idle rate, over edits and
  nodes (on this 2-core machine, 200 nodes x this must fit in 2 core-seconds for a 1 s reach);
- bytes per change per node: what the nodes' sessions sent during the edits (`sent_bytes` in
  `status`, sessions that lived through the phase), over edits and nodes; and the field states
  they received (`received_updates`): 1 per node and edit when no node gets a change twice;
- a restart of every node at once: SIGTERM to all, all started together, an edit on n0 at once;
  the time until every replica has it.

    python3 Benchmarks/w9-loopback.py --lansync .build/release/lansync --sizes 8,32 --edits 20

Not asserted anywhere: a benchmark. Every loopback peer dials from 127.0.0.1, so nodes start
0.2 s apart to keep the per-address handshake bound (8 pending) out of the figures (the restart
step starts them all at once on purpose).

With `--lab` the nodes find each other over mDNS instead, through real avahi-daemons: node i runs
in host i+1 of an mDNS lab (`scripts/lab.sh`, its own prefix `lsw`: network namespaces on one
bridge, each with its own D-Bus and avahi-daemon; nothing runs in the machine's own namespace),
listening on 10.77.0.(i+1), with no `--peer`. The report then also gives the avahi-daemons' idle
CPU. Needs root; at most 250 nodes (one /24).

    sudo python3 Benchmarks/w9-loopback.py --lansync .build/release/lansync --sizes 32 --lab
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from loopback_nodes import cli, close_connections, committed_at, free_ports, percentile, replica, status

TICKS = os.sysconf("SC_CLK_TCK")


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



NODE_ARGS = []
LAB_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "lab.sh")
LAB_ENV = dict(os.environ, LAB_PREFIX="lsw", LAB_DIR="/tmp/lansync-lab-w9")
LAB = {"on": False}
FORM_LIMIT = {"s": 120}


def lab(*args):
    subprocess.run(["bash", LAB_SCRIPT, *args], check=True, env=LAB_ENV, stdout=subprocess.DEVNULL)


def avahi_pids(n):
    pids = []
    for host in range(1, n + 1):
        with open(f"{LAB_ENV['LAB_DIR']}/n{host}/avahi.pid") as f:
            pids.append(int(f.read().strip()))
    return pids


def start_node(binary, d, port, peers, index):
    log = open(d + ".log", "a")
    if LAB["on"]:
        # In lab host index+1, found over mDNS: no --peer.
        host = index + 1
        command = ["bash", LAB_SCRIPT, "exec", str(host), binary, "node", "--dir", d,
                   "--listen", f"10.77.0.{host}:7420", "--no-api", *NODE_ARGS]
        return subprocess.Popen(command, stdout=log, stderr=log, env=LAB_ENV)
    return subprocess.Popen(
        [binary, "node", "--dir", d, "--listen", f"127.0.0.1:{port}", "--no-mdns", "--no-api", *peers, *NODE_ARGS],
        stdout=log, stderr=log)


def stop_all(procs):
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def wait_everywhere(dirs, item, limit):
    """Each replica's commit time of `item` once all have it (50 ms polls), or None past `limit` s."""
    deadline = time.monotonic() + limit
    seen = {}
    while time.monotonic() < deadline:
        for d in dirs:
            if d not in seen:
                at = committed_at(replica(d), item)
                if at is not None:
                    seen[d] = at
        if len(seen) == len(dirs):
            return seen
        time.sleep(0.05)
    return None


def session_counters(binary, dirs):
    """What each live session has sent so far (bytes) and received (field states), by (node, peer)."""
    counters = {}
    for d in dirs:
        for peer in status(binary, d)["peers"]:
            if peer.get("connected") and peer.get("sent_bytes") is not None:
                counters[(d, peer.get("node_id"))] = (peer["sent_bytes"], peer.get("received_updates") or 0)
    return counters


def peer_args(i, ports):
    peers = []
    for back in (1, 2):
        if i - back >= 0:
            peers += ["--peer", f"127.0.0.1:{ports[i - back]}"]
    return peers


def timed_edits(binary, dirs, edits):
    """The edits: for each, how long until the last replica and half of them committed it (s)."""
    n = len(dirs)
    reach, half = [], []
    for k in range(edits):
        origin = dirs[(k * 7) % n]
        item = f"w9-{k}"
        cli(binary, "add", "--dir", origin, "--id", item, f"v={k}")
        seen = wait_everywhere(dirs, item, 30)
        if seen is None:
            reach.append(float("inf"))
            half.append(float("inf"))
            continue
        offsets = sorted((at - seen[origin]) / 1000 for at in seen.values())
        reach.append(offsets[-1])
        half.append(offsets[len(offsets) // 2])
        time.sleep(0.2)
    return reach, half


def run_size(binary, n, edits, work):
    dirs = [os.path.join(work, f"n{i}") for i in range(n)]
    cli(binary, "cluster", "create", os.path.join(work, "cluster.pem"))
    for i, d in enumerate(dirs):
        cli(binary, "init", "--dir", d, "--cluster", os.path.join(work, "cluster.pem"), "--name", f"n{i}")
    ports = free_ports(n)
    procs = []
    started = time.monotonic()
    for i, d in enumerate(dirs):
        procs.append(start_node(binary, d, ports[i], peer_args(i, ports), i))
        time.sleep(0.2)
    try:
        # Every replica holds the first edit: the cluster is connected.
        cli(binary, "add", "--dir", dirs[0], "--id", "first", "v=1")
        if wait_everywhere(dirs, "first", FORM_LIMIT["s"]) is None:
            raise SystemExit(f"{n} nodes: the first edit did not reach every replica within {FORM_LIMIT['s']} s")
        formed = time.monotonic() - started
        time.sleep(5)
        sent0 = session_counters(binary, dirs)
        cpu0 = sum(cpu_seconds(p.pid) for p in procs)
        t0 = time.monotonic()
        reach, half = timed_edits(binary, dirs, edits)
        phase = time.monotonic() - t0
        cpu_edits = sum(cpu_seconds(p.pid) for p in procs) - cpu0
        sent1 = session_counters(binary, dirs)
        lived = [k for k in sent0 if k in sent1 and sent1[k][0] >= sent0[k][0]]
        sent = sum(sent1[k][0] - sent0[k][0] for k in lived)
        received = sum(sent1[k][1] - sent0[k][1] for k in lived)
        time.sleep(10)
        daemons = avahi_pids(n) if LAB["on"] else []
        before = [cpu_seconds(p.pid) for p in procs]
        daemons_before = [cpu_seconds(pid) for pid in daemons]
        time.sleep(10)
        idle = [(cpu_seconds(p.pid) - b) / 10 * 1000 for p, b in zip(procs, before)]
        avahi_idle = [(cpu_seconds(pid) - b) / 10 * 1000 for pid, b in zip(daemons, daemons_before)]
        rss = [rss_mb(p.pid) for p in procs]
        sessions, bounded, floods = [], 0, {}
        for d in dirs:
            s = status(binary, d)
            sessions.append(sum(1 for p in s["peers"] if p.get("connected")))
            if (s.get("view") or {}).get("mode") == "bounded":
                bounded += 1
            flood = (s.get("view") or {}).get("flood", 0)
            floods[flood] = floods.get(flood, 0) + 1
        idle_total_s = sum(idle) / 1000
        # Every node restarted at once, then one edit: when does every replica hold it?
        stop_all(procs)
        close_connections()
        t_restart = time.monotonic()
        procs = [start_node(binary, d, ports[i], peer_args(i, ports), i) for i, d in enumerate(dirs)]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                cli(binary, "add", "--dir", dirs[0], "--id", "after-restart", "v=1")
                break
            except subprocess.CalledProcessError:
                time.sleep(0.1)
        settled = wait_everywhere(dirs, "after-restart", 120)
        settle_s = time.monotonic() - t_restart if settled is not None else float("inf")
        report = {
            "nodes": n,
            "discovery": "mDNS (lab)" if LAB["on"] else "--peer (loopback)",
            "formed_s": round(formed, 1),
            "sessions_mean": round(statistics.mean(sessions), 1),
            "sessions_max": max(sessions),
            "bounded_views": bounded,
            # How many nodes flood a change within how many hops of its origin (protocol 1.11).
            "nodes_by_flood": {str(k): v for k, v in sorted(floods.items())},
            "idle_cpu_ms_per_s_mean": round(statistics.mean(idle), 2),
            "idle_cpu_ms_per_s_max": round(max(idle), 2),
            "rss_mb_max": round(max(rss), 1),
            "reach_ms_p50": round(percentile(reach, 50) * 1000, 1),
            "reach_ms_p99": round(percentile(reach, 99) * 1000, 1),
            "half_reached_ms_p50": round(percentile(half, 50) * 1000, 1),
            "unreached_edits": sum(1 for r in reach if r == float("inf")),
            "cpu_ms_per_node_per_edit": round((cpu_edits - idle_total_s * phase) * 1000 / edits / n, 2),
            "sent_bytes_per_node_per_edit": round(sent / edits / n),
            # 1 when every node receives each change once (sessions that lived through the phase).
            "field_states_received_per_node_per_edit": round(received / edits / n, 2),
            "sessions_measured_for_bytes": f"{len(lived)} of {len(sent0)}",
            "restart_all_settled_s": round(settle_s, 1),
        }
        if avahi_idle:
            report["avahi_idle_cpu_ms_per_s_mean"] = round(statistics.mean(avahi_idle), 2)
        return report
    finally:
        close_connections()
        stop_all(procs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lansync", required=True, help="the release lansync binary")
    parser.add_argument("--sizes", default="8,32", help="cluster sizes, comma-separated")
    parser.add_argument("--edits", type=int, default=20, help="edits timed per size")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (every node's log)")
    parser.add_argument("--node-args", default="", help="more arguments for every node, space-separated")
    parser.add_argument("--lab", action="store_true", help="every node in its own mDNS lab host, found over mDNS")
    parser.add_argument("--form-limit", type=int, default=120,
                        help="seconds the first edit may take to reach every replica (the cluster forming)")
    args = parser.parse_args()
    FORM_LIMIT["s"] = args.form_limit
    NODE_ARGS.extend(args.node_args.split())
    LAB["on"] = args.lab
    for n in [int(x) for x in args.sizes.split(",")]:
        if args.lab and not 1 <= n <= 250:
            raise SystemExit("--lab: at most 250 nodes (one /24)")
        work = tempfile.mkdtemp(prefix=f"lansync-w9-{n}-")
        try:
            if args.lab:
                lab("up", str(n))
            print(json.dumps(run_size(os.path.abspath(args.lansync), n, args.edits, work)), flush=True)
        finally:
            if args.lab:
                lab("down")
            if args.keep:
                print(f"kept {work}", file=sys.stderr)
            else:
                shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
