#!/usr/bin/env python3
"""The web page on a replica of 100,000 items: every request the page makes while a user browses
and searches, timed in the browser (issue 32: "a 100,000-item replica browsed and searched with no
request over 100 ms").

    Benchmarks/page-100k.py --lansync BIN [--work DIR]

The first run makes DIR/replica (default /tmp/lansync-page-100k): lansync-bench's W1 dataset
(100,000 items of type bench, ten 40-character fields f0..f9), `lansync index f3`, and a node run
until it has written every item's search text (what a node does by itself once the replica is
quiet). Every run starts a node on a copy of it, opens its page in Debian's Chromium (headless,
Playwright) with the link `lansync ui` prints, and does what a user does: the items view, scrolling
three pages further, the type filter, sorting by an indexed field both ways, searching (a rare
word, a common one, two words, an id, a short word, a word that finds nothing), clearing the
search, opening an item and going back, an edit made with the CLI arriving, the cluster view
(the node's status, with the replica's digest) and back. Each request is timed by the browser from its start to the end of its
response (Playwright's Request.timing), and the script prints one line per step (requests, the
slowest) and the slowest request of all. The change feed (a stream that stays open) is left out.

Timings are printed, never judged: this is a benchmark. The exit status is non-zero only when a
step could not be done (the page did not show what the step asks for).
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

from playwright.sync_api import expect, sync_playwright

HERE = os.path.dirname(os.path.abspath(__file__))
WAIT = 30_000  # ms: the longest the page is given to show a step's result


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(binary, *args, timeout=600):
    result = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        sys.exit(f"page-100k: 'lansync {' '.join(args)}' failed: {result.stderr.strip()}")
    return result.stdout.strip()


def search_seq(directory):
    """The feed number up to which the replica's search texts are written (meta search_seq)."""
    files = [f for f in os.listdir(directory) if f.endswith(".sqlite")]
    if not files:
        return 0
    out = subprocess.run(["sqlite3", "-readonly", os.path.join(directory, files[0]),
                          "SELECT value FROM meta WHERE key = 'search_seq'"],
                         capture_output=True, text=True, timeout=30).stdout.strip()
    return int(out or 0)


