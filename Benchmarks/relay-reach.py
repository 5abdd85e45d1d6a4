#!/usr/bin/env python3
"""Issue 63: is the relay always there? Real `lansync` processes on loopback.

A relay r and nodes a and c, each started with `--relay r` only (gossip on, as a user starts them):
r passes on their addresses and a and c meet directly. Each run then:

1. waits until a and c are connected to each other directly;
2. stops c (SIGTERM);
3. edits on a with the CLI (`add`), and times the edit's reach: r's commit of the field minus a's
   (`field.changed_at` in each replica, ms; the replicas are polled every 20 ms only to know when
   to read them);
4. stops a 2 s after the edit, starts c, and checks that c gets the edit (from the relay alone:
   store-and-forward), within 60 s;
5. starts a again.

With `--relays 3`, a and c are given three relays (`--relay` three times, the relays peered with each
other) and the first is killed (SIGKILL) before the first run: the reach is then to whichever relay a
failed over to, and c, started later, fails over too.

    python3 Benchmarks/relay-reach.py --lansync .build/release/lansync --runs 50 [--relays 3]

It prints p50 / p99 / max of the reach, how many edits reached a relay within 1 s, and how many runs
c got its edit. Not asserted anywhere: a benchmark (the integration tests assert the behaviour).
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from loopback_nodes import cli, close_connections, committed_at, free_ports, percentile, replica, status


class Cluster:
    def __init__(self, binary, work, relays):
        self.binary, self.work = binary, work
        self.names = [f"r{i}" for i in range(relays)] + ["a", "c"]
        self.ports = dict(zip(self.names, free_ports(len(self.names))))
        self.procs = {}
        pem = os.path.join(work, "cluster.pem")
        cli(binary, "cluster", "create", pem)
        for name in self.names:
            cli(binary, "init", "--dir", self.dir(name), "--cluster", pem, "--name", name)
        self.relays = [n for n in self.names if n.startswith("r")]

    def dir(self, name):
        return os.path.join(self.work, name)

    def start(self, name):
        log = open(self.dir(name) + ".log", "a")
        listen = ["--listen", f"127.0.0.1:{self.ports[name]}"]
        if name.startswith("r"):
            others = [x for r in self.relays if r != name for x in ("--peer", f"127.0.0.1:{self.ports[r]}")]
            command = [self.binary, "relay", "--dir", self.dir(name), *listen, *others]
        else:
            relays = [x for r in self.relays for x in ("--relay", f"127.0.0.1:{self.ports[r]}")]
            command = [self.binary, "node", "--dir", self.dir(name), *listen, "--no-mdns", "--no-api", *relays]
        self.procs[name] = subprocess.Popen(command, stdout=log, stderr=log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.ports[name]), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"{name} did not start listening")

    def stop(self, name, sig=signal.SIGTERM):
        p = self.procs.pop(name, None)
        if p is None:
            return
        p.send_signal(sig)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def stop_all(self):
        for name in list(self.procs):
            self.stop(name)

    def direct(self, a, c):
        """Whether a lists c as connected (any path but the relay)."""
        for peer in status(self.binary, self.dir(a)).get("peers", []):
            if peer.get("name") == c and peer.get("connected"):
                return True
        return False


def run(binary, runs, relays):
    work = tempfile.mkdtemp(prefix="lansync-relay-reach-")
    cluster = Cluster(binary, work, relays)
    reach, delivered, failures = [], 0, []
    try:
        for r in cluster.relays:
            cluster.start(r)
        cluster.start("a")
        cluster.start("c")
        if relays > 1:
            deadline = time.monotonic() + 60
            while not cluster.direct("a", "c") and time.monotonic() < deadline:
                time.sleep(0.1)
            cluster.stop(cluster.relays[0], signal.SIGKILL)
        for k in range(runs):
            deadline = time.monotonic() + 60
            while not (cluster.direct("a", "c") and cluster.direct("c", "a")):
                if time.monotonic() > deadline:
                    raise SystemExit(f"run {k}: a and c did not meet directly within 60 s")
                time.sleep(0.1)
            # A moment with both direct and relay sessions settled, as a user would have.
            time.sleep(1.0)
            cluster.stop("c")
            item = f"reach-{k}"
            cli(binary, "add", "--dir", cluster.dir("a"), "--id", item, f"n={k}")
            edited = time.monotonic()
            origin = committed_at(replica(cluster.dir("a")), item)
            live = [r for r in cluster.relays if r in cluster.procs]
            landed = None
            while time.monotonic() < edited + 2.0:
                ats = [committed_at(replica(cluster.dir(r)), item) for r in live]
                ats = [x for x in ats if x is not None]
                if ats:
                    landed = min(ats)
                    break
                time.sleep(0.02)
            if landed is not None:
                reach.append((landed - origin) / 1000)
            else:
                reach.append(float("inf"))
            time.sleep(max(0, edited + 2.0 - time.monotonic()))
            cluster.stop("a")
            cluster.start("c")
            deadline = time.monotonic() + 60
            got = False
            while time.monotonic() < deadline:
                if committed_at(replica(cluster.dir("c")), item) is not None:
                    got = True
                    break
                time.sleep(0.1)
            delivered += got
            if not got:
                failures.append(k)
            cluster.start("a")
            print(f"run {k}: reach {reach[-1] * 1000:.0f} ms, c has it: {got}", file=sys.stderr)
    finally:
        close_connections()
        cluster.stop_all()
    finite = [x for x in reach if x != float("inf")]
    print(json.dumps({
        "relays": relays,
        "runs": runs,
        "reach_ms_p50": round(percentile(reach, 50) * 1000, 1) if finite else None,
        "reach_ms_p99": round(percentile(reach, 99) * 1000, 1) if finite else None,
        "reach_ms_max": round(max(reach) * 1000, 1) if finite else None,
        "within_1s": sum(1 for x in reach if x <= 1.0),
        "not_on_a_relay_within_2s": sum(1 for x in reach if x == float("inf")),
        "c_got_it": delivered,
        "c_missed_runs": failures,
    }))
    shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lansync", required=True)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--relays", type=int, default=1)
    args = parser.parse_args()
    run(os.path.abspath(args.lansync), args.runs, args.relays)


if __name__ == "__main__":
    main()
