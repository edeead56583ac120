# SPDX-License-Identifier: Apache-2.0
"""A loopback fault-injection proxy: before the test API server, or before a JobManager's REST.

Test code (tests/integration/faults.sh). The controller talks to this proxy as if it were the API
server (mode `api`: TLS towards the API server with the test environment's client certificate;
plain HTTP or, with --tls, TLS towards the controller) or a JobManager (mode `jm`: plain HTTP both
ways). Requests are forwarded one at a time per client connection (http.server / http.client);
watch answers are relayed event by event, one chunk each, and end with the connection.

Faults are rules, added on the command line (--rule JSON, repeatable) or at run time through the
control endpoint on the same port (POST /_fault/rules with a JSON rule or list of rules; GET
/_fault/stats; POST /_fault/clear; POST /_fault/cut closes every watch being relayed, so that the
next ones meet the rules). A rule:
  {"fault": F, "match": {"method": RE, "target": RE, "watch": bool}, "count": N, "seconds": T, ...}
applies to the next N requests that match (method and path+query by regular expression search,
`watch`: only watch requests, or only others) for at most T seconds after it was added (defaults
1 and 60; at most 10,000 and 600): both bounds always hold. The first live matching rule wins.
F is one of
  status     answer `code` (429, 409, 500, 503 ...) with a Kubernetes Status body, and with
             `retry_after` seconds, a Retry-After header; nothing goes upstream
  gone       a 410 Gone Status answer (for a list or watch with a resourceVersion)
  gone_event a watch answered 200 whose stream, after `after_events` relayed events (default
             0), carries an ERROR event with code 410 (reason Expired), then ends
  drop       a watch whose connection is closed, its last chunk never sent, after `after_events`
             relayed events (default 1) or `after_s` seconds (default 2), whichever comes first;
             with "partial": true, half of the next event goes out before the close
  halfclose  a watch whose relay stops after `after_events` events (default 0): the socket stays
             open and silent for at most `hold` seconds (default 60), then is closed; the log
             says whether the client gave up first, and after how long (counted from the
             answer's head, which the API server may send only with the first event or
             bookmark of a resumed watch)
  latency    the request goes upstream `delay` seconds late (at most 30)
  garbage    (jm) a 200 answer whose body is not JSON
  hang       (jm, or api) the request is read and never answered: the socket stays open for at
             most `hold` seconds (default 60)
Every injected fault is one JSON line in --log (and counted in /_fault/stats: injected per
fault; every request's arrival; `early`: requests that came back to the same method and target
before the Retry-After of a 429/503 told them to, `honoured`: those that came back later).
Bounded: at most 256 client connections at once (more are closed at once), each thread ends with
its connection.

usage: fault_proxy.py api UPSTREAM_HOST:PORT CA CLIENT_CERT CLIENT_KEY [--tls CERT KEY]
                          [--log F] [--rule J]...
       fault_proxy.py jm UPSTREAM_HOST:PORT [--log F] [--rule J]...
Prints the port it listens on (127.0.0.1), then serves until killed.
"""
import argparse
import http.client
import http.server
import json
import queue
import re
import select
import socket
import ssl
import sys
import threading
import time

MAX_CONNS = 256
RETRY_SLACK_S = 0.005  # clock reads: a retry's arrival is taken once its head was read

FAULTS = {"status", "gone", "gone_event", "drop", "halfclose", "latency", "garbage", "hang"}


class Rule:
    """One fault with its bounds (count and an expiry time)."""

    def __init__(self, spec, rid):
        if not isinstance(spec, dict) or spec.get("fault") not in FAULTS:
            raise ValueError("rule: fault must be one of " + ", ".join(sorted(FAULTS)))
        self.id = rid
        self.spec = spec
        self.fault = spec["fault"]
        m = spec.get("match") or {}
        self.method = re.compile(m.get("method", "."))
        self.target = re.compile(m.get("target", "."))
        self.watch = m.get("watch")
        self.left = max(0, min(int(spec.get("count", 1)), 10000))
        self.until = time.monotonic() + max(0.0, min(float(spec.get("seconds", 60)), 600.0))
        if self.fault == "status" and not 100 <= int(spec.get("code", 0)) <= 599:
            raise ValueError("rule: status needs a code 100..599")

    def live(self, now):
        return self.left > 0 and now < self.until

    def matches(self, method, target, is_watch):
        if self.watch is not None and bool(self.watch) != is_watch:
            return False
        return bool(self.method.search(method)) and bool(self.target.search(target))