class Node:
    def __init__(self, binary, directory, log):
        self.binary, self.dir, self.log = binary, directory, log
        self.api = free_port()
        listen = free_port()
        with open(log, "w") as out:
            self.proc = subprocess.Popen(
                [binary, "--dir", directory, "node", "--listen", f"127.0.0.1:{listen}", "--no-mdns",
                 "--api", f"127.0.0.1:{self.api}"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"page-100k: the node exited at start; its log: {log}")
            with open(log) as f:
                if "local API on" in f.read():
                    return
            time.sleep(0.1)
        self.stop()
        sys.exit(f"page-100k: the node did not start its API within 60 s; its log: {log}")

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def prepare(binary, work):
    replica = os.path.join(work, "replica")
    if os.path.isdir(replica):
        return replica
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "data.jsonl")
    subprocess.run([sys.executable, os.path.join(HERE, "w1-dataset.py"), data], check=True)
    pem = os.path.join(work, "cluster.pem")
    if os.path.exists(pem):
        os.remove(pem)
    building = os.path.join(work, "building")
    shutil.rmtree(building, ignore_errors=True)
    run(binary, "cluster", "create", pem)
    run(binary, "--dir", building, "init", "--cluster", pem, "--name", "pages")
    started = time.monotonic()
    run(binary, "--dir", building, "import", data)
    print(f"imported 100,000 items in {time.monotonic() - started:.1f} s", flush=True)
    run(binary, "--dir", building, "index", "f3")
    # The node writes the search texts once the replica is quiet; wait until they stop moving.
    node = Node(binary, building, os.path.join(work, "prepare.log"))
    try:
        last, still = -1, 0
        while still < 3:
            time.sleep(1)
            seq = search_seq(building)
            still = still + 1 if seq == last and seq > 0 else 0
            last = seq
    finally:
        node.stop()
    print(f"search texts written up to feed number {last}", flush=True)
    os.rename(building, replica)
    return replica


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lansync", required=True, help="the lansync binary (a release build)")
    parser.add_argument("--work", default="/tmp/lansync-page-100k", help="where the replica is kept")
    args = parser.parse_args()
    binary = os.path.abspath(args.lansync)
    chromium = os.environ.get("LANSYNC_CHROMIUM", "/usr/bin/chromium")
    replica = prepare(binary, args.work)

    copy = os.path.join(args.work, "run")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(replica, copy)
    for leftover in ("control.sock",):
        if os.path.exists(os.path.join(copy, leftover)):
            os.remove(os.path.join(copy, leftover))
    node = Node(binary, copy, os.path.join(args.work, "node.log"))
    timings = []  # (step, url, ms)
    step = ["start"]
    steps = []
    try:
        # A node just started reads every item once for its digest (seconds at this size, on
        # the upkeep thread): measure the page against a node that has settled, as a user meets it.
        time.sleep(2)
        run(binary, "--dir", copy, "status")
        link = run(binary, "--dir", copy, "ui")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
            page = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
            page.set_default_timeout(WAIT)

            in_flight = set()

            def counted(request):
                return "/v1/" in request.url and "/v1/changes" not in request.url

            def started(request):
                if counted(request):
                    in_flight.add(request)

            def finished(request):
                if not counted(request):
                    return
                in_flight.discard(request)
                ms = request.timing.get("responseEnd", -1)
                if ms >= 0:
                    timings.append((step[0], request.url.split("/", 3)[3], ms))

            def settled():
                # The change feed stays open, so "network idle" never comes: wait until no
                # other request of the page's has been in flight for half a second.
                quiet_since = time.monotonic()
                while time.monotonic() - quiet_since < 0.5:
                    page.wait_for_timeout(50)
                    if in_flight:
                        quiet_since = time.monotonic()
            page.on("request", started)
            page.on("requestfinished", finished)
            page.on("requestfailed", lambda r: in_flight.discard(r))

            rows = page.locator("table.items tbody tr")

            def do(name, action):
                step[0] = name
                steps.append(name)
                began = time.monotonic()
                action()
                shown = time.monotonic() - began
                settled()
                print(f"  {name}: shown in {shown * 1000:.0f} ms", flush=True)

            def open_items():
                page.goto(link)
                expect(page.get_by_role("heading", name="Items", exact=True)).to_be_visible()
                expect(rows).to_have_count(100)

            def more():
                before = rows.count()
                page.get_by_role("button", name="Show more").click()
                expect(rows).to_have_count(before + 100)

            def type_filter():
                page.locator("#type-filter").select_option("bench")
                expect(page.locator("#items-count")).to_contain_text("100,000")

            def sort_f3(direction):
                def action():
                    page.get_by_role("button", name=re.compile(f"^f3: sort {direction}")).click()
                    expect(page.locator("th[aria-sort]")).to_have_attribute("aria-sort", direction)
                    expect(rows).to_have_count(100)
                return action

            def search(text, count=None):
                def action():
                    page.get_by_label("Search").fill(text)
                    if count is not None:
                        expect(rows).to_have_count(count)
                    else:
                        expect(rows).to_have_count(100)
                return action

            def open_item():
                rows.first.locator("a").first.click()
                expect(page.get_by_role("heading", name=re.compile("item-"), level=1)).to_be_visible()

            def back():
                page.go_back()
                expect(page.get_by_role("heading", name="Items", exact=True)).to_be_visible()
                expect(rows).to_have_count(100)

            def edit_elsewhere():
                # An edit made with the CLI: the feed brings it to the page, and the digest
                # `status` shows is brought up to date (the cluster view asks for it next).
                run(binary, "--dir", copy, "set", "item-0000000", "f0=edited on the command line")
                expect(page.get_by_text("edited on the command line")).to_be_visible()

            def cluster_view():
                page.get_by_role("link", name="Cluster").click()
                expect(page.get_by_text(re.compile("digest", re.I)).first).to_be_visible()

            def items_again():
                page.get_by_role("link", name="Items", exact=True).click()
                expect(rows).to_have_count(100)

            do("open the items view", open_items)
            for k in range(3):
                do(f"show more ({k + 2}00 rows)", more)
            do("filter by type", type_filter)
            do("sort by f3 (indexed), ascending", sort_f3("ascending"))
            do("sort by f3, descending", sort_f3("descending"))
            do("search a rare word: 0099999", search("0099999", 1))
            do("search a common word: value", search("value"))
            do("search two words: 'value 3 0004'", search("value 3 0004"))
            do("search an id: item-0050000", search("item-0050000", 1))
            do("search a short word: of", search("of"))
            do("search a word nothing holds: zebra", search("zebra", 0))
            do("clear the search", search(""))
            do("open an item", open_item)
            do("back to the items", back)
            do("sort by item again", lambda: (
                page.get_by_role("button", name=re.compile("^Item: sort")).click(), expect(rows).to_have_count(100)))
            do("an edit made with the CLI shows", edit_elsewhere)
            do("the cluster view (status, its digest)", cluster_view)
            do("the items view again", items_again)
            browser.close()
    finally:
        node.stop()

    print()
    print(f"{'step':<42} {'requests':>8} {'slowest ms':>11}  slowest request")
    for name in steps:
        mine = [t for t in timings if t[0] == name]
        if not mine:
            print(f"{name:<42} {0:>8}")
            continue
        worst = max(mine, key=lambda t: t[2])
        print(f"{name:<42} {len(mine):>8} {worst[2]:>11.1f}  {worst[1][:70]}")
    worst = max(timings, key=lambda t: t[2])
    over = [t for t in timings if t[2] > 100]
    for t in sorted(timings, key=lambda t: -t[2]):
        if t[2] > 100:
            print(f"over 100 ms: {t[2]:.1f} ms  {t[0]}: {t[1][:90]}")
    print(f"\n{len(timings)} requests; the slowest {worst[2]:.1f} ms ({worst[0]}: {worst[1][:80]}); "
          f"{len(over)} over 100 ms")


if __name__ == "__main__":
    main()
