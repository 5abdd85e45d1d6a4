#!/usr/bin/env python3
"""How long a CLI command takes, process start to exit, for several lansync binaries at once.

    python3 Benchmarks/cli-start.py [--rounds N] BINARY [BINARY...]

Makes a small replica in a temporary directory with the first binary (a cluster, 50 items), then
runs `lansync --version`, `get ID` and `set ID f3=...` (no node running) with each binary in turn,
N rounds (default 100), interleaved so that a machine whose speed drifts (this 2-core one does)
affects every binary alike; beside them, the `sqlite3` shell running one UPDATE on a WAL file.
Prints the median, the 10th and the 90th percentile of each, in milliseconds.
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="lansync-cli-start-")
    env = dict(os.environ, LANSYNC_DIR=work + "/replica")
    first = args.binaries[0]
    run = lambda *a: subprocess.run([first, *a], env=env, check=True, capture_output=True, text=True).stdout
    run("cluster", "create", work + "/cluster.secret")
    run("init", "--cluster", work + "/cluster.secret")
    ids = [run("add", "type=t", f"f1=value {i}", f"f2=other {i}").strip() for i in range(50)]
    item = ids[7]
    plain = work + "/plain.sqlite"
    subprocess.run(
        ["sqlite3", plain, "PRAGMA journal_mode=WAL; CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t VALUES (1, 0)"],
        check=True, capture_output=True,
    )
    commands = {
        "--version": lambda b, i: [b, "--version"],
        "get ID": lambda b, i: [b, "get", item],
        "set ID f3=...": lambda b, i: [b, "set", item, f"f3=edit {i}"],
    }
    samples = {}
    for i in range(args.rounds):
        for name, command in commands.items():
            for binary in args.binaries:
                started = time.perf_counter()
                subprocess.run(command(binary, i), env=env, check=True, stdout=subprocess.DEVNULL)
                samples.setdefault((name, binary), []).append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        subprocess.run(["sqlite3", plain, "UPDATE t SET v = v + 1 WHERE k = 1"], check=True)
        samples.setdefault(("sqlite3 UPDATE", "sqlite3"), []).append((time.perf_counter() - started) * 1000)
    n = args.rounds
    print(f"{'command':16} {'binary':40} {'median':>8} {'p10':>8} {'p90':>8}  (ms, {n} rounds)")
    for (name, binary), values in samples.items():
        values.sort()
        print(f"{name:16} {binary[-40:]:40} {statistics.median(values):8.2f} {values[n // 10]:8.2f} {values[9 * n // 10]:8.2f}")
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