class State:
    """Rules, counters and the log, shared by the handler threads."""

    def __init__(self, log_path):
        self.lock = threading.Lock()
        self.rules = []
        self.next_id = 1
        self.injected = {}
        self.requests = 0
        self.early = []
        self.honoured = []     # seconds between a Retry-After answer and the request's return
        self.not_before = {}   # (method, target) -> monotonic time before which no retry may come
        self.log = open(log_path, "a", buffering=1) if log_path else sys.stderr
        self.conns = 0
        self.watches = {}      # client socket of each watch being relayed -> Event set on a cut

    def add(self, spec):
        with self.lock:
            r = Rule(spec, self.next_id)
            self.next_id += 1
            self.rules.append(r)
            self.write({"event": "rule", "id": r.id, "rule": spec})
            return r.id

    def write(self, rec):
        rec["t"] = round(time.time(), 3)
        self.log.write(json.dumps(rec, sort_keys=True) + "\n")

    def take(self, method, target, is_watch):
        """The rule that applies to this request (its count taken), or None; counts the request
        and checks it against the Retry-After it was given."""
        now = time.monotonic()
        with self.lock:
            self.requests += 1
            due = self.not_before.pop((method, target), None)
            if due is not None and now + RETRY_SLACK_S >= due:
                self.honoured.append(round(now - due, 3))
            elif due is not None:
                early = {"method": method, "target": target, "early_by_s": round(due - now, 3)}
                self.early.append(early)
                self.write(dict(early, event="early"))
            self.rules = [r for r in self.rules if r.live(now)]
            for r in self.rules:
                if r.matches(method, target, is_watch):
                    r.left -= 1
                    return r
        return None

    def injected_one(self, rule, method, target, **extra):
        with self.lock:
            self.injected[rule.fault] = self.injected.get(rule.fault, 0) + 1
            self.write(dict(extra, event="inject", fault=rule.fault, id=rule.id, method=method, target=target))

    def retry_after(self, method, target, seconds):
        with self.lock:
            self.not_before[(method, target)] = time.monotonic() + seconds

    def stats(self):
        with self.lock:
            return {"injected": dict(self.injected), "requests": self.requests, "early": list(self.early),
                    "honoured": len(self.honoured),
                    "rules": [{"id": r.id, "fault": r.fault, "left": r.left} for r in self.rules
                              if r.live(time.monotonic())]}


def status_body(code, reason, message):
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "reason": reason, "code": code}).encode()


REASONS = {409: "Conflict", 410: "Expired", 429: "TooManyRequests", 500: "InternalError",
           503: "ServiceUnavailable", 504: "Timeout"}

HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
       "content-length"}


