"""What the loopback benchmarks share (w9-loopback.py, relay-reach.py): ports, the CLI, and when a
replica committed an item, read through one kept read-only connection per replica file."""
import json
import os
import socket
import sqlite3
import subprocess


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


# One read-only connection per replica, kept open: opening a file costs far more than a query,
# and with 200 replicas a poller that reopens them takes a core from the nodes it measures.
CONNECTIONS = {}


def connection(path):
    db = CONNECTIONS.get(path)
    if db is None:
        db = CONNECTIONS[path] = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
    return db


def close_connections():
    for db in CONNECTIONS.values():
        db.close()
    CONNECTIONS.clear()


def committed_at(path, item):
    """When this replica committed `item`'s field (ms since 1970), or None if it has not."""
    try:
        row = connection(path).execute(
            "SELECT max(f.changed_at) FROM item i JOIN field f ON f.item = i.id WHERE i.item_id = ?", (item,)
        ).fetchone()
        return row[0] if row else None
    except sqlite3.Error:
        return None


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]


def replica(d):
    return os.path.join(d, "replica.sqlite")
