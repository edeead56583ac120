#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test-only HTTPS server for the transport tests (test_http, test_kube,
test_reflector): a few plain endpoints and scripted list/watch answers shaped
like kube-apiserver's.  Usage: fake_apiserver.py CERTDIR; prints the port on
stdout, serves on 127.0.0.1 only and exits by itself after 120 s."""
import json
import os
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOCK = threading.Lock()
COUNTS = {}
LOG = []          # (ns, query-dict) of list/watch requests


def bump(name):
    with LOCK:
        COUNTS[name] = COUNTS.get(name, 0) + 1
        return COUNTS[name]


def cm(name, rv, ns="refl", owner=None, cluster=None):
    meta = {"name": name, "namespace": ns, "resourceVersion": str(rv), "uid": "uid-" + name,
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}]}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "flinkoperator.k8s.io/v1beta1", "kind": "FlinkCluster",
                                    "name": owner, "uid": "uid-" + owner, "controller": True}]
    if cluster:
        meta["labels"] = {"cluster": cluster}
    else:
        # over the reflector's 256-byte threshold: kept zstd-compressed (the small ones as text)
        meta["annotations"] = {"note": "a ConfigMap of the reflector tests, " * 6}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"rv": str(rv)}}


def status(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


def ev(kind, obj):
    return (json.dumps({"type": kind, "object": obj}) + "\n").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    # -- helpers -------------------------------------------------------
    def send_json(self, code, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def start_chunked(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data, pause=0.02):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
        time.sleep(pause)

    def end_chunked(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n).decode() if n else ""

    # -- dispatch ------------------------------------------------------
    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_PATCH(self):
        self.route("PATCH")

    def do_DELETE(self):
        self.route("DELETE")

    def route(self, method):
        u = urlsplit(self.path)
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        p = u.path
        if "/namespaces/echo/" in p or p == "/echo":
            return self.send_json(200, {"method": method, "path": p, "query": q,
                                        "contentType": self.headers.get("Content-Type", ""),
                                        "auth": self.headers.get("Authorization", ""),
                                        "body": self.body()})
        if len(p.split("/")) > 7 and p.split("/")[5] == "services" and p.split("/")[7] == "proxy":
            return self.service_proxy(method, p, q)
        self.body()
        if p == "/hello":
            return self.send_json(200, {"hello": "world"})
        if p == "/whoami":
            cert = self.connection.getpeercert()
            cn = ""
            for rdn in (cert or {}).get("subject", ()):
                for k, v in rdn:
                    if k == "commonName":
                        cn = v
            return self.send_json(200, {"cn": cn})
        if p == "/big":
            return self.send_json(200, {"x": "y" * 200000})
        if p == "/stream":
            self.start_chunked()
            data = ev("ADDED", {"n": 1}) + ev("MODIFIED", {"n": 2}) + ev("DELETED", {"n": 3})
            for piece in (data[:7], data[7:40], data[40:41], data[41:]):
                self.chunk(piece)
            return self.end_chunked()
        if p == "/slow":
            self.start_chunked()
            self.chunk(b"{}\n")
            time.sleep(3)
            return self.end_chunked()
        if p == "/retry429":
            n = bump("retry429:" + q.get("id", ""))
            if n <= 2:
                body = b"Too many requests, please try again later.\n"
                self.send_response(429)
                self.send_header("Retry-After", "0")
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                return self.wfile.write(body)
            return self.send_json(200, {"attempts": n})
        if p == "/fail503":
            bump("fail503")
            return self.send_json(503, status(503, "ServiceUnavailable", "no"))
        if p == "/auth":
            if self.headers.get("Authorization") == "Bearer rotated-token":
                return self.send_json(200, {"auth": "ok"})
            return self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
        if p == "/authz":   # 200 only for the bearer token ?want= (test_kubecred's rotations)
            auth = self.headers.get("Authorization", "")
            if auth == "Bearer " + q.get("want", ""):
                return self.send_json(200, {"auth": auth})
            return self.send_json(401, status(401, "Unauthorized", "Unauthorized: " + auth))
        if p == "/count":
            with LOCK:
                return self.send_json(200, dict(COUNTS))
        if p == "/log":
            with LOCK:
                return self.send_json(200, {"log": [e for e in LOG if e["ns"] == q.get("ns")]})
        parts = p.strip("/").split("/")
        if len(parts) == 5 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "configmaps":
            ns = parts[3]
            with LOCK:
                LOG.append({"ns": ns, "q": q})
            if q.get("watch") == "1":
                return self.watch(ns, q)
            return self.list(ns, q)
        return self.send_json(404, status(404, "NotFound", "no route " + p))

    # -- /api/v1/namespaces/NS/services/[SCHEME:]NAME[:PORT]/proxy/PATH -------------------
    def service_proxy(self, method, p, q):
        """The service proxy subresource, as kube-apiserver answers it: its own errors are
        metav1.Status objects; otherwise the endpoint's answer (here a JobManager stand-in that
        echoes the request, or answers with a Flink error) passes through."""
        parts = p.split("/")
        ns, svc, rest = parts[4], parts[6], "/" + "/".join(parts[8:])
        body = self.body()
        cert = self.connection.getpeercert()
        cn = "".join(v for rdn in (cert or {}).get("subject", ()) for k, v in rdn if k == "commonName")
        auth = self.headers.get("Authorization", "")
        if not auth and not cn:
            return self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
        name = svc.split(":")[1] if svc.count(":") == 2 else svc.split(":")[0]
        if ns == "noep":
            return self.send_json(503, status(503, "ServiceUnavailable",
                                              'no endpoints available for service "%s"' % svc))
        if ns == "nosvc":
            return self.send_json(404, status(404, "NotFound", 'services "%s" not found' % name))
        if ns == "flinkerr":
            return self.send_json(404, {"errors": ["Job could not be found."]})
        return self.send_json(200, {"method": method, "ns": ns, "service": svc, "path": rest, "query": q,
                                    "contentType": self.headers.get("Content-Type", ""),
                                    "auth": auth, "cn": cn, "body": body})

    # -- list ------------------------------------------------------------
    def list(self, ns, q):
        limit = int(q.get("limit", "0") or 0)
        cont = q.get("continue", "")
        if ns == "norv0" and q.get("resourceVersion") == "0":
            # a server that cannot serve a list from its cache (the reflector then lists consistently)
            return self.send_json(400, status(400, "BadRequest", "resourceVersion=0 is not served here"))
        if ns in ("pages", "pagesexpire", "norv0", "wlno", "wlold"):
            items = [cm("p%d" % i, 10 + i, ns) for i in range(1, 6)]
            rv = "500"
            if ns == "pagesexpire" and cont:
                return self.send_json(410, status(410, "Expired", "The provided continue parameter is too old "
                                                                  "to display a consistent list result."))
            if ns == "pagesexpire" and not limit:
                rv = "600"
            if q.get("labelSelector"):
                items = items[:4]
        elif ns == "refl":
            n = bump("refl-list") if not cont else COUNTS.get("refl-list", 0)
            if n == 1:
                items = [cm("a", 10, owner="fc1"), cm("b", 11, cluster="fc2"), cm("c", 12, cluster="fc2")]
                rv = "100"
            elif n == 2:
                items = [cm("a", 101, owner="fc1"), cm("d", 151, cluster="fc2"), cm("e", 170)]
                rv = "200"
            else:
                items = [cm("a", 101, owner="fc1"), cm("d", 151, cluster="fc2"), cm("e", 201)]
                rv = "300"
        else:
            return self.send_json(404, status(404, "NotFound", "namespace " + ns))
        start = int(cont[1:]) if cont else 0
        page = items[start:start + limit] if limit else items[start:]
        meta = {"resourceVersion": rv}
        if limit and start + limit < len(items):
            meta["continue"] = "c%d" % (start + limit)
        return self.send_json(200, {"kind": "ConfigMapList", "apiVersion": "v1", "metadata": meta, "items": page})

    # -- watch -------------------------------------------------------------
    def watch_list(self, ns, q, rv):
        return watch_list_answer(self, ns, q, rv)

    def watch(self, ns, q):
        rv = q.get("resourceVersion", "")
        if ns in ("wl", "wlno", "wlold"):
            return self.watch_list(ns, q, rv)
        if ns == "w":
            self.start_chunked()
            data = (ev("ADDED", cm("x", 8, "w")) + ev("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1",
                                                                   "metadata": {"resourceVersion": "9"}})
                    + ev("MODIFIED", cm("x", 10, "w"))
                    + ev("ERROR", status(410, "Expired", "too old resource version: 7 (10)")))
            for i in range(0, len(data), 50):
                self.chunk(data[i:i + 50], 0.002)
            return self.end_chunked()
        if ns == "wbig":
            # one 100 kB event in 3000-byte chunks (the line buffer grows past its first 8 KiB)
            big = cm("big", 20, "wbig")
            big["data"]["big"] = "z" * 100000
            # a string with a NUL in it (JSON "\u0000", valid JSON the API server stores): kept whole
            nul = cm("x", 21, "wbig")
            nul["data"]["nul"] = "a\x00b"
            data = ev("ADDED", big) + ev("MODIFIED", nul)
            self.start_chunked()
            for i in range(0, len(data), 3000):
                self.chunk(data[i:i + 3000], 0)
            return self.end_chunked()
        if ns == "wsilent":
            # one event, then silence with the socket open (a half-closed stream), 30 s at most
            self.start_chunked()
            self.chunk(ev("ADDED", cm("x", 8, "wsilent")))
            time.sleep(30)
            return self.end_chunked()
        if ns == "wbad":
            self.start_chunked()
            self.chunk(ev("ADDED", cm("x", 8, "wbad")) + b"this is not json\n")
            return self.end_chunked()
        if ns != "refl":
            return self.send_json(404, status(404, "NotFound", "namespace " + ns))
        n = bump("refl-watch")
        want = {1: "100", 2: "151", 3: "200", 4: "201", 5: "300"}.get(n, "300")
        if rv != want:
            return self.send_json(400, status(400, "BadRequest", "watch %d: resourceVersion %s, want %s" % (n, rv, want)))
        if n == 1:
            self.start_chunked()
            data = ev("MODIFIED", cm("a", 101, owner="fc1"))
            self.chunk(data[:30])
            self.chunk(data[30:] + ev("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1",
                                                   "metadata": {"resourceVersion": "150"}}))
            self.chunk(ev("ADDED", cm("d", 151, cluster="fc2")))
            return self.end_chunked()
        if n == 2:
            self.start_chunked()
            self.chunk(ev("DELETED", cm("c", 160, cluster="fc2")))  # the middle of the set {b, c, d}
            self.chunk(ev("ERROR", status(410, "Expired", "too old resource version: 151 (190)")))
            return self.end_chunked()
        if n == 3:
            self.start_chunked()
            self.chunk(ev("MODIFIED", cm("e", 201)))
            self.wfile.write(b"40\r\n{\"type\":")    # a chunk cut short, then the connection drops
            self.wfile.flush()
            self.close_connection = True
            return None
        if n == 4:
            return self.send_json(410, status(410, "Expired", "too old resource version: 201 (290)"))
        self.start_chunked()
        self.chunk(ev("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": "300"}}))
        for _ in range(40):
            time.sleep(0.1)
        return self.end_chunked()


def end_bookmark(rv):
    return ev("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1",
                           "metadata": {"resourceVersion": str(rv), "annotations": {"k8s.io/initial-events-end": "true"}}})


def watch_list_answer(h, ns, q, rv):
    """Watch-lists (sendInitialEvents=true): "wl" streams them (its 1st watch-list from the cache,
    resourceVersion=0; the 2nd, after a 410, consistent: no resourceVersion); "wlno" refuses them
    (422, the WatchList feature off); "wlold" ignores them (before 1.27: a plain watch, whose
    bookmark carries no end annotation). A plain watch from another resourceVersion than the
    one expected: 400."""
    initial = q.get("sendInitialEvents") == "true"
    if initial and q.get("resourceVersionMatch") != "NotOlderThan":
        return h.send_json(400, status(400, "BadRequest", "sendInitialEvents needs resourceVersionMatch=NotOlderThan"))
    if ns == "wlno":
        if initial:
            return h.send_json(422, status(422, "Invalid", "sendInitialEvents is forbidden for watch unless the "
                                                           "WatchList feature gate is enabled"))
    elif ns == "wlold":
        if initial:
            h.start_chunked()
            h.chunk(ev("ADDED", cm("x", 8, "wlold")))
            h.chunk(ev("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}}))
            time.sleep(0.5)
            return h.end_chunked()
    else:
        n = bump("wl-watch")
        want = {1: (True, "0"), 2: (False, "101"), 3: (True, ""), 4: (False, "200")}.get(n, (False, "200"))
        if (initial, rv) != want:
            return h.send_json(400, status(400, "BadRequest", "wl watch %d: sendInitialEvents %s resourceVersion '%s', "
                                                              "want %s '%s'" % (n, initial, rv, want[0], want[1])))
        if n == 1:
            h.start_chunked()
            # the initial events in no order of resourceVersion, one cut across chunks
            data = ev("ADDED", cm("b", 12, "wl", cluster="fc2")) + ev("ADDED", cm("a", 10, "wl", owner="fc1"))
            h.chunk(data[:45])
            h.chunk(data[45:] + ev("ADDED", cm("c", 11, "wl", cluster="fc2")))
            h.chunk(end_bookmark(100))
            h.chunk(ev("MODIFIED", cm("a", 101, "wl", owner="fc1")))
            time.sleep(0.2)
            return h.end_chunked()
        if n == 2:
            h.start_chunked()
            h.chunk(ev("ERROR", status(410, "Expired", "too old resource version: 101 (190)")))
            return h.end_chunked()
        if n == 3:
            h.start_chunked()
            h.chunk(ev("ADDED", cm("a", 101, "wl", owner="fc1")) + ev("ADDED", cm("d", 150, "wl", cluster="fc2")))
            h.chunk(end_bookmark(200))
            time.sleep(0.3)
            return h.end_chunked()
    # a plain watch from the list's resourceVersion: a bookmark, then silence
    if ns in ("wlno", "wlold") and rv != "500":
        return h.send_json(400, status(400, "BadRequest", "%s: resourceVersion '%s', want 500" % (ns, rv)))
    h.start_chunked()
    h.chunk(ev("BOOKMARK", {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": rv or "1"}}))
    for _ in range(40):
        time.sleep(0.1)
    return h.end_chunked()


def main():
    certdir = sys.argv[1]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(certdir, "server.crt"), os.path.join(certdir, "server.key"))
    ctx.load_verify_locations(os.path.join(certdir, "ca.crt"))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    sys.stdout.write("%d\n" % srv.server_address[1])
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)    # the test closes its end of the pipe once it has the port
    threading.Timer(120, lambda: os._exit(0)).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
