#!/usr/bin/env python3
"""The dashboard in a real browser.

Fills a store through the fake-trainer end-to-end run (autoresearchd start with
the scripted proposer), starts `autoresearchd serve` on loopback, and loads the
pages in Debian's headless Chromium:

  * --dump-dom with --virtual-time-budget: the table's rows and the chart's
    points (the canvas's data-points, written from the Chart.js datasets)
    match the store; a description `<img src=x onerror=alert(1)>` is text;
  * --screenshot of the overview (copied to $ARD_SCREENSHOT_OUT when set);
  * a longer-lived Chromium driven over the DevTools protocol (a small
    WebSocket client below, standard library only): a row the test inserts
    into the store after the page loaded appears without a reload;
  * a non-loopback bind without a token is refused;
  * `autoresearchd plot` writes a PNG of the right size in the chart's colours.

Then examples/knapsack/ (a higher-is-better score, summary.goal = "max") runs
its scripted raising and lowering edits, and its chart's best-so-far line rises
with the kept scores.

Then `autoresearchd demo` (its own simulated trainer and scripted night) runs
until five candidates are kept, and its dashboard is loaded the same way: the
rows match the store, the kept points are drawn, and the overview's screenshot
is copied to $ARD_DEMO_SCREENSHOT_OUT when set (the README's picture).

usage: dashboard_test.py AUTORESEARCHD FAKE_TRAINER
"""
import base64
import html.parser
import json
import math
import os
import shutil
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import zlib