def make_handler(st, args):
    up_host, up_port = args.upstream.rsplit(":", 1)
    up_port = int(up_port)
    up_ctx = None
    if args.mode == "api":
        up_ctx = ssl.create_default_context(cafile=args.ca)
        up_ctx.load_cert_chain(args.cert, args.key)
        up_ctx.check_hostname = False

    def upstream(timeout):
        if up_ctx:
            return http.client.HTTPSConnection(up_host, up_port, context=up_ctx, timeout=timeout)
        return http.client.HTTPConnection(up_host, up_port, timeout=timeout)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):  # every request goes into stats, faults into the log
            pass

        def body(self):
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n > 0 else b""

        def answer(self, code, body, ctype="application/json", headers=()):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def control(self, method, body):
            if method == "GET" and self.path == "/_fault/stats":
                return self.answer(200, json.dumps(st.stats()).encode())
            if method == "POST" and self.path == "/_fault/cut":
                # every watch relayed now is closed: the next ones meet the rules
                with st.lock:
                    cut = list(st.watches.items())
                    st.watches.clear()
                    st.write({"event": "cut", "watches": len(cut)})
                for s, ev in cut:
                    ev.set()
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return self.answer(200, json.dumps({"cut": len(cut)}).encode())
            if method == "POST" and self.path == "/_fault/clear":
                with st.lock:
                    st.rules = []
                return self.answer(200, b"{}")
            if method == "POST" and self.path == "/_fault/rules":
                try:
                    specs = json.loads(body)
                    ids = [st.add(s) for s in (specs if isinstance(specs, list) else [specs])]
                except (ValueError, TypeError, re.error) as e:
                    return self.answer(400, json.dumps({"error": str(e)}).encode())
                return self.answer(200, json.dumps({"ids": ids}).encode())
            return self.answer(404, b"{}")

        def hold(self, seconds):
            """Keeps the client's socket open and silent for at most `seconds`; returns how long
            until the client closed it (None: it did not)."""
            t0 = time.monotonic()
            sock = self.connection
            while True:
                left = t0 + seconds - time.monotonic()
                if left <= 0:
                    return None
                r, _, _ = select.select([sock], [], [], min(left, 1.0))
                if r:
                    try:
                        if not sock.recv(65536):
                            return round(time.monotonic() - t0, 3)
                    except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                        continue
                    except (OSError, ssl.SSLError):
                        return round(time.monotonic() - t0, 3)

        def handle_any(self):
            method = self.command
            target = self.path
            body = self.body()
            if target.startswith("/_fault/"):
                return self.control(method, body)
            is_watch = bool(re.search(r"[?&]watch=(1|true)(&|$)", target))
            rule = st.take(method, target, is_watch)
            f = rule.fault if rule else None
            if f == "latency":
                d = max(0.0, min(float(rule.spec.get("delay", 1)), 30.0))
                st.injected_one(rule, method, target, delay=d)
                time.sleep(d)
            elif f == "status":
                code = int(rule.spec["code"])
                hdrs = []
                ra = rule.spec.get("retry_after")
                if ra is not None:
                    hdrs.append(("Retry-After", str(int(ra))))
                msg = rule.spec.get("message", "injected by fault_proxy")
                st.injected_one(rule, method, target, code=code, retry_after=ra)
                if ra is not None:     # from before the answer leaves: the client reads it later
                    st.retry_after(method, target, int(ra))
                return self.answer(code, status_body(code, REASONS.get(code, "Unknown"), msg), headers=hdrs)
            elif f == "gone":
                st.injected_one(rule, method, target, code=410)
                return self.answer(410, status_body(410, "Expired", "too old resource version (injected)"))
            elif f == "garbage":
                st.injected_one(rule, method, target)
                return self.answer(200, b'{"jobs": [ {"jid": "not json at all')
            elif f == "hang":
                h = max(0.0, min(float(rule.spec.get("hold", 60)), 600.0))
                gave_up = self.hold(h)
                st.injected_one(rule, method, target, hold=h, client_gave_up_after_s=gave_up)
                self.close_connection = True
                return
            try:
                self.forward(method, target, body, is_watch, rule if f in ("gone_event", "drop", "halfclose") else None)
            except (OSError, http.client.HTTPException, ssl.SSLError) as e:
                self.close_connection = True
                try:
                    self.answer(502, status_body(502, "BadGateway", "fault_proxy upstream: %s" % e))
                except OSError:
                    pass

        def forward(self, method, target, body, is_watch, rule):
            up = upstream(None if is_watch else 60)
            hdrs = {k: v for k, v in self.headers.items() if k.lower() not in HOP and k.lower() != "host"}
            hdrs["Host"] = "%s:%s" % (up_host, up_port)
            if body or method in ("POST", "PUT", "PATCH"):
                hdrs["Content-Length"] = str(len(body))
            up.request(method, target, body=body or None, headers=hdrs)
            resp = up.getresponse()
            if not is_watch or resp.status != 200:
                data = resp.read()
                up.close()
                out = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP]
                self.send_response(resp.status)
                for k, v in out:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                return
            # a watch: relayed event by event, one chunk each (as the API server's), so that a
            # dropped stream is a transfer cut short, not an end
            self.close_connection = True
            self.send_response(200)
            for k, v in resp.getheaders():
                if k.lower() not in HOP:
                    self.send_header(k, v)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            cut = threading.Event()
            with st.lock:
                st.watches[self.connection] = cut
            try:
                self.relay(resp, up, method, target, rule, cut)
            finally:
                with st.lock:
                    st.watches.pop(self.connection, None)
                up.close()

        def chunk(self, data):
            """One chunk of a chunked answer (b"": the last one)."""
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def relay(self, resp, up, method, target, rule, cut):
            """Relays a watch's events until upstream ends it, or does what `rule` says."""
            lines = queue.Queue()

            def reader():
                try:
                    while True:
                        ln = resp.readline()
                        if not ln:
                            break
                        lines.put(ln)
                except (OSError, http.client.HTTPException, ValueError):
                    pass
                lines.put(None)

            threading.Thread(target=reader, daemon=True).start()
            f = rule.fault if rule else None
            after = int(rule.spec.get("after_events", 1 if f == "drop" else 0)) if rule else 0
            deadline = time.monotonic() + float(rule.spec.get("after_s", 2)) if f == "drop" else None
            sent = 0
            while True:
                if cut.is_set():
                    return             # closed by /_fault/cut
                if rule and sent >= after:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    break              # drop: its time is up
                try:
                    ln = lines.get(timeout=0.5)
                except queue.Empty:
                    continue
                if ln is None:
                    return self.chunk(b"")  # upstream ended the watch (its timeoutSeconds)
                self.chunk(ln)
                sent += 1
            if f == "gone_event":
                ev = {"type": "ERROR", "object": json.loads(status_body(
                    410, "Expired", "too old resource version (injected)"))}
                self.chunk(json.dumps(ev).encode() + b"\n")
                self.chunk(b"")        # then the stream ends, as the API server's does
                st.injected_one(rule, method, target, after_events=sent)
            elif f == "drop":
                if rule.spec.get("partial"):
                    try:               # half of the next event (within 5 s) goes out first
                        ln = lines.get(timeout=5)
                    except queue.Empty:
                        ln = None
                    if ln:
                        self.chunk(ln[:len(ln) // 2])
                st.injected_one(rule, method, target, after_events=sent, partial=bool(rule.spec.get("partial")))
                self.connection.shutdown(socket.SHUT_RDWR)
            elif f == "halfclose":
                h = max(0.0, min(float(rule.spec.get("hold", 60)), 600.0))
                up.close()
                gave_up = self.hold(h)
                st.injected_one(rule, method, target, after_events=sent, hold=h,
                                client_gave_up_after_s=gave_up)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any

    return Handler


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    state = None

    def process_request(self, request, client_address):
        with self.state.lock:
            full = self.state.conns >= MAX_CONNS
            if not full:
                self.state.conns += 1
        if full:
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.state.lock:
                self.state.conns -= 1

    def handle_error(self, request, client_address):
        pass  # a client that went away mid-answer (as faults make them do)


def main():
    p = argparse.ArgumentParser(description="fault-injection proxy (tests/integration/faults.sh)")
    p.add_argument("mode", choices=["api", "jm"])
    p.add_argument("upstream")
    p.add_argument("ca", nargs="?")
    p.add_argument("cert", nargs="?")
    p.add_argument("key", nargs="?")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    p.add_argument("--log")
    p.add_argument("--rule", action="append", default=[])
    args = p.parse_args()
    if args.mode == "api" and not (args.ca and args.cert and args.key):
        p.error("api mode needs CA CLIENT_CERT CLIENT_KEY")
    st = State(args.log)
    for r in args.rule:
        st.add(json.loads(r))
    srv = Server(("127.0.0.1", 0), make_handler(st, args))
    srv.state = st
    if args.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls[0], args.tls[1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True, do_handshake_on_connect=False)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
