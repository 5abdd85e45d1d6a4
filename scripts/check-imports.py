#!/usr/bin/env python3
"""Checks that every module imports only what Docs/ARCHITECTURE.md allows it ("The modules, and
what each may import"): dependencies point one way, toward the pure core, and the front ends (the
CLI, the local API) reach the replica, the node and the cluster through the host alone.

    scripts/check-imports.py          # exit 1, one line per forbidden import, if any

Every `import` of every Swift file under Sources/ is read (`@_exported`, access levels and scoped
imports such as `import struct M.T` included). A module not in the table below fails too: a new
module says what it may import before it lands.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
NIO = {"NIOCore", "NIOPosix", "NIOConcurrencyHelpers", "NIOSSL", "NIOTLS"}
SYSTEM = {"Foundation", "Glibc", "Musl", "Synchronization", "Dispatch"}

# What each module may import, beyond the system's own (SYSTEM). Ours first, then packages.
ALLOWED = {
    "LansyncCore": set(),
    "LansyncJSON": {"LansyncCore"},
    "LansyncWire": {"LansyncCore"},
    # The seam between the replica's logic and its backends (issue 65): no database in it.
    # Crypto for SHA-256 alone: the digests of signed writes (issue 64, SignedRun.swift).
    "LansyncReplica": {"LansyncCore", "LansyncJSON", "Crypto"},
    # The backends: each imports the seam, never the other (SQLite here, PostgreSQL below).
    "LansyncStore": {"LansyncCore", "LansyncJSON", "LansyncReplica", "GRDB", "GRDBSQLite"},
    "LansyncIdentity": {"LansyncCore", "Crypto", "X509", "SwiftASN1"},
    "LansyncTransport": {"LansyncCore", "LansyncWire", "LansyncIdentity", "X509", "SwiftASN1"} | NIO,
    "CAvahi": set(),
    "LansyncDiscovery": {"LansyncCore", "CAvahi"},
    # The relays' shared authority, and a replica kept in PostgreSQL: the seam (the store protocol
    # and its types), the PostgreSQL client.
    "LansyncPostgres": {"LansyncCore", "LansyncJSON", "LansyncReplica", "PostgresNIO", "Logging", "Synchronization"} | NIO,
    # The sync engine works on the seam's protocol: it never knows which backend keeps the replica.
    "LansyncNode": {
        "LansyncCore", "LansyncJSON", "LansyncWire", "LansyncReplica", "LansyncTransport", "LansyncIdentity",
        "LansyncDiscovery", "AsyncAlgorithms", "Crypto", "Logging", "CoreMetrics",
    } | NIO,
    "LansyncHost": {
        "LansyncCore", "LansyncJSON", "LansyncWire", "LansyncReplica", "LansyncStore", "LansyncTransport",
        "LansyncIdentity",
        "LansyncDiscovery", "LansyncNode", "LansyncPostgres", "Crypto", "Logging", "ServiceLifecycle", "UnixSignals",
    } | NIO,
    # The local API: the host, and its HTTP server.
    "LansyncAPI": {"LansyncHost", "LansyncJSON", "Hummingbird", "HTTPTypes", "Logging", "Metrics", "Prometheus", "NIOCore"},
    # The CLI: the host (and the API it starts beside the node), and its argument parser.
    "lansync": {"LansyncHost", "LansyncAPI", "ArgumentParser"},
}

# Imports a module still has that its rule forbids, each with the issue that removes it. Listed
# here so the check passes meanwhile, printed on every run so they are not forgotten; an entry
# that is no longer needed fails the check (take it out).
PENDING: dict[tuple[str, str], str] = {}

IMPORT = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+"
    r"(?:(?:struct|class|enum|protocol|typealias|func|let|var)\s+)?([A-Za-z_][A-Za-z0-9_]*)"
)


def imports(folder):
    """(module imported, file, line number) of every import under `folder`."""
    for dirpath, _, files in os.walk(folder):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(dirpath, name)
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    m = IMPORT.match(line)
                    if m:
                        yield m.group(1), os.path.relpath(path, ROOT), number


def main():
    sources = os.path.join(ROOT, "Sources")
    problems, used_pending = [], set()
    for module in sorted(os.listdir(sources)):
        folder = os.path.join(sources, module)
        if not os.path.isdir(folder):
            continue
        if module not in ALLOWED:
            problems.append(f"Sources/{module}: a module scripts/check-imports.py has no rule for: add one")
            continue
        for imported, path, number in imports(folder):
            if imported in SYSTEM or imported == module or imported in ALLOWED[module]:
                continue
            if (module, imported) in PENDING:
                used_pending.add((module, imported))
                continue
            allowed = ", ".join(sorted(ALLOWED[module])) or "nothing but the standard library"
            problems.append(
                f"{path}:{number}: {module} may not import {imported} (Docs/ARCHITECTURE.md; it may import {allowed})"
            )
    for (module, imported), why in sorted(PENDING.items()):
        if (module, imported) in used_pending:
            print(f"check-imports: note: {module} still imports {imported} ({why})")
        else:
            problems.append(f"scripts/check-imports.py: {module} no longer imports {imported}: take it out of PENDING")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(f"check-imports: every module imports only what it may ({len(ALLOWED)} rules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