DAEMON, FAKE = sys.argv[1], sys.argv[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
XSS = "<img src=x onerror=alert(1)>"


# ---- helpers -------------------------------------------------------------

def sh(cmd, cwd, check=True, timeout=60):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{cmd} failed ({r.returncode}): {r.stdout}{r.stderr}")
    return r


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def start_serve(args, cwd=None):
    """Starts `autoresearchd serve --port 0 ARGS`; returns the process and the URL it printed."""
    server = subprocess.Popen([DAEMON, "serve", *args, "--port", "0"], cwd=cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    assert " at http://127.0.0.1:" in line, line + server.stderr.read()
    return server, line.split(" at ", 1)[1].strip()


def stop_serve(server):
    server.terminate()
    server.wait(timeout=10)
    server.stdout.close()
    server.stderr.close()


def png_pixels(path):
    """(width, height, set of RGB colours) of an 8-bit PNG (colour types 2, 3, 6)."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat, palette = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"PLTE":
            palette = [tuple(body[i:i + 3]) for i in range(0, len(body), 3)]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert depth == 8 and ctype in (2, 3, 6), f"unsupported PNG: depth {depth}, colour type {ctype}"
    bpp = {2: 3, 3: 1, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp):
            colours.add(palette[line[x]] if ctype == 3 else tuple(line[x:x + 3]))
        prev = line
    return width, height, colours


def hex_rgb(h):
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))


class Dom(html.parser.HTMLParser):
    """The parts of a dumped page the assertions read."""

    def __init__(self, text):
        super().__init__()
        self.rows, self.canvas, self.imgs, self.title = [], None, 0, ""
        self.regions = []  # the most tried regions' rows: data-region, then its cells
        self.ladder = []  # the promotion ladder's kept changes: data-change, then its cells
        self.labels = []  # an experiment page's labels at larger rungs: data-rung, then the text
        self._row, self._cell, self._in_h1, self._region = None, None, False, False
        self._list = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs += 1
        if tag == "canvas":
            self.canvas = a
        if tag == "tr" and "data-id" in a:
            self._row = [a["data-id"]]
        if tag == "tr" and "data-region" in a:
            self._row = [a["data-region"]]
            self._region = True
        if tag == "tr" and "data-change" in a:
            self._row = [a["data-change"]]
            self._region = "ladder"
        if tag == "li" and "data-rung" in a and self._list is None:
            self._list = [a["data-rung"], ""]
        if tag == "td" and self._row is not None:
            self._cell = ""
        if tag == "h1":
            self._in_h1 = True

    def handle_endtag(self, tag):
        if tag == "td" and self._row is not None and self._cell is not None:
            self._row.append(self._cell)
            self._cell = None
        if tag == "tr" and self._row is not None:
            {True: self.regions, "ladder": self.ladder}.get(self._region, self.rows).append(self._row)
            self._row, self._region = None, False
        if tag == "li" and self._list is not None:
            self.labels.append(self._list)
            self._list = None
        if tag == "h1":
            self._in_h1 = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        if self._list is not None:
            self._list[1] += data
        if self._in_h1:
            self.title += data


class DevTools:
    """A minimal Chrome DevTools Protocol client over one WebSocket."""

    def __init__(self, ws_url):
        rest = ws_url[len("ws://"):]
        hostport, path = rest.split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert head.startswith(b"HTTP/1.1 101"), head
        self.next_id = 0

    def _read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            out += chunk
        return out

    def _send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _recv(self):
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            message += self._read(n)
            if b0 & 0x80:
                return message.decode()

    def call(self, method, **params):
        self.next_id += 1
        self._send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self._recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise AssertionError(f"{method}: {msg['error']}")
                return msg["result"]

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return r["result"].get("value")


# ---- the test ------------------------------------------------------------

class ServedTest(unittest.TestCase):
    """A class of tests over one served store: setUpClass sets tmp and server; both go at the end."""

    @classmethod
    def tearDownClass(cls):
        stop_serve(cls.server)
        shutil.rmtree(cls.tmp, ignore_errors=True)


class DashboardTest(ServedTest):
    @classmethod
    def setUpClass(cls):
        assert CHROMIUM, "chromium is not installed (scripts/setup.sh installs it)"
        cls.tmp = tempfile.mkdtemp(prefix="ard-dashboard-")
        cls.repo = repo = os.path.join(cls.tmp, "research")
        write(f"{repo}/trainer/train.cu", "val_bpb 1.0\n")
        write(f"{repo}/trainer/harness/eval.h", "// fixed\n")
        write(f"{repo}/program.md", "# program\nLower val_bpb.\n")
        write(f"{repo}/.gitignore", "build/\n")
        sh(["git", "init", "-q", "-b", "main", "."], repo)
        sh(["git", "add", "-A"], repo)
        sh(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"], repo)
        # The daemon serves the dashboard itself too (serve.enabled) on a free port.
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            cls.embedded_port = probe.getsockname()[1]
        write(f"{repo}/autoresearch.toml", f"""
tag = "dash"
budget_s = 1
startup_s = 1
retry_wait_s = 0.2
[build]
command = "{FAKE} build trainer/train.cu"
timeout_s = 10
[[stage]]
name = "train"
command = "{FAKE} run trainer/train.cu --depth-scale {{depth_scale}}"
timeout_s = 10
[data]
enabled = false
[preflight]
gpu = "off"
# One run decides (no confirmations or noise rounds), so the rows are the script's.
[keep]
confirmations = 0
[noise]
rounds = false
[proposer]
kind = "scripted"
script = "script.json"
[serve]
enabled = true
port = {cls.embedded_port}
""")
        edits = [("lower val to 0.95", "val_bpb 0.95\n"), (XSS, "val_bpb 0.97\n"),
                 ("crash in training", "val_bpb 0.5\nCRASH\n"), ("reach 0.90", "val_bpb 0.90\n"),
                 ("regress to 0.93", "val_bpb 0.93\n")]
        write(f"{repo}/script.json", json.dumps(
            [{"description": d, "writes": [{"path": "trainer/train.cu", "content": c}]} for d, c in edits]))
        sh([DAEMON, "start", "--detach"], repo)
        cls.db = f"{repo}/.autoresearchd/results.db"
        # The engine proposes ahead of need, so an edit may be tried twice;
        # the run is over when every edit has a finished experiment.
        wanted = {"baseline"} | {d for d, _ in edits}
        done = lambda: os.path.exists(cls.db) and wanted <= {r[3] for r in cls.finished()}
        deadline = time.time() + 90
        while time.time() < deadline and not done():
            time.sleep(0.2)
        if not done():
            log_path = f"{repo}/.autoresearchd/daemon.log"
            log = open(log_path).read() if os.path.exists(log_path) else "(no daemon.log)"
            subprocess.run([DAEMON, "stop"], cwd=repo, capture_output=True)
            raise AssertionError(f"the end-to-end run did not finish its script within 90 s:\n{log}")
        cls.embedded_status = json.load(urllib.request.urlopen(f"http://127.0.0.1:{cls.embedded_port}/api/status"))
        cls.finished_while_running = len(cls.finished())
        sh([DAEMON, "stop"], repo)
        if not done():
            with open(f"{repo}/.autoresearchd/daemon.log") as f:
                log = f.read()
            raise AssertionError(f"the end-to-end run did not finish its script: {cls.finished()}\n{log}")

        cls.server, cls.url = start_serve([], cwd=repo)

    @classmethod
    def finished(cls):
        with sqlite3.connect(cls.db) as c:
            return c.execute("SELECT id, state, val_bpb, description, commit_hash FROM experiments "
                             "WHERE state IN ('kept','discarded','crash','conflict') ORDER BY id").fetchall()

    def store_rows(self):
        with sqlite3.connect(self.db) as c:
            return c.execute("SELECT id, state, val_bpb, description, commit_hash FROM experiments "
                             "ORDER BY id").fetchall()

    def dump(self, path, budget_ms=5000):
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                            f"--virtual-time-budget={budget_ms}", "--dump-dom", self.url + path.lstrip("/")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_the_daemon_serves_the_dashboard_while_it_runs(self):
        self.assertTrue(self.embedded_status["daemon"]["running"])
        self.assertEqual(self.embedded_status["figures"]["finished"], self.finished_while_running)
        with self.assertRaises(OSError):  # gone with the daemon
            urllib.request.urlopen(f"http://127.0.0.1:{self.embedded_port}/api/status", timeout=5)

    def test_api_matches_the_store(self):
        doc = json.load(urllib.request.urlopen(self.url + "api/experiments"))
        self.assertEqual([(e["id"], e["state"], e["val_bpb"], e["description"], e["commit"]) for e in doc],
                         self.store_rows())
        since = json.load(urllib.request.urlopen(self.url + "api/experiments?since=3"))
        self.assertEqual([e["id"] for e in since], [r[0] for r in self.store_rows() if r[0] > 3])
        status = json.load(urllib.request.urlopen(self.url + "api/status"))
        self.assertFalse(status["daemon"]["running"])
        self.assertEqual(status["best"]["val_bpb"], 0.90)
        self.assertEqual(status["figures"]["finished"], len(self.finished()))
        self.assertIsNone(status["sigma"])

    def test_overview_rows_and_chart_match_the_store(self):
        dom = Dom(self.dump("/"))
        rows = self.store_rows()
        self.assertEqual([r[0] for r in dom.rows], [str(r[0]) for r in rows])
        for cells, (id_, state, val, desc, commit) in zip(dom.rows, rows):
            # cells: data-id, then #, commit, val_bpb, status, gpu, duration, description
            self.assertEqual(cells[2], commit[:7] if commit else "-")
            self.assertEqual(cells[3], "%.6f" % val if val is not None else "-")
            self.assertEqual(cells[4], state)
            self.assertEqual(cells[7], desc)
        points = json.loads(dom.canvas["data-points"])
        self.assertEqual(points, [[i, v, s] for i, s, v, _, _ in rows if v is not None])
        best = json.loads(dom.canvas["data-best"])
        kept = [(i, v) for i, s, v, _, _ in rows if s == "kept"]
        self.assertEqual([tuple(b) for b in best[:-1]], kept)  # 1.0, 0.95, 0.90
        self.assertEqual(best[-1], [None, 0.90])  # held to the last experiment
        # One legend swatch per kind, each in its own colour: every status among
        # the points, then the best-so-far line.
        legend = json.loads(dom.canvas["data-legend"])
        states = list(dict.fromkeys(s for _, s, v, _, _ in rows if v is not None))
        self.assertEqual([label for label, _ in legend], states + ["best so far"])
        colours = [colour for _, colour in legend]
        self.assertEqual(len(set(colours)), len(colours), legend)
        self.assertEqual(dict(legend)["kept"], "#2e7d32")
        if "discarded" in dict(legend):
            self.assertEqual(dict(legend)["discarded"], "#9e9e9e")
        # The most tried regions: the API's, as a table (region, tries, kept, keep rate, outcomes).
        status = json.load(urllib.request.urlopen(self.url + "api/status"))
        self.assertTrue(status["regions"])
        self.assertEqual([r[0] for r in dom.regions], [r["region"] for r in status["regions"]])
        for cells, r in zip(dom.regions, status["regions"]):
            rate = "%d%%" % math.floor(100 * r["keep_rate"] + 0.5)  # as Math.round
            self.assertEqual(cells[1:5], [r["region"], str(r["tries"]), str(r["kept"]), rate])

    def test_hostile_description_renders_inert(self):
        dom = Dom(self.dump("/"))
        self.assertEqual(dom.imgs, 0)
        self.assertIn(XSS, [cells[7] for cells in dom.rows])
        xss_id = next(r[0] for r in self.store_rows() if r[3] == XSS)
        page = Dom(self.dump(f"/experiment/{xss_id}"))
        self.assertEqual(page.imgs, 0)
        self.assertEqual(page.title, f"#{xss_id} {XSS}")

    def test_experiment_and_program_pages(self):
        kept = next(r for r in self.store_rows() if r[3] == "reach 0.90" and r[1] == "kept")
        text = self.dump(f"/experiment/{kept[0]}")
        self.assertIn('<span class="add">+val_bpb 0.90\n</span>', text)
        self.assertIn('<span class="del">-val_bpb 0.9', text)  # the best it was built on
        self.assertIn("val_bpb:", text)  # the log tail
        programs = self.dump("/programs")
        with sqlite3.connect(self.db) as c:
            (hash_,) = c.execute("SELECT hash FROM program_versions").fetchone()
        self.assertIn(hash_[:12], programs)
        self.assertIn(f'href="/experiment/{kept[0]}"', programs)

    def test_screenshot_of_the_overview(self):
        shot = os.path.join(self.tmp, "overview.png")
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            "--window-size=1280,1000", "--virtual-time-budget=5000", f"--screenshot={shot}", self.url],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        width, height, colours = png_pixels(shot)
        self.assertEqual((width, height), (1280, 1000))
        for colour in ("#2e7d32", "#9e9e9e"):  # kept and discarded points (a crash has no val_bpb)
            self.assertIn(hex_rgb(colour), colours)
        if os.environ.get("ARD_SCREENSHOT_OUT"):
            shutil.copyfile(shot, os.environ["ARD_SCREENSHOT_OUT"])

    def test_live_view_shows_a_new_experiment_without_a_reload(self):
        profile = os.path.join(self.tmp, "profile")
        browser = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
                                    f"--user-data-dir={profile}", self.url],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port_file = os.path.join(profile, "DevToolsActivePort")
            deadline = time.time() + 30
            def port_lines():
                if not os.path.exists(port_file):
                    return []
                with open(port_file) as f:
                    return f.read().split()
            while len(port_lines()) < 2:  # the port, then the browser's WebSocket path
                self.assertLess(time.time(), deadline, "chromium did not open its DevTools port")
                time.sleep(0.1)
            port = int(port_lines()[0])
            pages = []
            while not pages:
                self.assertLess(time.time(), deadline, "no page target")
                targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
                pages = [t for t in targets if t["type"] == "page" and t["url"].startswith(self.url)]
                time.sleep(0.1)
            tools = DevTools(pages[0]["webSocketDebuggerUrl"])
            rows = len(self.store_rows())
            count = "document.querySelectorAll('#experiments tbody tr').length"
            self.wait(tools, f"{count} === {rows}")
            tools.evaluate("window.loadedOnce = true")  # gone if the page reloads

            with sqlite3.connect(self.db) as c:
                cur = c.execute("INSERT INTO experiments(tag, parent_commit, description, state, stage, gpu, "
                                "started_at, stage_started_at, stage_expected) "
                                "VALUES('dash', 'x', 'live row', 'running', 'train', '3', ?, ?, ?)",
                                (time.time(), time.time(), time.time() + 600))
                new_id = cur.lastrowid
            self.wait(tools, f"document.querySelector('tr[data-id=\"{new_id}\"]') !== null")
            self.wait(tools, "document.querySelector('.lane[data-gpu=\"3\"]') !== null")
            with sqlite3.connect(self.db) as c:
                c.execute("UPDATE experiments SET state='discarded', val_bpb=0.99, ended_at=? WHERE id=?",
                          (time.time(), new_id))
            self.wait(tools, f"document.querySelector('tr[data-id=\"{new_id}\"] td:nth-child(4)').textContent"
                             " === 'discarded'")
            self.wait(tools, f"JSON.parse(document.querySelector('#progress').dataset.points)"
                             f".some(p => p[0] === {new_id} && p[1] === 0.99)")
            self.assertTrue(tools.evaluate("window.loadedOnce === true"), "the page reloaded")
            tools.sock.close()
        finally:
            browser.terminate()
            browser.wait(timeout=10)
            with sqlite3.connect(self.db) as c:  # the other tests see the run as it ended
                c.execute("DELETE FROM experiments WHERE description='live row'")

    def wait(self, tools, expression, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if tools.evaluate(expression) is True:
                return
            time.sleep(0.2)
        self.fail(f"timed out waiting for {expression}")

    def test_promotion_ladder_shows_each_kept_changes_label(self):
        """The default ladder (rung 1 "2x"): labels and runs at the rung written as the engine writes them."""
        kept = [r for r in self.store_rows() if r[1] == "kept" and r[3] != "baseline"]
        self.assertGreaterEqual(len(kept), 2)
        first, second = kept[0], kept[1]
        evidence = {"best_mean": 0.95, "candidate_mean": 0.93, "best_n": 2, "candidate_n": 2, "sigma": 0.001,
                    "delta": 0.02, "trials": [901, 902]}
        with sqlite3.connect(self.db) as c:
            for value in (0.93, 0.932):
                c.execute("INSERT INTO trials(experiment_id, tag, gpu, purpose, commit_hash, started_at, ended_at, "
                          "training_seconds, val_bpb, status, rung) VALUES(?, 'dash', '0', 'promote', ?, 1, 2, 2, ?, "
                          "'ok', 1)", (first[0], first[4], value))
            c.execute("INSERT INTO change_labels(experiment_id, rung, label, evidence, decided_at) "
                      "VALUES(?, 1, 'transfers', ?, ?)", (first[0], json.dumps(evidence), time.time()))
        try:
            ladder = json.load(urllib.request.urlopen(self.url + "api/status"))["ladder"]
            self.assertEqual([r["name"] for r in ladder["rungs"]], ["2x"])
            self.assertEqual(ladder["rungs"][0]["reference"]["id"], first[0])
            self.assertEqual(ladder["rungs"][0]["df"], 1)
            labels = {c["id"]: c["labels"][0]["label"] for c in ladder["changes"]}
            self.assertEqual(labels[first[0]], "transfers")
            self.assertEqual(labels[second[0]], "untested")

            dom = Dom(self.dump("/"))
            # cells: data-change, then #, commit, one badge per rung, description
            rows = {int(r[0]): r for r in dom.ladder}
            self.assertEqual(sorted(rows), sorted(c["id"] for c in ladder["changes"]))
            self.assertEqual(rows[first[0]][1:], [str(first[0]), first[4][:7], "transfers", first[3]])
            self.assertEqual(rows[second[0]][3], "untested")

            page = Dom(self.dump(f"/experiment/{first[0]}"))
            self.assertEqual(len(page.labels), 1)
            rung, text = page.labels[0]
            self.assertEqual(rung, "1")
            self.assertIn("transfers at 2x", text)
            self.assertIn("the change 0.930000 (n 2) against the commit before it 0.950000 (n 2)", text)
            self.assertIn("trials 901, 902", text)
        finally:
            with sqlite3.connect(self.db) as c:  # the other tests see the run as it ended
                c.execute("DELETE FROM change_labels")
                c.execute("DELETE FROM trials WHERE rung = 1")

    def test_non_loopback_bind_without_token_is_refused(self):
        r = sh([DAEMON, "serve", "--bind", "0.0.0.0", "--port", "0"], self.repo, check=False, timeout=20)
        self.assertEqual(r.returncode, 1)
        self.assertIn("serve.token: required to serve on 0.0.0.0", r.stderr)

    def test_plot_writes_the_chart(self):
        out = os.path.join(self.tmp, "progress.png")
        sh([DAEMON, "plot", "--out", out], self.repo)
        width, height, colours = png_pixels(out)
        self.assertEqual((width, height), (1200, 600))
        for colour in ("#2e7d32", "#9e9e9e", "#ffffff"):  # kept, discarded, background
            self.assertIn(hex_rgb(colour), colours)
        svg = os.path.join(self.tmp, "progress.svg")
        sh([DAEMON, "plot", "--out", svg], self.repo)
        with open(svg) as f:
            self.assertIn("<svg", f.read())
        bad = sh([DAEMON, "plot", "--out", os.path.join(self.tmp, "p.txt")], self.repo, check=False)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("expected a .png or .svg file name", bad.stderr)


class GoalMaxDashboardTest(ServedTest):
    """The dashboard of examples/knapsack/, whose score is higher-is-better (summary.goal = "max")."""

    @classmethod
    def setUpClass(cls):
        assert CHROMIUM, "chromium is not installed (scripts/setup.sh installs it)"
        cls.tmp = tempfile.mkdtemp(prefix="ard-goal-max-dashboard-")
        cls.repo = os.path.join(cls.tmp, "knapsack")
        example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "knapsack")
        shutil.copytree(example, cls.repo, ignore=shutil.ignore_patterns("build"))
        # One candidate at a time: the second edit is made on the first's result.
        with open(f"{cls.repo}/autoresearch.toml") as f:
            config = f.read()
        write(f"{cls.repo}/autoresearch.toml", "lookahead = 0\n" + config +
              '\n[keep]\nconfirmations = 0\n[noise]\nrounds = false\n'
              '[proposer]\nkind = "scripted"\nscript = "script.json"\n')
        # A raising edit (about 0.973 to 0.992: kept), then a lowering one (about 0.980: discarded).
        edits = [("swap more often", "SWAP_SHARE = 0.02;", "SWAP_SHARE = 0.5;"),
                 ("end the annealing hot", "END_TEMPERATURE = 0.5;", "END_TEMPERATURE = 5.0;")]
        write(f"{cls.repo}/script.json", json.dumps(
            [{"description": d, "edits": [{"path": "solver.cc", "find": a, "replace": b}]} for d, a, b in edits]))
        sh(["git", "init", "-q", "-b", "main", "."], cls.repo)
        sh(["git", "add", "-A"], cls.repo)
        sh(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"], cls.repo)
        sh([DAEMON, "start", "--detach"], cls.repo)
        cls.db = f"{cls.repo}/.autoresearchd/results.db"
        wanted = {"baseline"} | {d for d, _, _ in edits}
        done = lambda: os.path.exists(cls.db) and wanted <= {r[3] for r in cls.rows() if r[1] in ("kept", "discarded")}
        deadline = time.time() + 90
        while time.time() < deadline and not done():
            time.sleep(0.2)
        sh([DAEMON, "stop"], cls.repo)
        assert done(), f"the knapsack run did not finish its script within 90 s: {cls.rows()}"
        cls.server, cls.url = start_serve(["--repo", cls.repo])

    @classmethod
    def rows(cls):
        with sqlite3.connect(cls.db) as c:
            return c.execute("SELECT id, state, val_bpb, description FROM experiments "
                             "WHERE tag='knapsack' ORDER BY id").fetchall()

    def test_the_best_so_far_line_follows_the_highest_score(self):
        status = json.load(urllib.request.urlopen(self.url + "api/status"))
        self.assertEqual(status["metric"], {"name": "score", "goal": "max"})
        rows = self.rows()
        kept = [(i, v) for i, s, v, _ in rows if s == "kept"]
        self.assertEqual(len(kept), 2, rows)
        self.assertGreater(kept[1][1], kept[0][1])  # the higher score was kept
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                            "--dump-dom", self.url], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        dom = Dom(r.stdout)
        best = json.loads(dom.canvas["data-best"])
        self.assertEqual([tuple(b) for b in best[:-1]], kept)  # rising, as the kept scores rose
        self.assertEqual(best[-1], [None, kept[1][1]])
        self.assertIn("best score", r.stdout)


class DemoDashboardTest(ServedTest):
    """The dashboard of `autoresearchd demo`'s night."""

    KEPT = 5

    @classmethod
    def setUpClass(cls):
        assert CHROMIUM, "chromium is not installed (scripts/setup.sh installs it)"
        cls.tmp = tempfile.mkdtemp(prefix="ard-demo-dashboard-")
        cls.repo = os.path.join(cls.tmp, "demo")
        r = subprocess.run([DAEMON, "demo", "--dir", cls.repo, "--stop-after-kept", str(cls.KEPT), "--timeout", "150"],
                           capture_output=True, text=True, timeout=200)
        assert r.returncode == 0, f"demo failed ({r.returncode}):\n{r.stdout}{r.stderr}"
        cls.printed = r.stdout
        cls.db = f"{cls.repo}/.autoresearchd/results.db"
        cls.server, cls.url = start_serve(["--repo", cls.repo])

    def rows(self):
        with sqlite3.connect(self.db) as c:
            return c.execute("SELECT id, state, val_bpb, description, is_baseline FROM experiments "
                             "WHERE tag='demo' ORDER BY id").fetchall()

    def test_the_demos_night_as_the_dashboard_shows_it(self):
        rows = self.rows()
        kept = [r for r in rows if r[1] == "kept" and not r[4]]
        self.assertGreaterEqual(len(kept), self.KEPT)
        for r in kept:
            self.assertIn("(true effect: ", r[3])
        self.assertIn("dashboard: http://127.0.0.1:", self.printed)
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                            "--dump-dom", self.url], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        dom = Dom(r.stdout)
        self.assertEqual([cells[0] for cells in dom.rows], [str(r[0]) for r in rows])
        best = json.loads(dom.canvas["data-best"])
        self.assertEqual([b[0] for b in best[:-1]], [r[0] for r in rows if r[1] == "kept"])

    def test_screenshot_of_the_demos_dashboard(self):
        shot = os.path.join(self.tmp, "demo.png")
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            "--window-size=1280,900", "--virtual-time-budget=5000", f"--screenshot={shot}", self.url],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        width, height, colours = png_pixels(shot)
        self.assertEqual((width, height), (1280, 900))
        self.assertIn(hex_rgb("#2e7d32"), colours)  # the kept points
        self.assertLess(os.path.getsize(shot), 300 * 1024)
        if os.environ.get("ARD_DEMO_SCREENSHOT_OUT"):
            shutil.copyfile(shot, os.environ["ARD_DEMO_SCREENSHOT_OUT"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
