#!/usr/bin/env python3
"""Browser tests of lansync's web page (Docs/UI.md), in a real Chromium driven by Playwright.

    python3 Tests/ui/page_test.py --lansync BIN --screenshots DIR

Sets up a cluster of two nodes on 127.0.0.1 (free ports, a temporary directory; a third, shed,
joins for the drawn cluster view), opens each node's page, and checks, printing one line per check: logging in with the link 'lansync ui'
prints (and that the link works once), logging in with the token, an item added on one node's
page showing up on the other's without a reload, editing a list field as chips, a conflict
made with the CLI on both nodes and settled on the page, a CLI edit on one node showing up on
the other's page, a peer going down and coming back on the cluster view, the cluster drawn (three members, one
falling behind while down and catching up, live), a field's time line (a conflict forked, then
settled), kitchen's view of the
cluster (started with a bounded view, as past eight machines: --full-mesh-up-to 1) with why garage
is in it, garage made a reader (its page offers no edit and says why, its API refuses one) and a
writer again, and no JavaScript error in any page during the whole run. Screenshots of every view go to DIR.

Exit status 0 only if every check passed. The nodes and the temporary directory are removed
whatever happens; every wait has a timeout, and the whole run is bounded (RUN_LIMIT).

Chromium is /usr/bin/chromium (Debian's package), or $LANSYNC_CHROMIUM; it runs headless with
--no-sandbox (CI runs as root).
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from playwright.sync_api import expect, sync_playwright

RUN_LIMIT = 600          # seconds: the whole run (90 s idle, 205 s beside the other suites), whatever hangs
WAIT = 10_000            # ms: the longest a page is given to show something
SYNC_WAIT = 15.0         # s: the longest the CLI is given to see a change arrive
# ms: the longest a step over 25,000 items is given. Beside the other suites on 2 cores every
# process runs several times slower than alone: the debug build's import of those items takes
# 9.7 s alone and 89-94 s there (CI on bf8074b failed this check after 226 s, past the import's
# old 120 s). A bound on a hang, not a measure of speed (Benchmarks/ has those).
LOADED_WAIT = 120_000


class CheckFailed(Exception):
    pass


class RunTimeout(Exception):
    pass


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """Two nodes, kitchen (A) and garage (B), peers of each other over loopback."""

    def __init__(self, binary, root):
        self.binary = binary
        self.root = root
        self.nodes = {}

    def cli(self, node, *args, check=True, timeout=30):
        cmd = [self.binary, "--dir", self.nodes[node]["dir"], *args]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise CheckFailed(f"'lansync {' '.join(args)}' on {node} failed ({result.returncode}): {result.stderr.strip()}")
        return result.stdout.strip()

    def cli_json(self, node, *args):
        return json.loads(self.cli(node, *args, "--json"))

    def setup(self):
        pem = os.path.join(self.root, "cluster.pem")
        subprocess.run([self.binary, "cluster", "create", pem], check=True, capture_output=True, timeout=30)
        ports = {}
        for name in ("kitchen", "garage"):
            listen, api = free_port(), free_port()
            while api == listen:
                api = free_port()
            ports[name] = (listen, api)
        for name, other in (("kitchen", "garage"), ("garage", "kitchen")):
            self.nodes[name] = {
                "dir": os.path.join(self.root, name),
                "listen": ports[name][0],
                "api": ports[name][1],
                "peer": ports[other][0],
                "log": os.path.join(self.root, f"{name}.log"),
                "proc": None,
                # Kitchen keeps a bounded view, as a node of more than eight machines does: the
                # cluster view shows it.
                "extra": ["--full-mesh-up-to", "1"] if name == "kitchen" else [],
            }
        subprocess.run([self.binary, "--dir", self.nodes["kitchen"]["dir"], "init", "--cluster", pem, "--name", "kitchen"],
                       check=True, capture_output=True, timeout=30)
        self.start("kitchen")
        code = self.cli("kitchen", "invite", "--name", "garage")
        subprocess.run([self.binary, "--dir", self.nodes["garage"]["dir"], "join", code, "--name", "garage"],
                       check=True, capture_output=True, timeout=60)
        self.start("garage")

    def join(self, name, via="kitchen"):
        """A third machine: invited by `via`, joined, and started with `via` as its one peer."""
        listen, api = free_port(), free_port()
        while api == listen:
            api = free_port()
        self.nodes[name] = {
            "dir": os.path.join(self.root, name), "listen": listen, "api": api,
            "peer": self.nodes[via]["listen"], "log": os.path.join(self.root, f"{name}.log"),
            "proc": None, "extra": [],
        }
        code = self.cli(via, "invite", "--name", name)
        subprocess.run([self.binary, "--dir", self.nodes[name]["dir"], "join", code, "--name", name],
                       check=True, capture_output=True, timeout=60)
        self.start(name)

    def url(self, node):
        return f"http://127.0.0.1:{self.nodes[node]['api']}/"

    def start(self, node):
        n = self.nodes[node]
        log = open(n["log"], "a")
        n["proc"] = subprocess.Popen(
            [self.binary, "--dir", n["dir"], "node", "--listen", f"127.0.0.1:{n['listen']}", "--no-mdns",
             "--peer", f"127.0.0.1:{n['peer']}", "--api", f"127.0.0.1:{n['api']}", *n["extra"]],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if n["proc"].poll() is not None:
                raise CheckFailed(f"node {node} exited at start ({n['proc'].returncode})")
            try:
                with urllib.request.urlopen(self.url(node), timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise CheckFailed(f"node {node} did not serve its page at {self.url(node)} within 20 s")

    def stop(self, node, sig=signal.SIGTERM):
        proc = self.nodes[node]["proc"]
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        self.nodes[node]["proc"] = None

    def stop_all(self):
        for node in list(self.nodes):
            try:
                self.stop(node)
            except Exception as e:  # keep cleaning up
                print(f"  (stopping {node}: {e})")

    def log_tails(self, lines=25):
        out = []
        for node, n in self.nodes.items():
            try:
                with open(n["log"]) as f:
                    tail = f.readlines()[-lines:]
            except OSError:
                tail = ["(no log)\n"]
            out.append(f"--- {node}'s log, last {len(tail)} lines ---\n" + "".join(tail))
        return "\n".join(out)

    def wait_cli(self, what, probe, timeout=SYNC_WAIT):
        """Polls `probe` (which returns (ok, seen)) until ok, or fails saying what was seen last."""
        deadline = time.monotonic() + timeout
        seen = None
        while True:
            ok, seen = probe()
            if ok:
                return seen
            if time.monotonic() > deadline:
                raise CheckFailed(f"expected {what} within {timeout:.0f} s; last seen: {seen}")
            time.sleep(0.15)


class Console:
    """Every console error and uncaught exception of every page, with the few that a check provokes on purpose."""

    def __init__(self):
        self.errors = []

    def watch(self, page, label, allowed=()):
        def on_console(msg):
            if msg.type != "error":
                return
            if any(re.search(p, msg.text) for p in allowed):
                return
            self.errors.append(f"{label}: console error: {msg.text}")

        def on_error(err):
            self.errors.append(f"{label}: page error: {err}")

        page.on("console", on_console)
        page.on("pageerror", on_error)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lansync", required=True, help="the lansync binary")
    parser.add_argument("--screenshots", required=True, help="a directory for the screenshots")
    args = parser.parse_args()
    binary = os.path.abspath(args.lansync)
    shots = os.path.abspath(args.screenshots)
    os.makedirs(shots, exist_ok=True)
    chromium = os.environ.get("LANSYNC_CHROMIUM", "/usr/bin/chromium")

    def on_alarm(signum, frame):
        raise RunTimeout(f"the run took over {RUN_LIMIT} s")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(RUN_LIMIT)

    root = tempfile.mkdtemp(prefix="lansync-ui-")
    cluster = Cluster(binary, root)
    console = Console()
    passed = []
    started = time.monotonic()
    current = ["setting up"]
    # Where the current check is: printed with a failure, so a timeout says which part took it.
    marks = []

    def check(name):
        current[0] = name
        marks.clear()

        def done():
            passed.append(name)
            print(f"ok    {name}  ({time.monotonic() - started:.1f} s)", flush=True)
            if marks:
                print("      its steps: " + "; ".join(marks), flush=True)
        return done

    def mark(what):
        marks.append(f"{what} ({time.monotonic() - started:.1f} s)")

    browser = None
    failure = None
    try:
        current[0] = "setting up two nodes"
        cluster.setup()
        ids = {}
        ids["bike"] = cluster.cli("kitchen", "add", "--type", "task", "title=Fix the bike", 'tags=["garage"]', "priority=2")
        ids["paint"] = cluster.cli("garage", "add", "--type", "task", "title=Buy paint", 'tags=["shop", "weekend"]', "priority=1")
        ids["groceries"] = cluster.cli("kitchen", "add", "--type", "note", "title=Groceries", 'items=["milk", "eggs", "bread"]')

        with sync_playwright() as pw:
            current[0] = f"launching {chromium}"
            browser = pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
            try:

                def new_page(label, allowed=(), **context_args):
                    context_args.setdefault("viewport", {"width": 1280, "height": 860})
                    context = browser.new_context(**context_args)
                    page = context.new_page()
                    page.set_default_timeout(WAIT)
                    console.watch(page, label, allowed)
                    return page

                def screenshot(page, name, full=True):
                    # A still picture for the docs: from the top, no focus ring, no passing message.
                    page.evaluate("""() => {
                        window.scrollTo(0, 0);
                        if (document.activeElement) document.activeElement.blur();
                        document.querySelectorAll('.toast').forEach((t) => t.remove());
                    }""")
                    page.screenshot(path=os.path.join(shots, f"{name}.png"), full_page=full, animations="disabled")

                def items_row(page, text):
                    return page.locator("table.items tbody tr", has_text=text)

                # -- logging in --------------------------------------------------------------
                done = check("log in with the link 'lansync ui' prints")
                link = cluster.cli("kitchen", "ui")
                if not re.match(r"^http://127\.0\.0\.1:\d+/#login=\S+$", link):
                    raise CheckFailed(f"expected 'lansync ui' to print http://127.0.0.1:PORT/#login=CODE, got {link!r}")
                a = new_page("kitchen's page")
                a.goto(link)
                expect(a.get_by_role("heading", name="Items", exact=True)).to_be_visible()
                expect(items_row(a, "Fix the bike")).to_be_visible()
                if "login=" in a.url:
                    raise CheckFailed(f"expected the login code to be gone from the address, got {a.url}")
                token = a.evaluate("localStorage.getItem('lansync.token')")
                if not re.match(r"^[0-9a-f]{64}$", token or "") or token == cluster.cli("kitchen", "api-token"):
                    raise CheckFailed("expected the page to hold a session of its own after the link, not the node's token")
                sessions = cluster.cli_json("kitchen", "status")["ui_sessions"]
                if len(sessions) != 1:
                    raise CheckFailed(f"expected 'status --json' to list one page session, got {sessions}")
                done()

                done = check("the same link a second time: refused with a clear message")
                spent = new_page("a spent link", allowed=[r"status of 401"])
                spent.goto(link)
                expect(spent.get_by_role("heading", name="Log in to this node")).to_be_visible()
                expect(spent.get_by_text(re.compile("used already, has expired"))).to_be_visible()
                done()

                done = check("a wrong token: refused with a clear message")
                spent.get_by_label("API token").fill("not-the-token")
                spent.get_by_role("button", name="Log in").click()
                expect(spent.get_by_text(re.compile("does not accept that token"))).to_be_visible()
                screenshot(spent, "login", full=False)
                spent.context.close()
                done()

                done = check("log in with the token")
                b = new_page("garage's page")
                b.goto(cluster.url("garage"))
                b.get_by_label("API token").fill(cluster.cli("garage", "api-token"))
                b.get_by_role("button", name="Log in").click()
                expect(b.get_by_role("heading", name="Items", exact=True)).to_be_visible()
                expect(items_row(b, "Buy paint")).to_be_visible()
                expect(b.locator("#live")).to_have_text("Live")
                done()

                # -- adding, searching, choosing columns -----------------------------------
                done = check("a malformed value is refused with a clear error, nothing is made")
                expect(a.locator("#live")).to_have_text("Live")
                a.get_by_role("button", name="New item").click()
                a.locator("#new-type").fill("task")
                a.get_by_label("Value 1").fill("Climb")
                a.get_by_label("Field name 2").fill("tags")
                a.get_by_label("Value 2").fill('["outdoor", ')
                a.get_by_role("button", name="Create").click()
                expect(a.locator("#new-item-error")).to_contain_text("is not valid JSON")
                if len(cluster.cli_json("kitchen", "list")) != 3:
                    raise CheckFailed("expected no item to be made from a malformed value")
                done()

                done = check("add an item on kitchen's page, see it on garage's page without a reload")
                a.get_by_label("Value 2").fill('["outdoor"]')
                a.get_by_role("button", name="Create").click()
                expect(items_row(a, "Climb")).to_be_visible()
                expect(items_row(b, "Climb")).to_be_visible()
                made = [i for i in cluster.cli_json("kitchen", "list") if i["fields"].get("title") == "Climb"]
                if len(made) != 1 or made[0]["fields"].get("tags") != ["outdoor"] or made[0]["type"] != "task":
                    raise CheckFailed(f"expected one task Climb with tags [\"outdoor\"], got {made}")
                ids["climb"] = made[0]["id"]
                done()

                done = check("search, type filter and column choice")
                a.get_by_label("Search").fill("climb")
                expect(a.locator("table.items tbody tr")).to_have_count(1)
                a.get_by_label("Search").fill("")
                a.locator("#type-filter").select_option("note")
                expect(a.locator("table.items tbody tr")).to_have_count(1)
                expect(items_row(a, "Groceries")).to_be_visible()
                a.locator("#type-filter").select_option("")
                expect(a.locator("table.items tbody tr")).to_have_count(4)
                a.get_by_text("Columns", exact=True).click()
                priority_box = a.get_by_role("checkbox", name="priority")
                expect(priority_box).to_be_visible()
                if priority_box.is_checked():
                    priority_box.uncheck()
                expect(a.locator("thead th", has_text="priority")).to_have_count(0)
                priority_box.check()
                expect(a.locator("thead th", has_text="priority")).to_have_count(1)
                tags_box = a.get_by_role("checkbox", name="tags")
                if not tags_box.is_checked():
                    tags_box.check()
                a.keyboard.press("Escape")
                a.get_by_role("button", name=re.compile("^title: sort")).click()
                expect(a.locator("table.items tbody tr").first).to_contain_text("Buy paint")
                done()

                # -- editing a list, and a scalar -------------------------------------------
                done = check("edit a list field as chips (add one, remove one); the other node has it")
                row = a.locator(f'tr[data-id="{ids["climb"]}"]')
                row.locator('td[data-field="tags"] button.show').click()
                add_box = a.get_by_label("Add to tags")
                add_box.fill("indoor")
                add_box.press("Enter")
                expect(row.get_by_role("button", name="Remove indoor from tags")).to_be_visible()
                row.get_by_role("button", name="Remove outdoor from tags").click()
                expect(row.get_by_role("button", name="Remove outdoor from tags")).to_have_count(0)
                a.get_by_label("Add to tags").press("Escape")
                expect(row.locator('td[data-field="tags"] .chip')).to_have_text(["indoor"])
                cluster.wait_cli("garage's 'get --json' to show tags [\"indoor\"]", lambda: (
                    (lambda item: (item["fields"].get("tags") == ["indoor"], item["fields"].get("tags")))(
                        cluster.cli_json("garage", "get", ids["climb"]))))
                expect(items_row(b, "Climb").locator('td[data-field="tags"] .chip')).to_have_text(["indoor"])
                done()

                done = check("edit a text field inline; the other node's page shows it")
                row.locator('td[data-field="title"] button.show').click()
                box = a.get_by_label("New value of title")
                box.fill("Climb the north face")
                box.press("Enter")
                expect(row.locator('td[data-field="title"]')).to_have_text("Climb the north face")
                expect(items_row(b, "Climb the north face")).to_be_visible()
                done()

                done = check("a CLI edit on garage shows up on kitchen's page")
                cluster.cli("garage", "set", ids["bike"], "title=Fix the bike (front brake)", "tags+=urgent")
                expect(items_row(a, "Fix the bike (front brake)")).to_be_visible()
                expect(items_row(a, "Fix the bike (front brake)").locator('td[data-field="tags"] .chip')).to_have_text(["garage", "urgent"])
                done()

                done = check("delete and restore on the page; the other node follows")
                target = items_row(a, "Buy paint")
                target.get_by_role("button", name="Delete Buy paint").click()
                expect(items_row(a, "Buy paint")).to_have_count(0)
                expect(items_row(b, "Buy paint")).to_have_count(0)
                cluster.wait_cli("garage to see Buy paint deleted", lambda: (
                    (lambda item: (item["deleted"] is True, item["deleted"]))(cluster.cli_json("garage", "get", ids["paint"]))))
                a.get_by_label("Show deleted").check()
                a.get_by_role("button", name="Restore Buy paint").click()
                a.get_by_label("Show deleted").uncheck()
                expect(items_row(a, "Buy paint")).to_be_visible()
                expect(items_row(b, "Buy paint")).to_be_visible()
                done()

                done = check("a bulk edit: set a field on the items shown (the tasks), in one request; garage has it")
                a.locator("#type-filter").select_option("task")
                a.get_by_role("button", name="Change shown…").click()
                expect(a.locator("#bulk-summary")).to_contain_text("3 items shown")
                a.locator("#bulk-name").fill("reviewed")
                a.locator("#bulk-value").fill("true")
                a.get_by_role("button", name="Set on all").click()
                a.get_by_role("button", name="Set reviewed on 3 items").click()
                expect(a.get_by_text("Changed 3 items.")).to_be_visible()
                for node in ("kitchen", "garage"):
                    cluster.wait_cli(f"{node} to show reviewed on the three tasks, and not on the note", lambda node=node: (
                        (lambda items: (
                            sorted(i["type"] for i in items if i["fields"].get("reviewed") is True) == ["task", "task", "task"],
                            [(i["type"], i["fields"].get("reviewed")) for i in items]))(cluster.cli_json(node, "list"))))
                a.get_by_role("button", name="Change shown…").click()
                a.locator("#type-filter").select_option("")
                done()

                done = check("the items view at 390 x 844")
                phone = new_page("kitchen's page on a phone", viewport={"width": 390, "height": 844}, is_mobile=True)
                phone.goto(link.split("#")[0])
                phone.evaluate("token => localStorage.setItem('lansync.token', token)", token)
                phone.reload()
                expect(items_row(phone, "Climb the north face")).to_be_visible()
                width = phone.evaluate("document.documentElement.scrollWidth")
                if width > 390:
                    raise CheckFailed(f"expected the page to fit 390 px, it is {width} px wide")
                screenshot(phone, "items-phone", full=False)
                phone.context.close()
                done()

                a.get_by_label("Search").fill("")
                screenshot(a, "items")

                # -- a conflict --------------------------------------------------------------
                done = check("a conflict made with the CLI on both nodes shows on the page")
                b.context.close()   # garage's node goes down next: its page would only see it fail
                cluster.stop("garage")
                cluster.cli("kitchen", "set", ids["groceries"], "title=Groceries for Saturday")
                cluster.cli("garage", "set", ids["groceries"], "title=Groceries for Sunday")
                a.get_by_role("link", name=re.compile("^Conflicts")).click()
                expect(a.get_by_role("heading", name="Conflicts", exact=True)).to_be_visible()
                expect(a.get_by_text("No open conflicts")).to_be_visible()
                cluster.start("garage")
                card = a.locator(f'article[data-conflict="{ids["groceries"]}/title"]')
                expect(card).to_be_visible(timeout=SYNC_WAIT * 1000)
                expect(card.locator(".version")).to_have_count(2)
                expect(card).to_contain_text("Groceries for Saturday")
                expect(card).to_contain_text("Groceries for Sunday")
                expect(card).to_contain_text("kitchen")
                expect(card).to_contain_text("garage")
                expect(a.locator("#conflict-count")).to_have_text("1")
                screenshot(a, "conflicts")
                done()

                done = check("settle it on the page; closed on both nodes")
                card.get_by_role("button", name=re.compile("^Keep Groceries for Sunday")).click()
                expect(a.get_by_text("No open conflicts")).to_be_visible()
                expect(a.locator("#conflict-count")).to_be_hidden()
                for node in ("kitchen", "garage"):
                    cluster.wait_cli(f"'conflicts --json' on {node} to be empty",
                                     lambda node=node: (lambda c: (c == [], c))(cluster.cli_json(node, "conflicts")))
                    cluster.wait_cli(f"{node} to show the kept title", lambda node=node: (
                        (lambda t: (t == "Groceries for Sunday", t))(cluster.cli_json(node, "get", ids["groceries"])["fields"].get("title"))))
                done()

                done = check("an item's page: its fields, its history, bring a value back")
                a.goto(f"{cluster.url('kitchen')}#/item/{ids['groceries']}")
                expect(a.get_by_role("heading", name="Groceries for Sunday", level=1)).to_be_visible()
                history = a.locator('section[data-scope="hist:title"]')
                for value in ("Groceries", "Groceries for Saturday", "Groceries for Sunday"):
                    expect(history.locator("li", has_text=value).first).to_be_visible()
                bring_back = history.get_by_role("button", name="Bring back title = Groceries", exact=True)
                entries = history.locator("li").count()
                bring_back.click()
                expect(a.get_by_role("heading", name="Groceries", exact=True, level=1)).to_be_visible()
                expect(history.locator("li")).to_have_count(entries + 1)
                cluster.wait_cli("garage to show the title brought back", lambda: (
                    (lambda t: (t == "Groceries", t))(cluster.cli_json("garage", "get", ids["groceries"])["fields"].get("title"))))
                screenshot(a, "item")
                done()

                done = check("change an item's type on its page; the other node has it")
                a.get_by_role("button", name="Change the type (note)").click()
                box = a.get_by_label("New type")
                expect(box).to_have_value("note")
                box.fill("")
                a.get_by_role("button", name="Save", exact=True).click()
                expect(a.locator("li.retype [role=alert]")).to_have_text("Give the new type.")
                box.fill("shopping list")
                box.press("Enter")
                expect(a.locator("ul.meta li").first).to_have_text(re.compile("^type shopping list"))
                for node in ("kitchen", "garage"):
                    cluster.wait_cli(f"{node} to show the new type", lambda node=node: (
                        (lambda t: (t == "shopping list", t))(cluster.cli_json(node, "get", ids["groceries"])["type"])))
                type_history = a.locator('section[data-scope="hist:_type"]')
                expect(type_history.locator("h3")).to_have_text("type")
                type_history.get_by_role("button", name="Bring back type = note").click()
                expect(a.locator("ul.meta li").first).to_have_text(re.compile("^type note"))
                cluster.wait_cli("garage to show the type brought back", lambda: (
                    (lambda t: (t == "note", t))(cluster.cli_json("garage", "get", ids["groceries"])["type"])))
                done()

                done = check("remove a field on the page; the other node has it removed; Undo sets it back")
                a.get_by_role("button", name="Remove items", exact=True).click()
                expect(a.locator('tr[data-field="items"]')).to_have_count(0)
                cluster.wait_cli("garage to show items removed", lambda: (
                    (lambda f: ("items" not in f, sorted(f)))(cluster.cli_json("garage", "get", ids["groceries"])["fields"])))
                expect(a.locator('section[data-scope="hist:items"]')).to_contain_text("removed the field")
                a.get_by_role("button", name="Undo").click()
                expect(a.locator('tr[data-field="items"] .chip')).to_have_text(["milk", "eggs", "bread"])
                cluster.wait_cli("garage to show items back", lambda: (
                    (lambda f: (f.get("items") == ["milk", "eggs", "bread"], f.get("items")))(
                        cluster.cli_json("garage", "get", ids["groceries"])["fields"])))
                done()

                done = check("follow a link to its item, which lists what links to it; a link to a deleted item is listed")
                cluster.cli("kitchen", "add", "--id", "parts-1", "title=Bike parts", f"for=@{ids['bike']}")
                a.goto(f"{cluster.url('kitchen')}#/item/parts-1")
                link = a.locator('tr[data-field="for"] a.v-link')
                expect(link).to_contain_text("Fix the bike")
                link.click()
                expect(a.get_by_role("heading", name=re.compile("^Fix the bike"), level=1)).to_be_visible()
                expect(a.locator('[data-scope="linked-from"]')).to_contain_text("Bike parts")
                cluster.cli("kitchen", "add", "--id", "old-box", "title=Old box")
                cluster.cli("kitchen", "add", "--id", "jar-1", "title=Jar", "in=@old-box")
                cluster.cli("kitchen", "rm", "old-box")
                a.get_by_role("link", name="Items", exact=True).click()
                notice = a.locator('[data-scope="broken-links"]')
                expect(notice).to_contain_text("1 link points at a deleted or missing item")
                expect(notice).to_contain_text("Old box (deleted)")
                done()

                # -- the cluster view ------------------------------------------------------
                done = check("cluster view: garage connected")
                a.get_by_role("link", name="Cluster").click()
                peer_state = a.locator('tr[data-peer="garage"] .state')
                expect(peer_state).to_have_text("connected", timeout=SYNC_WAIT * 1000)
                expect(a.locator('tr[data-peer="garage"]')).to_contain_text("direct")
                done()

                done = check("cluster view: kitchen's bounded view, and why garage is in it")
                expect(a.locator("#view-summary")).to_contain_text("past a full mesh", timeout=SYNC_WAIT * 1000)
                garage_id = cluster.cli_json("garage", "status")["node_id"]
                member = a.locator(f'table.view tr[data-member="{garage_id}"]')
                expect(member).to_contain_text("garage")
                reason = member.locator('td[data-label="Why it is in the view"]').inner_text()
                # Any reason of a bounded view, in words (which one depends on who dialled first).
                if reason not in ("this node dialled it to fill its view", "it dialled this node, which had room",
                                  "it had no session at all, so it was let in"):
                    raise CheckFailed(f"garage is in kitchen's view for an unexpected reason: {reason!r}")
                done()

                done = check("cluster view: garage goes down")
                cluster.stop("garage", signal.SIGKILL)
                expect(peer_state).to_have_text("not connected", timeout=SYNC_WAIT * 1000)
                done()

                done = check("an edit made while garage is down shows DIRTY, then SYNCED once it is back")
                a.get_by_role("link", name="Items", exact=True).click()
                climb = a.locator(f'tr[data-id="{ids["climb"]}"]')
                climb.locator('td[data-field="title"] button.show').click()
                box = a.get_by_label("New value of title")
                box.fill("Climb the north face, with ropes")
                box.press("Enter")
                expect(climb.locator(".sync-cell .badge")).to_have_text("DIRTY")
                done()

                done = check("garage comes back: the edit turns SYNCED through the feed, with no status polled")
                status_reads = []
                def on_request(request):
                    if "/v1/status" in request.url:
                        status_reads.append(request.url)
                a.on("request", on_request)
                cluster.start("garage")
                expect(climb.locator(".sync-cell .badge")).to_have_text("SYNCED", timeout=SYNC_WAIT * 1000)
                a.wait_for_timeout(4000)
                a.remove_listener("request", on_request)
                if status_reads:
                    raise CheckFailed(f"expected no status request on the items view, got {len(status_reads)}")
                done()

                done = check("cluster view: garage is back")
                a.get_by_role("link", name="Cluster").click()
                expect(peer_state).to_have_text("connected", timeout=SYNC_WAIT * 1000)
                expect(a.locator('tr[data-peer="garage"]')).to_contain_text("nothing", timeout=SYNC_WAIT * 1000)
                screenshot(a, "cluster")
                a.get_by_role("link", name="Items", exact=True).click()
                cluster.wait_cli("garage to have the edit made while it was down", lambda: (
                    (lambda t: (t == "Climb the north face, with ropes", t))(cluster.cli_json("garage", "get", ids["climb"])["fields"].get("title"))))
                done()

                # -- the cluster, drawn, and a field's time line ------------------------------
                done = check("cluster view draws three members: shed joins, connected and in sync")
                cluster.join("shed")
                a.get_by_role("link", name="Cluster").click()
                graph = a.locator('[data-scope="cluster-graph"]')
                shed = graph.locator('g[data-member="shed"]')
                expect(shed).to_have_attribute("data-connected", "yes", timeout=SYNC_WAIT * 1000)
                expect(shed).to_have_attribute("data-lag", "in-sync", timeout=SYNC_WAIT * 1000)
                expect(graph.locator('g[data-member="garage"]')).to_have_attribute("data-lag", "in-sync", timeout=SYNC_WAIT * 1000)
                expect(graph.locator("line.edge.up")).to_have_count(2)
                expect(graph.locator('g[data-member="kitchen"]')).to_have_attribute("data-conflicts", "0")
                done()

                done = check("a member falls behind and catches up, drawn live; a conflict made meanwhile shows on the field's time line, then settled")
                cluster.stop("shed")
                expect(shed).to_have_attribute("data-connected", "no", timeout=SYNC_WAIT * 1000)
                cluster.cli("kitchen", "set", ids["bike"], "priority=3", "colour=red")
                cluster.cli("kitchen", "set", ids["groceries"], "priority=1")
                cluster.cli("shed", "set", ids["bike"], "colour=blue")
                expect(shed).to_have_attribute("data-lag", "behind", timeout=SYNC_WAIT * 1000)
                expect(shed).to_contain_text("behind by")
                expect(graph.locator('line[data-edge="shed"]')).to_have_class(re.compile("down"))
                screenshot(a, "cluster-behind")
                cluster.start("shed")
                expect(shed).to_have_attribute("data-connected", "yes", timeout=SYNC_WAIT * 1000)
                expect(shed).to_have_attribute("data-lag", "in-sync", timeout=SYNC_WAIT * 1000)
                expect(graph.locator('g[data-member="kitchen"]')).to_have_attribute("data-conflicts", "1", timeout=SYNC_WAIT * 1000)
                screenshot(a, "cluster")
                a.goto(f"{cluster.url('kitchen')}#/item/{ids['bike']}")
                lane = a.locator('[data-scope="lane:colour"]')
                expect(lane.locator('g.version[data-live="yes"]')).to_have_count(2, timeout=SYNC_WAIT * 1000)
                expect(lane.locator("text.event.conflict")).to_be_visible()
                expect(lane.locator("svg")).to_have_attribute("aria-label", re.compile("kitchen.*shed|shed.*kitchen"))
                title_lane = a.locator('[data-scope="lane:title"]')
                expect(title_lane.locator("g.version")).to_have_count(
                    a.locator('section[data-scope="hist:title"] li').count())
                screenshot(a, "item-timeline")
                cluster.cli("kitchen", "resolve", ids["bike"], "colour", "green")
                expect(lane.locator('[data-event="settled"]')).to_be_visible(timeout=SYNC_WAIT * 1000)
                expect(lane.locator('g.version[data-live="yes"]')).to_have_count(1)
                cluster.wait_cli("shed to have the settled colour", lambda: (
                    (lambda c: (c == "green", c))(cluster.cli_json("shed", "get", ids["bike"])["fields"].get("colour"))))
                # Shed is done: the checks below load kitchen with 25,000 items, which it need not take.
                cluster.stop("shed")
                a.get_by_role("link", name="Items", exact=True).click()
                done()

                done = check("garage made a reader: its page says why and offers no edit, its API refuses one; a writer again, it offers them")
                cluster.cli("kitchen", "members", "role", "garage", "reader")
                def own_role():
                    me = [m for m in cluster.cli_json("garage", "members") if m["this_node"]]
                    return me[0]["role"] if me else None
                cluster.wait_cli("garage to learn it is a reader", lambda: (own_role() == "reader", own_role()))
                edit = subprocess.run([cluster.binary, "--dir", cluster.nodes["garage"]["dir"], "set", ids["paint"], "priority=9"],
                                      capture_output=True, text=True, timeout=30)
                if edit.returncode == 0 or "may only read" not in edit.stderr:
                    raise CheckFailed(f"expected the reader's 'set' to be refused saying why, got {edit.returncode}: {edit.stderr}")
                g = new_page("garage's page, a reader", allowed=[r"status of 403"])
                g.goto(cluster.cli("garage", "ui"))
                expect(g.get_by_role("heading", name="Items", exact=True)).to_be_visible()
                expect(g.locator("#read-only")).to_contain_text("Read only: this machine is a reader")
                expect(g.get_by_role("button", name="New item")).to_be_hidden()
                expect(items_row(g, "Buy paint")).to_be_visible()
                expect(items_row(g, "Buy paint").get_by_role("button", name=re.compile("^Delete"))).to_be_hidden()
                screenshot(g, "reader")
                refused = g.evaluate("""async () => {
                    const t = localStorage.getItem('lansync.token');
                    const r = await fetch('/v1/items', { method: 'POST', headers: { Authorization: 'Bearer ' + t, 'Content-Type': 'application/json' }, body: '{"fields":{"n":1}}' });
                    return [r.status, (await r.json()).detail];
                }""")
                if refused[0] != 403 or "may only read" not in refused[1]:
                    raise CheckFailed(f"expected the reader's API to refuse a new item with 403 saying why, got {refused}")
                cluster.cli("kitchen", "members", "role", "garage", "writer")
                cluster.wait_cli("garage to learn it may write again", lambda: (own_role() == "writer", own_role()))
                cluster.cli("garage", "set", ids["paint"], "priority=1")
                g.reload()
                expect(g.get_by_role("button", name="New item")).to_be_visible()
                expect(g.locator("#read-only")).to_be_hidden()
                g.context.close()
                done()

                done = check("25,000 items more: the sort's hint to index, then the items view reads a page at a time, finds the last one, shows more")
                # Past the 20,000 the page once loaded whole: the node pages, searches and counts.
                cluster.stop("garage", signal.SIGTERM)
                many = os.path.join(root, "many.jsonl")
                with open(many, "w") as f:
                    for i in range(25000):
                        f.write(json.dumps({"type": "sample", "fields": {"title": f"Sample {i:05d}", "box": i % 97}}) + "\n")
                mark("garage stopped, file written")
                cluster.cli("kitchen", "import", many, timeout=3 * LOADED_WAIT / 1000)
                mark("imported")
                # From here the page shows 25,000 items more: beside the other suites on 2 cores
                # every read, render and click on it may take far past the usual 10 s (CI failed on
                # a reload, the type filter, the first page, "Show more" and "Log out", each in its
                # turn). Every step on it from now on is given LOADED_WAIT: a bound on a hang.
                a.set_default_timeout(LOADED_WAIT)
                expect.set_options(timeout=LOADED_WAIT)
                pages = []
                a.on("request", lambda r: pages.append(r.url) if "/v1/items?" in r.url else None)
                # A reload on a loaded CI machine, beside the node catching up after the import,
                # once took over the usual 10 s (CI run 77: the node's waiting writes held the
                # threads its reads run on, fixed since). This check is about paging.
                a.reload()
                mark("reloaded")
                expect(a.get_by_role("heading", name="Items", exact=True)).to_be_visible()
                # The view is still sorted by title (the column choice above), a field no index
                # holds: every page reads all 25,000 titles on the node (2.5 s each in the debug
                # build the tests run, several times that beside the other suites on CI's 2 cores). The
                # page says so and what to do; done, pages are read from the index.
                hint = a.locator("#sort-hint")
                expect(hint).to_be_visible()
                expect(hint).to_contain_text("lansync index title")
                mark("hint shown")
                cluster.cli("kitchen", "index", "title", timeout=3 * LOADED_WAIT / 1000)
                mark("indexed")
                a.reload()
                mark("reloaded")
                expect(a.get_by_role("heading", name="Items", exact=True)).to_be_visible()
                expect(hint).to_be_hidden()
                # The type filter lists the types the node's summary counted: over 25,000 new
                # items, beside the other suites on a loaded 2-core CI machine, that answer once
                # took longer than the page's usual 10 s (CI run 72).
                expect(a.locator('#type-filter option[value="sample"]')).to_have_count(1)
                a.locator("#type-filter").select_option("sample")
                mark("type chosen")
                # The node writes the new items' search texts meanwhile (in the background, at
                # most half a core): on a loaded 2-core CI machine the first page may take longer
                # than Playwright's default 5 s. This check is about paging, not speed.
                expect(a.locator("#items-count")).to_contain_text("25,000 shown")
                expect(a.locator("table.items tbody tr")).to_have_count(100)
                mark("first page shown")
                a.get_by_label("Search").fill("sample 24999")
                # The first search may write the texts still missing first (past 2,000 of them):
                # 8 s for these 25,000 in the debug build on an idle machine, several times that here.
                expect(a.locator("table.items tbody tr")).to_have_count(1)
                expect(items_row(a, "Sample 24999")).to_be_visible()
                mark("found")
                a.get_by_label("Search").fill("")
                # As above: a loaded CI machine (CI at be0d256) took more than 5 s for a page.
                expect(a.locator("table.items tbody tr")).to_have_count(100)
                # The click waits for the button to be visible, enabled and still; beside the other
                # suites a page read as the table fills moved it for more than the usual 10 s (CI
                # on 1892b15 failed here, the button resolved and waited on). A bound on a hang.
                a.get_by_role("button", name="Show more").click()
                # The click adds a page; the button, still in view, may add another by itself
                # (the view reads on as it is scrolled), so at least 200, in whole pages.
                # Polled from here, not with wait_for_function: Playwright polls a string
                # predicate with eval, which the page's Content-Security-Policy refuses (CI on
                # 1ef4f20: the first check came too early, and the poll that followed failed).
                deadline = time.monotonic() + LOADED_WAIT / 1000
                while a.locator("table.items tbody tr").count() < 200 and time.monotonic() < deadline:
                    a.wait_for_timeout(100)
                shown = a.locator("table.items tbody tr").count()
                # Not all 25,000: it reads pages, never the whole set. (A bound of 1,000 was a
                # guess at how far it reads on while the button stays in view; a full suite on
                # 84cc24f's successor saw 1,100, the table laid out slower than pages came.)
                if shown < 200 or shown % 100 != 0 or shown >= 25_000:
                    raise CheckFailed(f"expected at least 200 rows, in whole pages of 100, after 'Show more', got {shown}")
                asked = [u for u in pages if "limit=" in u]
                if not asked or any(int(re.search(r"limit=(\d+)", u).group(1)) > 1000 for u in asked):
                    raise CheckFailed(f"expected pages of at most 1,000 items, got {asked[:5]}")
                a.locator("#type-filter").select_option("")
                done()

                done = check("log out: the session ends on the node, and its old token is refused")
                a.get_by_role("button", name="Log out").click()
                expect(a.get_by_text(re.compile("session has ended"))).to_be_visible()
                # Requests that are meant to be refused, from a page that expects their 401s.
                probes = new_page("token probes", allowed=[r"status of 401"])
                probes.goto(cluster.url("kitchen"))
                status = probes.evaluate("""async (t) => (await fetch('/v1/items', { headers: { Authorization: 'Bearer ' + t } })).status""", token)
                if status != 401:
                    raise CheckFailed(f"expected the logged-out session's token to be refused with 401, got {status}")
                sessions = cluster.cli_json("kitchen", "status")["ui_sessions"]
                if sessions:
                    raise CheckFailed(f"expected no page session after logging out, got {sessions}")
                done()

                done = check("rotate the node's token: the running node refuses the old one at once")
                old = cluster.cli("kitchen", "api-token")
                new = cluster.cli("kitchen", "api-token", "--rotate")
                probe = "async (t) => (await fetch('/v1/status', { headers: { Authorization: 'Bearer ' + t } })).status"
                got = (probes.evaluate(probe, old), probes.evaluate(probe, new))
                probes.context.close()
                if got != (401, 200) or new == old:
                    raise CheckFailed(f"expected the old token refused and the new one taken, got {got}")
                done()

                done = check("no JavaScript error in any page")
                a.context.close()
                if console.errors:
                    raise CheckFailed("expected no console or page error, got:\n  " + "\n  ".join(console.errors))
                done()

                browser.close()
                browser = None
            except BaseException:
                # What each open page showed when a check failed.
                for i, context in enumerate(browser.contexts if browser else []):
                    for j, page in enumerate(context.pages):
                        try:
                            page.screenshot(path=os.path.join(shots, f"failure-{i}-{j}.png"), full_page=True)
                        except Exception:
                            pass
                raise
    except (Exception, RunTimeout) as e:   # any failure: report it, then clean up
        failure = e
    finally:
        signal.alarm(0)
        if browser is not None:
            try:
                browser.close()
            except Exception:
                pass
        if failure is not None:
            print(f"FAIL  {current[0]}", flush=True)
            print(f"      {type(failure).__name__}: {failure}".replace("\n", "\n      "))
            if marks:
                print("      the check's steps done: " + "; ".join(marks))
            if console.errors:
                print("      console errors so far:\n        " + "\n        ".join(console.errors))
            print(cluster.log_tails())
        cluster.stop_all()
        shutil.rmtree(root, ignore_errors=True)

    if failure is not None:
        print(f"{len(passed)} check(s) passed, 1 failed; screenshots in {shots}")
        return 1
    print(f"all {len(passed)} checks passed in {time.monotonic() - started:.1f} s; screenshots in {shots}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
