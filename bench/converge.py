#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/converge.py: how fast and how lightly `flink-controller run` makes N FlinkClusters real on
the test API server (kwok nodes), beside the API server's own ceiling for the same objects.

Run by bench/converge (it brings the test environment up and sources its env.sh); by hand:
  . build/testenv-bench/env.sh && python3 bench/converge.py N [options]

Phases, one controller process, on the run's namespace only (--namespace), or with
--namespaces K on all namespaces (no --namespace, as the cluster-wide Deployment) and the N clusters
spread over K namespaces of equal size:
  idle      the controller on an empty namespace: start to ready, RSS after 3 s (then stopped);
  converge  N FlinkClusters created first, then the controller started: seconds from its start
            until every child exists (watch ADDED events), until every FlinkCluster has a
            status, until all are Running; the first reconcile's latency from exec; writes;
  update    every cluster's spec.taskManager.replicas 1 -> 2 (16 concurrent patches): seconds
            until every TaskManager StatefulSet says 2, and the writes it took;
  steady    STEADY seconds of nothing changing: writes and CPU (% of one core);
  ceiling   with the controller stopped: the same rendered objects applied (server-side apply,
            16 concurrent clients) into a second namespace, then one status write per cluster:
            the API server's own time for the same work (K namespaces likewise);
            --ceiling-only runs this phase alone on a fresh environment, --ceiling-clients C
            with C clients (the controller keeps up to 64 requests in flight); a 429, or a
            timeout (500, 503, 504) of a GET or PATCH, is waited out and sent again, counted in
            "retried";
  bare      before it, the same ceiling with kube-controller-manager paused (SIGSTOP: no pod is
            made, the API server's own work alone) at 16 and 64 clients (--bare-clients), into
            namespaces of its own; the ratios of the controller's times to both ceilings.
--replicas R (R > 1) runs R controllers at once instead, each with `--shards R --shard-index i`
(docs/sharding.md), the Leases in the (first) namespace, and `--log-level debug` (one "written"
line per write): the converge phase (figures from the first one's start), --kill-one-at F
SIGKILLs the last replica once a fraction F of the clusters have all their children, the steady
phase's writes and CPU per replica, then a sweep: lost (clusters without all their children or
never Running), duplicate (a cluster's writes by time, from the logs, changing writer other than
once from the killed replica, all its writes before the kill, to its shard's taker) and
orphaned (objects labelled `cluster` whose controller owner is no FlinkCluster), printed as
"lost L duplicate D orphaned O". No idle, update, ceiling or bare phase.
Prints one JSON line (prefixed "converge-json: ") and a table. A benchmark, not a test: it
asserts nothing but that the run finished.
"""
import argparse
import calendar
import http.client
import json
import os
import re
import shlex
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FC_BIN = os.environ.get("FC_BIN", os.path.join(ROOT, "build", "flink-controller"))
CLIENTS = 16  # concurrent clients of the load generator and of the ceiling
GROUP = "/apis/flinkoperator.k8s.io/v1beta1"


class Api:
    """A small client of the test API server: the admin client certificate, one keep-alive
    connection per thread. request() -> (status, decoded JSON body or None), a 429 and the TIMEOUTS
    of an IDEMPOTENT request waited out and sent again (counted in .retried by status)."""

    def __init__(self):
        url = urllib.parse.urlparse(os.environ["KUBE_APISERVER_URL"])
        self.host, self.port = url.hostname, url.port
        pki = os.path.join(os.environ["TESTENV_DIR"], "pki")
        self.ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
        self.ctx.load_cert_chain(os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key"))
        self.local = threading.local()
        self.lock = threading.Lock()
        self.retried = {}  # HTTP status -> requests sent again after it

    def conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=120)
            self.local.c = c
        return c

    # Answers a loaded API server gives for a request it may well take when asked again: 429 (priority
    # and fairness: refused before any work, any verb; wait its Retry-After) and the timeouts
    # 500/503/504 (etcd or the request's own deadline; the controller requeues those too), these
    # only for GET and PATCH (an apply or a merge patch gives the same object twice; a POST or a
    # DELETE that timed out may have been done). Waited out with Retry-After or 1, 2, 4, 8 s.
    TIMEOUTS = (500, 503, 504)
    IDEMPOTENT = ("GET", "PATCH")
    ATTEMPTS = 8

    def request(self, method, path, body=None, ctype="application/json"):
        data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        for attempt in range(self.ATTEMPTS):
            c = self.conn()
            try:
                c.request(method, path, body=data, headers={"Content-Type": ctype, "Accept": "application/json"})
                r = c.getresponse()
                raw = r.read()
            except (http.client.HTTPException, OSError):
                c.close()
                self.local.c = None
                if attempt == self.ATTEMPTS - 1:
                    raise
                continue
            resend = r.status == 429 or (r.status in self.TIMEOUTS and method in self.IDEMPOTENT)
            if resend and attempt < self.ATTEMPTS - 1:
                with self.lock:
                    self.retried[r.status] = self.retried.get(r.status, 0) + 1
                time.sleep(float(r.getheader("Retry-After") or min(2 ** attempt, 8)))
                continue
            try:
                return r.status, json.loads(raw) if raw else None
            except ValueError:
                return r.status, None

    def must(self, method, path, body=None, ctype="application/json", ok=(200, 201, 202)):
        st, doc = self.request(method, path, body, ctype)
        if st not in ok:
            raise RuntimeError("%s %s: HTTP %d: %s" % (method, path, st, (doc or {}).get("message", doc)))
        return doc

    def stream(self, path):
        """A watch: yields each event (decoded) until the stream ends."""
        c = http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=3600)
        c.request("GET", path, headers={"Accept": "application/json"})
        r = c.getresponse()
        if r.status != 200:
            raise RuntimeError("watch %s: HTTP %d" % (path, r.status))
        while True:
            line = r.readline()
            if not line:
                return
            yield json.loads(line)


# the collection path of each kind the controller writes (namespaced)
PATHS = {
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "Service": "/api/v1/namespaces/{ns}/services",
    "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "Ingress": "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
    "FlinkCluster": GROUP + "/namespaces/{ns}/flinkclusters",
}


def manifest(name, variant):
    """One FlinkCluster: a small session cluster (300Mi, 100m per pod, as the integration cases'
    small_cluster) or the same with a job (the WordCount jar of the Flink image)."""
    res = {"limits": {"memory": "300Mi", "cpu": "100m"}}
    spec = {
        "image": {"name": "flink:1.20.5"},
        "jobManager": {"resources": res, "memoryOffHeapMin": "100M"},
        "taskManager": {"replicas": 1, "resources": res, "memoryOffHeapMin": "100M"},
    }
    if variant == "job":
        spec["job"] = {"jarFile": "./examples/streaming/WordCount.jar", "parallelism": 1}
    return {"apiVersion": "flinkoperator.k8s.io/v1beta1", "kind": "FlinkCluster",
            "metadata": {"name": name}, "spec": spec}


def names(n):
    return ["c%05d" % i for i in range(1, n + 1)]


def spread(clusters, namespaces):
    """{cluster name: its namespace}: consecutive blocks of equal size, one per namespace."""
    k, n = len(namespaces), len(clusters)
    return {c: namespaces[i * k // n] for i, c in enumerate(clusters)}


def collection_path(kind, namespaces):
    """The path to list or watch a kind in `namespaces`: that namespace's collection when there is
    one, else the collection over all namespaces (the caller skips the others)."""
    if len(namespaces) == 1:
        return PATHS[kind].format(ns=namespaces[0])
    return PATHS[kind].replace("/namespaces/{ns}", "")


def parallel(fn, items, clients=CLIENTS):
    with ThreadPoolExecutor(clients) as ex:
        return list(ex.map(fn, items))


def make_namespace(api, ns):
    ann = {}
    for word in os.environ.get("TESTENV_KWOK_NS_ANNOTATIONS", "").split():
        k, _, v = word.partition("=")
        ann[k] = v
    api.must("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": ns, "annotations": ann}})


def delete_namespace(api, ns, wait_s=0):
    api.request("DELETE", "/api/v1/namespaces/" + ns)
    end = time.time() + wait_s
    while time.time() < end:
        if api.request("GET", "/api/v1/namespaces/" + ns)[0] == 404:
            return True
        time.sleep(1)
    return wait_s == 0


def kwok_nodes(api, n_pods, prefix):
    """Extra kwok nodes (copies of the environment's, 2,000 pods each) so that every pod of the
    run is scheduled; returns their names."""
    extra = max(0, -(-n_pods // 1800) - 1)
    made = []
    node = api.must("GET", "/api/v1/nodes/" + os.environ.get("TESTENV_KWOK_NODE", "testenv-node-0"))
    for i in range(extra):
        name = "%s-%d" % (prefix, i)
        labels = dict(node["metadata"].get("labels", {}))
        labels["kubernetes.io/hostname"] = name
        obj = {"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": labels, "annotations": node["metadata"].get("annotations", {})},
               "spec": {"taints": node["spec"].get("taints", [])},
               "status": {"allocatable": node["status"]["allocatable"], "capacity": node["status"]["capacity"]}}
        api.must("POST", "/api/v1/nodes", obj)
        made.append(name)
    return made


def stat_cpu(pid):
    """(name, CPU seconds: utime + stime) of a pid from /proc/<pid>/stat."""
    with open("/proc/%s/stat" % pid) as f:
        head, rest = f.read().rsplit(")", 1)
    fields = rest.split()
    return head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / Proc.TICK


class Proc:
    """CPU seconds (utime+stime) and RSS of a pid from /proc; a sampler thread keeps the peak."""
    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, pid):
        self.pid, self.peak_kib, self.stop = pid, 0, False
        threading.Thread(target=self.sample, daemon=True).start()

    def cpu(self):
        return stat_cpu(self.pid)[1]

    def rss_kib(self, key="VmRSS"):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return 0

    def sample(self):
        while not self.stop:
            try:
                self.peak_kib = max(self.peak_kib, self.rss_kib("VmHWM"))
            except OSError:
                return
            time.sleep(0.2)


class Controller:
    """`flink-controller run` on one namespace (None: all namespaces), its log in `log`, its
    /metrics read by metric()."""

    def __init__(self, ns, log, extra):
        self.log = log
        self.t_exec = time.time()
        # BENCH_WRAP: a command put before the controller's (e.g. "heaptrack -o /tmp/fc"), for a
        # diagnosis; CPU and RSS are then the wrapper's process, not comparable figures
        self.p = subprocess.Popen(
            shlex.split(os.environ.get("BENCH_WRAP", "")) + [FC_BIN, "run", "--kubeconfig", os.environ["KUBECONFIG"]] +
            (["--namespace", ns] if ns else []) +
            ["--flink-base-url", os.environ["FLINK_REST_URL"],
             "--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0"] + extra,
            stdin=subprocess.DEVNULL, stdout=open(log, "ab"), stderr=subprocess.STDOUT,
            start_new_session=True)  # its own process group: a wrapper's children go with it
        self.proc = Proc(self.p.pid)
        self.port = None

    def metrics_port(self, timeout=10):
        end = time.time() + timeout
        while self.port is None and time.time() < end:
            with open(self.log, errors="replace") as f:
                m = re.search(r"metrics_port=(\d+)", f.read())
            if m:
                self.port = int(m.group(1))
            else:
                time.sleep(0.005)
        return self.port

    def metrics(self):
        c = http.client.HTTPConnection("127.0.0.1", self.metrics_port(), timeout=120)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        return text

    def samples(self, name, text=None):
        """Yields (labels dict, value) of each sample of `name` in a scrape."""
        for line in (text or self.metrics()).splitlines():
            if not line.startswith(name) or line.startswith("#"):
                continue
            m = re.match(r"^(\w+)(\{[^}]*\})?\s+(\S+)$", line)
            if m and m.group(1) == name:
                yield dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")), float(m.group(3))

    def metric(self, name, text=None, **labels):
        """Sum of the samples of `name` whose labels include `labels`."""
        return sum(v for got, v in self.samples(name, text) if all(got.get(k) == x for k, x in labels.items()))

    def heap_mib(self, text=None):
        """malloc's heap in MiB by state, from flink_controller_heap_bytes."""
        return {st: round(self.metric("flink_controller_heap_bytes", text, state=st) / 2**20, 1)
                for st in ("in_use", "free")}

    def writes(self, text=None):
        """API writes by verb (every verb but GET) from flink_controller_api_requests_total."""
        out = {}
        for verb in ("POST", "PUT", "PATCH", "DELETE"):
            v = int(self.metric("flink_controller_api_requests_total", text, verb=verb))
            if v:
                out[verb] = v
        return out

    def by_label(self, name, label, text=None):
        """{label value: sum of the samples of `name`} (e.g. watch events by kind)."""
        out = {}
        for got, v in self.samples(name, text):
            if label in got:
                out[got[label]] = out.get(got[label], 0) + v
        return out

    def activity(self, text=None):
        """What the controller did so far, from one /metrics scrape: watch events by kind
        ("events"), passes, watch restarts by kind ("restarts") and event loop iterations
        ("loops": many of them with nothing else moving is a busy loop)."""
        text = text or self.metrics()
        return {"events": self.by_label("flink_controller_watch_events_total", "kind", text),
                "passes": int(self.metric("flink_controller_reconcile_total", text)),
                "restarts": self.by_label("flink_controller_watch_restarts_total", "kind", text),
                "loops": int(self.metric("flink_controller_loop_iterations_total", text))}

    def close(self):
        self.proc.stop = True
        self.signal(signal.SIGTERM)
        try:
            self.p.wait(15)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.p.wait()

    def signal(self, sig):
        try:
            os.killpg(self.p.pid, sig)
        except ProcessLookupError:
            pass


class Watcher:
    """Watches one kind in a list of namespaces (one: that namespace's collection; more: the
    collection over all namespaces, other namespaces' objects skipped) from a resourceVersion and
    records, per object ("namespace/name"), the first time it was seen, the first time its `pred`
    held, and calls nothing else."""

    def __init__(self, api, namespaces, kind, rv, pred=None):
        self.seen, self.held, self.pred = {}, {}, pred
        self.namespaces = set(namespaces)
        self.api = api
        self.path = collection_path(kind, namespaces)
        self.rv = rv
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while True:
            try:
                for ev in self.api.stream(self.path + "?watch=1&allowWatchBookmarks=true&resourceVersion=" + self.rv):
                    o = ev.get("object", {})
                    self.rv = o.get("metadata", {}).get("resourceVersion", self.rv)
                    if ev.get("type") not in ("ADDED", "MODIFIED"):
                        continue
                    md = o["metadata"]
                    if md.get("namespace") not in self.namespaces:
                        continue
                    name, now = md["namespace"] + "/" + md["name"], time.time()
                    self.seen.setdefault(name, now)
                    if self.pred and name not in self.held and self.pred(o):
                        self.held[name] = now
            except (RuntimeError, OSError, http.client.HTTPException, ValueError):
                time.sleep(0.5)


def log_time_of(ts):
    """Epoch seconds of a log line's time ("2026-11-30T07:00:42.123Z")."""
    head, _, frac = ts.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(head, "%Y-%m-%dT%H:%M:%S")) + float("0." + (frac or "0"))


def log_time(log, text):
    """The time (epoch seconds) of the first line of the controller's log holding `text`, or None."""
    with open(log, errors="replace") as f:
        for line in f:
            if text in line:
                m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z", line)
                if m:
                    return calendar.timegm(time.strptime(m.group(1).split(".")[0], "%Y-%m-%dT%H:%M:%S")) + \
                        float("0." + (m.group(1).split(".") + ["0"])[1])
    return None


def wait_for(check, timeout, step=0.2):
    end = time.time() + timeout
    while time.time() < end:
        if check():
            return True
        time.sleep(step)
    return check()


def list_rv(api, kind, namespaces):
    return api.must("GET", collection_path(kind, namespaces) + "?limit=1")["metadata"]["resourceVersion"]


ENV_PROCS = ("kube-apiserver", "etcd", "kube-controller", "kube-scheduler", "kwok")


def env_cpu():
    """CPU seconds so far of the test environment's control-plane processes, by name (/proc)."""
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            name, cpu = stat_cpu(pid)
        except OSError:
            continue
        if name in ENV_PROCS:
            out[name] = out.get(name, 0) + cpu
    return out


def cpu_since(before):
    now = env_cpu()
    return {k: round(now[k] - before.get(k, 0), 1) for k in sorted(now)}


# documents per `render` call: its Lua state is capped (FLINK_CONTROLLER_LUA_MEMORY_MIB, 128 MiB),
# and 10,000 documents' input, trees and output text do not fit in it
RENDER_CHUNK = 1000


def render(ns, clusters, variant):
    """The objects `flink-controller render` makes of the clusters (the ceiling's work)."""
    objs = []
    for i in range(0, len(clusters), RENDER_CHUNK):
        stream = "".join("---\n" + json.dumps(manifest(n, variant)) + "\n" for n in clusters[i:i + RENDER_CHUNK])
        out = subprocess.run([FC_BIN, "render", "-f", "-", "-o", "json"], input=stream.encode(),
                             capture_output=True, check=True).stdout
        objs += json.loads(out)["items"]
    for o in objs:
        o["metadata"]["namespace"] = ns
    return objs


def ceiling(api, home, variant, clients, progress):
    """Seconds the API server takes for the same objects from `clients` concurrent clients
    (server-side apply, as the controller writes), then for one status write per cluster.
    home: {cluster name: its namespace}; progress: a dict, its "applied" and "status" counts kept
    up to date (what an interrupted run prints)."""
    clusters = list(home)
    parallel(lambda n: api.must("POST", PATHS["FlinkCluster"].format(ns=home[n]), manifest(n, variant)), clusters)
    objs = []
    for ns in sorted(set(home.values())):
        objs += render(ns, [n for n in clusters if home[n] == ns], variant)

    def apply(o):
        path = PATHS[o["kind"]].format(ns=o["metadata"]["namespace"]) + "/" + o["metadata"]["name"] + \
            "?fieldManager=bench&force=true"
        api.must("PATCH", path, json.dumps(o), "application/apply-patch+yaml")
        progress["applied"] = progress.get("applied", 0) + 1

    cpu0 = env_cpu()
    with api.lock:
        retried0 = dict(api.retried)
    t0 = time.time()
    progress.update(objects=len(objs), t0=t0)
    parallel(apply, objs, clients)
    t_children = time.time() - t0

    def status(n):
        api.must("PATCH", PATHS["FlinkCluster"].format(ns=home[n]) + "/" + n + "/status",
                 {"status": {"state": "Creating"}}, "application/merge-patch+json")
        progress["status"] = progress.get("status", 0) + 1

    parallel(status, clusters, clients)
    with api.lock:
        retried = {str(k): v - retried0.get(k, 0) for k, v in api.retried.items() if v > retried0.get(k, 0)}
    return {"objects": len(objs), "children_s": round(t_children, 2), "status_s": round(time.time() - t0, 2),
            "env_cpu_s": cpu_since(cpu0), "retried": retried}


def testenv_pid(name):
    """The pid of the test environment's process `name` (tests/env/up.sh's pid file: "name pid
    start"), only while it is still that process (same start time, /proc/<pid>/stat field 22)."""
    with open(os.path.join(os.environ["TESTENV_DIR"], "pids")) as f:
        for line in f:
            got = line.split()
            if len(got) == 3 and got[0] == name:
                try:
                    with open("/proc/%s/stat" % got[1]) as st:
                        if st.read().rsplit(")", 1)[1].split()[19] == got[2]:
                            return int(got[1])
                except (OSError, IndexError):
                    pass
    return None


class Paused:
    """The pod-making controllers paused (kube-controller-manager: StatefulSets', Jobs' and
    Deployments' pods, EndpointSlices, the garbage collector) by SIGSTOP, continued by SIGCONT on
    leaving, also on an error. The API server's own work alone: the bare ceiling."""

    def __init__(self, names=("kube-controller-manager",)):
        self.pids = [p for p in (testenv_pid(n) for n in names) if p]
        if len(self.pids) != len(names):
            raise RuntimeError("bare ceiling: no %s in %s/pids" % (" or ".join(names), os.environ["TESTENV_DIR"]))

    def __enter__(self):
        for p in self.pids:
            os.kill(p, signal.SIGSTOP)
        return self

    def __exit__(self, *exc):
        for p in self.pids:
            try:
                os.kill(p, signal.SIGCONT)  # a second time is harmless
            except ProcessLookupError:
                pass
        return False


def bare_ceilings(api, clusters, namespaces, variant, clients_list, progress):
    """The bare ceiling: `ceiling` with no controller and kube-controller-manager paused, into
    fresh namespaces (one set per entry of clients_list, e.g. 16 and 64 clients), which are
    deleted while it is still paused (a terminating namespace admits no pod, so its StatefulSets'
    pods are never made) and awaited after. -> {"16": ceiling result, ...}, "deleted": bool."""
    out, made = {}, []
    with Paused():
        for k in clients_list:
            nss = ["%s-bare%d" % (x, k) for x in namespaces]
            for x in nss:
                make_namespace(api, x)
            made += nss
            progress.clear()
            out[str(k)] = ceiling(api, spread(clusters, nss), variant, k, progress)
        for x in made:
            delete_namespace(api, x)
    out["deleted"] = all([delete_namespace(api, x, 900) for x in made])
    return out


# the writes of the API server's apiserver_request_total (verb label) and the kinds the
# controller writes (resource label); others' writes to them counted too (the controller-manager's
# ControllerRevisions of the StatefulSets and its Events)
WRITE_VERBS = ("POST", "APPLY", "PATCH", "PUT", "DELETE")  # as the API server names them (CleanVerb)
WRITE_RESOURCES = ("configmaps", "services", "statefulsets", "jobs", "ingresses", "controllerrevisions",
                   "events", "flinkclusters", "pods")


def apiserver_writes(api):
    """{"resource[/subresource] VERB": count} of the API server's apiserver_request_total so far, or
    None when the scrape failed."""
    # a connection of its own: the thread's keep-alive one may have been closed by the server
    # while idle (a converge phase of minutes)
    c = http.client.HTTPSConnection(api.host, api.port, context=api.ctx, timeout=120)
    try:
        c.request("GET", "/metrics", headers={"Accept": "text/plain"})
        text = c.getresponse().read().decode(errors="replace")
    except (OSError, http.client.HTTPException):
        return None
    finally:
        c.close()
    out = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
        if labels.get("verb") not in WRITE_VERBS or labels.get("resource") not in WRITE_RESOURCES:
            continue
        key = labels["resource"] + ("/" + labels["subresource"] if labels.get("subresource") else "") + " " + labels["verb"]
        out[key] = out.get(key, 0) + float(line.rsplit(" ", 1)[1])
    return out


def writes_since(before, after, n):
    """Per cluster: the API server's writes since `before`, by resource and verb (None when
    either scrape failed)."""
    if before is None or after is None:
        return None
    return {k: round((v - before.get(k, 0)) / n, 2) for k, v in sorted(after.items()) if v > before.get(k, 0)}


def perf_record(pid, out):
    """perf recording pid (cpu-clock, call graphs) into out until perf_top."""
    return subprocess.Popen(["perf", "record", "-q", "-F", "999", "-e", "cpu-clock", "-g", "-o", out, "-p", str(pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def perf_top(perf, out):
    """Stops a perf_record and returns its top functions by self time (lines of perf report)."""
    perf.send_signal(2)
    perf.wait()
    rep = subprocess.run(["perf", "report", "-i", out, "--stdio", "--no-children", "--sort", "dso,symbol",
                          "-g", "none", "--percent-limit", "1.5", "-q"], capture_output=True, text=True).stdout
    return [" ".join(l.split()) for l in rep.splitlines() if l.strip()][:20]


# --replicas R: R controllers with `--shards R --shard-index i` (docs/sharding.md) ---------------

def list_all(api, path):
    """Every object of a collection, page by page (500 a page)."""
    out, cont = [], ""
    while True:
        page = api.must("GET", path + "?limit=500" + ("&continue=" + urllib.parse.quote(cont) if cont else ""))
        out += page.get("items", [])
        cont = page.get("metadata", {}).get("continue")
        if not cont:
            return out


def log_ts(t):
    """Epoch seconds as the controller's log writes its times (UTC, milliseconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int((t % 1) * 1000)


def writers(logs, killed, kill_ts):
    """From the replicas' debug logs (one "written" line per write, its time and cluster=): the
    clusters written by each replica and "duplicate", the clusters written by two replicas at
    once: in a cluster's writes by time, a change of writer is allowed only from the killed
    replica, all of whose writes for it came before the kill, to another (a shard taken over)."""
    writes = {}
    for i, log in enumerate(logs):
        with open(log, errors="replace") as f:
            for line in f:
                fields = line.split(" ", 3)
                if len(fields) < 3 or fields[2] != "written":
                    continue
                m = re.search(r" cluster=(\S+)", line)
                if m:
                    writes.setdefault(m.group(1), []).append((fields[0], i))
    dup, per, examples = 0, [0] * len(logs), []
    for c, ws in writes.items():
        ws.sort()
        seq = [w for k, (_, w) in enumerate(ws) if k == 0 or ws[k - 1][1] != w]
        for w in set(seq):
            per[w] += 1
        ok = len(seq) == 1 or (len(seq) == 2 and seq[0] == killed and
                               max(t for t, w in ws if w == killed) <= kill_ts)
        if not ok:
            dup += 1
            if len(examples) < 5:
                examples.append("%s: writers in turn %s" % (c, seq))
    return {"clusters_written": len(writes), "clusters_per_replica": per, "duplicate": dup,
            "duplicate_examples": examples}


def sweep(api, nss, clusters, home, suffixes, running):
    """lost: clusters without all their children or never Running; orphaned: objects labelled
    `cluster` whose controller owner is no FlinkCluster there."""
    have, orphaned, uids = set(), [], set()
    for o in list_all(api, collection_path("FlinkCluster", nss)):
        if o["metadata"]["namespace"] in nss:
            uids.add(o["metadata"]["uid"])
    for kind in sorted({k for k, _ in suffixes} | {"ConfigMap", "Service", "StatefulSet", "Job"}):
        for o in list_all(api, collection_path(kind, nss)):
            md = o["metadata"]
            if md.get("namespace") not in nss:
                continue
            have.add((kind, md["namespace"] + "/" + md["name"]))
            if "cluster" in md.get("labels", {}):
                owner = [x["uid"] for x in md.get("ownerReferences", []) if x.get("controller")]
                if not owner or owner[0] not in uids:
                    orphaned.append("%s/%s" % (kind, md["name"]))
    lost = [c for c in clusters
            if not all((k, home[c] + "/" + c + sfx) in have for k, sfx in suffixes)
            or home[c] + "/" + c not in running.held]
    return lost, orphaned


def replicas_run(a, api, r, nss, home, clusters, log, started, live):
    """The converge phase with a.replicas controllers, each `--shards R --shard-index i`
    (--log-level debug: its writes are in its log), the Leases in the first namespace; then the
    steady phase and the sweep. Fills r."""
    R = a.replicas
    for x in nss:
        make_namespace(api, x)
    t = time.time()
    parallel(lambda n: api.must("POST", PATHS["FlinkCluster"].format(ns=home[n]), manifest(n, a.variant)), clusters)
    r["create_s"] = round(time.time() - t, 2)
    one = render(nss[0], clusters[:1], a.variant)
    suffixes = [(o["kind"], o["metadata"]["name"][len(clusters[0]):]) for o in one]
    kinds, per_cluster = sorted({o["kind"] for o in one}), len(one)
    watch = {kd: Watcher(api, nss, kd, list_rv(api, kd, nss)) for kd in kinds if kd != "FlinkCluster"}
    fc = Watcher(api, nss, "FlinkCluster", "0", lambda o: bool(o.get("status", {}).get("state")))
    running = Watcher(api, nss, "FlinkCluster", "0", lambda o: o.get("status", {}).get("state") == "Running")
    cpu0 = env_cpu()
    logs = ["%s.replica%d" % (log, i) for i in range(R)]
    cs = []
    for i in range(R):
        c = Controller(nss[0] if len(nss) == 1 else None, logs[i], a.controller_args + [
            "--shards", str(R), "--shard-index", str(i), "--leader-election-namespace", nss[0],
            "--log-level", "debug"])
        started.append(c.p)
        cs.append(c)
    t0 = cs[0].t_exec
    want = per_cluster * a.n
    children = lambda: sum(len(w.seen) for w in watch.values())
    live.update(c=cs[0], t0=t0, children=children, want=want, fc=fc, running=running, cpu0=cpu0)

    def with_children():
        return sum(1 for c in clusters
                   if all(home[c] + "/" + c + sfx in watch[k].seen for k, sfx in suffixes))

    killed, kill_ts = None, "~"  # "~" sorts after every time: no kill
    if a.kill_one_at is not None:
        wait_for(lambda: with_children() >= a.kill_one_at * a.n, a.timeout, 0.5)
        killed = R - 1
        k = cs[killed]
        k.proc.stop = True
        r["killed_replica_peak_rss_mib"] = round(k.proc.rss_kib("VmHWM") / 1024, 1)
        r["killed_replica_cpu_s"] = round(k.proc.cpu(), 2)
        try:
            r["killed_replica_writes"] = k.writes()
        except (OSError, http.client.HTTPException):
            pass
        k.signal(signal.SIGKILL)
        k.p.wait()
        tk = time.time()
        kill_ts = log_ts(tk)
        r["killed_replica"] = killed
        r["kill_at_s"] = round(tk - t0, 2)
        r["kill_at_clusters_with_children"] = with_children()
    alive = [c for i, c in enumerate(cs) if i != killed]
    ok = wait_for(lambda: children() >= want, a.timeout)
    r["children_s"] = round(max(t for w in watch.values() for t in w.seen.values()) - t0, 2) if ok else None
    ok = wait_for(lambda: len(fc.held) >= a.n, a.timeout)
    r["status_s"] = round(max(fc.held.values()) - t0, 2) if ok else None
    ok = wait_for(lambda: len(running.held) >= a.n, a.running_timeout)
    r["running_s"] = round(max(running.held.values()) - t0, 2) if ok else None
    r["env_cpu_s"] = cpu_since(cpu0)
    wait_for(lambda: False, 5)
    reps = []
    for i, c in enumerate(cs):
        if i == killed:
            reps.append({"replica": i, "killed": True, "cpu_s": r["killed_replica_cpu_s"],
                         "peak_rss_mib": r["killed_replica_peak_rss_mib"], "writes": r.get("killed_replica_writes")})
            continue
        text = c.metrics()
        owned = sorted(int(l["shard"]) for l, v in c.samples("flink_controller_shard_owned", text) if v == 1)
        reps.append({"replica": i, "cpu_s": round(c.proc.cpu(), 2), "peak_rss_mib": round(c.proc.peak_kib / 1024, 1),
                     "rss_converged_mib": round(c.proc.rss_kib() / 1024, 1), "writes": c.writes(text),
                     "shards_owned": owned,
                     "shard_clusters": int(sum(v for l, v in c.samples("flink_controller_shard_clusters", text)
                                               if l.get("shard") in {str(x) for x in owned}))})
    total = sum(sum((x["writes"] or {}).values()) for x in reps)
    r["writes_per_cluster"] = round(total / a.n, 2)
    if a.steady > 0:
        last, quiet_since = [c.writes() for c in alive], time.time()
        while time.time() - quiet_since < 10 and time.time() - t0 < a.timeout:
            time.sleep(1)
            w = [c.writes() for c in alive]
            if w != last:
                last, quiet_since = w, time.time()
        cpu_a, t = [c.proc.cpu() for c in alive], time.time()
        time.sleep(a.steady)
        t1 = time.time()
        for c, w0, c0 in zip(alive, last, cpu_a):
            x = next(x for x in reps if x["replica"] == cs.index(c))
            x["steady_writes"] = sum(c.writes().values()) - sum(w0.values())
            x["steady_cpu_pct"] = round(100 * (c.proc.cpu() - c0) / (t1 - t), 2)
        r["steady_s"] = a.steady
    for x, c in zip(reps, cs):
        if not x.get("killed"):
            x["peak_rss_mib"] = round(c.proc.peak_kib / 1024, 1)
    r["replicas_detail"] = reps
    if killed is not None:
        # the killed replica's shard owned again: the first "shard acquired" of it after the kill
        took = [ts for lg in (logs[i] for i in range(R) if i != killed) for ts in
                [line.split(" ", 1)[0] for line in open(lg, errors="replace")
                 if '"shard acquired"' in line and " shard=%d" % killed in line] if ts > kill_ts]
        t = log_time_of(min(took)) if took else None
        r["takeover_s"] = round(t - tk, 2) if t else None
    lost, orphaned = sweep(api, nss, clusters, home, suffixes, running)
    w = writers(logs, killed, kill_ts)
    r["lost"], r["orphaned"], r["duplicate"] = len(lost), len(orphaned), w["duplicate"]
    r["lost_examples"], r["orphaned_examples"] = lost[:5], orphaned[:5]
    r["duplicate_examples"] = w["duplicate_examples"]
    r["clusters_written"], r["clusters_per_replica"] = w["clusters_written"], w["clusters_per_replica"]
    for c in alive:
        c.close()
    return r


def replicas_report(a, r):
    print("converge-json: " + json.dumps(r, sort_keys=True))
    rows = [
        ("FlinkClusters (%s), namespaces" % a.variant, "%d, %d" % (a.n, r["namespaces"])),
        ("replicas (--shards R --shard-index i)", a.replicas),
        ("controller flags", r["controller_args"] or "(defaults)"),
        ("replica killed (SIGKILL) at, s / clusters with children",
         "%s at %s / %s" % (r.get("killed_replica"), r.get("kill_at_s"), r.get("kill_at_clusters_with_children"))
         if r.get("killed_replica") is not None else None),
        ("killed replica's shard owned again after, s", r.get("takeover_s")),
        ("all children exist, s", r.get("children_s")),
        ("every status written, s", r.get("status_s")),
        ("all Running, s", r.get("running_s")),
        ("writes per cluster (all replicas)", r.get("writes_per_cluster")),
        ("control plane CPU to all Running, s", r.get("env_cpu_s")),
        ("clusters written by each replica (logs)", r.get("clusters_per_replica")),
    ]
    for x in r.get("replicas_detail", []):
        rows.append(("replica %d%s: CPU s / peak RSS MiB / writes" % (x["replica"], " (killed)" if x.get("killed") else ""),
                     "%s / %s / %s" % (x.get("cpu_s"), x.get("peak_rss_mib"), x.get("writes"))))
        if not x.get("killed"):
            rows.append(("replica %d: shards owned / their clusters / steady writes / steady CPU %%" % x["replica"],
                         "%s / %s / %s / %s" % (x.get("shards_owned"), x.get("shard_clusters"),
                                                x.get("steady_writes"), x.get("steady_cpu_pct"))))
    if r.get("interrupted"):
        rows[:0] = [("INTERRUPTED after, s", r.get("interrupted_after_s")),
                    ("children / statuses / Running seen", "%s / %s / %s" % (
                        r.get("children_seen"), r.get("status_seen"), r.get("running_seen")))]
    for k in ("lost_examples", "orphaned_examples", "duplicate_examples"):
        for e in r.get(k) or []:
            print("# %s: %s" % (k.split("_")[0], e))
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print("%-*s  %s" % (w, k, "-" if v is None else v))
    if "lost" in r:
        print("lost %d duplicate %d orphaned %d" % (r["lost"], r["duplicate"], r["orphaned"]))
    return 0 if r.get("children_s") is not None and r.get("lost") == 0 and r.get("duplicate") == 0 \
        and r.get("orphaned") == 0 else 1


def stop_on_signal(signum, frame):
    raise KeyboardInterrupt


def interrupted(r, live):
    """What a run stopped by SIGINT or SIGTERM had reached: the converge phase's counts so far and
    the controller's figures at that moment (a 10,000-cluster run can take longer than one has)."""
    r["interrupted"] = True
    cp = live.get("ceiling")
    if cp and cp.get("t0"):
        r["ceiling_reached"] = {"after_s": round(time.time() - cp["t0"], 1), "objects": cp["objects"],
                                "applied": cp.get("applied", 0), "status": cp.get("status", 0)}
    c = live.get("c")
    if not c or c.p.poll() is not None:
        return
    t = time.time()
    r["interrupted_after_s"] = round(t - live["t0"], 1)
    r["children_seen"] = "%d of %d" % (live["children"](), live["want"])
    r["status_seen"] = len(live["fc"].held)
    r["running_seen"] = len(live["running"].held)
    r.setdefault("env_cpu_s", cpu_since(live["cpu0"]))
    r["cpu_s"] = round(c.proc.cpu(), 2)
    r["peak_rss_mib"] = round(max(c.proc.peak_kib, c.proc.rss_kib("VmHWM")) / 1024, 1)
    r["rss_end_mib"] = round(c.proc.rss_kib() / 1024, 1)
    try:
        text = c.metrics()
    except (OSError, http.client.HTTPException):
        return
    r["writes"] = c.writes(text)
    r["cache_objects"] = int(c.metric("flink_controller_cache_objects", text))
    r["heap_mib"] = c.heap_mib(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="-- FLAGS: everything after -- goes to `flink-controller run`")
    ap.add_argument("n", type=int, nargs="?", default=1000, help="FlinkClusters (default 1000)")
    ap.add_argument("--variant", choices=("session", "job"), default="session")
    ap.add_argument("--steady", type=int, default=60, help="seconds of the steady phase (0: none)")
    ap.add_argument("--no-update", action="store_true", help="skip the update wave")
    ap.add_argument("--no-ceiling", action="store_true", help="skip the API server's ceiling")
    ap.add_argument("--ceiling-beside", action="store_true",
                    help="run the ceiling in a new namespace beside the converged one instead of after "
                         "deleting it (10,000 clusters: their garbage collection would take longer than "
                         "the ceiling and load the API server while it runs)")
    ap.add_argument("--namespaces", type=int, default=1, metavar="K",
                    help="spread the clusters over K namespaces of equal size and run the controller on "
                         "all namespaces (default 1: one namespace, the controller on it alone). "
                         "kube-controller-manager's StatefulSet controller scans a namespace's "
                         "ControllerRevisions on each sync and its EndpointSlice controller a "
                         "namespace's Services on each pod event, so 10,000 clusters in one "
                         "namespace make the control plane, not the controller, the bound")
    ap.add_argument("--ceiling-only", action="store_true",
                    help="the API server's ceiling alone, on a fresh environment (no controller)")
    ap.add_argument("--ceiling-clients", type=int, default=CLIENTS, metavar="C",
                    help="concurrent clients of the ceiling (default %d; the controller keeps up to "
                         "--workers, 64, requests in flight)" % CLIENTS)
    ap.add_argument("--bare-clients", default="16,64", metavar="C,C",
                    help="the bare ceiling's client counts (default 16,64): the same work with no "
                         "controller and kube-controller-manager paused (SIGSTOP), so no pod is made")
    ap.add_argument("--no-bare", action="store_true", help="skip the bare ceiling")
    ap.add_argument("--converge-paused", action="store_true",
                    help="keep kube-controller-manager paused from the controller's start until every "
                         "child and status exists (the bare ceiling's conditions: no pod is made "
                         "meanwhile, so one status write per cluster), then continue it for Running")
    ap.add_argument("--replicas", type=int, default=1, metavar="R",
                    help="R controllers at once, each with --shards R --shard-index i and --log-level "
                         "debug (docs/sharding.md): the converge phase, the steady phase per replica "
                         "and a sweep printing \"lost L duplicate D orphaned O\"; no idle, update or "
                         "ceiling phase")
    ap.add_argument("--kill-one-at", type=float, default=None, metavar="F",
                    help="with --replicas: SIGKILL the last replica once a fraction F (0 to 1) of the "
                         "clusters have all their children")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds each phase may take")
    ap.add_argument("--running-timeout", type=int, default=300,
                    help="seconds to wait for every cluster Running (the environment's pods: kwok, the "
                         "StatefulSet controller), then go on without the figure")
    ap.add_argument("--log", default=None, help="the controller's log file (default: a temporary one)")
    ap.add_argument("--perf", default=None, metavar="FILE",
                    help="record the converge phase with perf (cpu-clock, call graphs) into FILE and "
                         "print the top functions (self time)")
    ap.add_argument("--perf-steady", default=None, metavar="FILE",
                    help="record the steady phase with perf into FILE and print its top functions")
    # the flags for `flink-controller run` are everything after the first "--", split off here:
    # argparse alone refuses them when options stand between N and "--"
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    a.controller_args = argv[cut + 1:]
    try:
        a.bare_clients = [int(x) for x in a.bare_clients.split(",") if x]
    except ValueError:
        ap.error("--bare-clients: numbers separated by commas")
    if a.no_bare or a.no_ceiling:
        a.bare_clients = []
    api = Api()
    tag = "%d-%d" % (os.getpid(), int(time.time()) % 100000)
    ns, ns_idle, ns_ceiling = "bench-" + tag, "bench-idle-" + tag, "bench-ceiling-" + tag
    if a.namespaces < 1 or a.namespaces > a.n:
        ap.error("--namespaces: 1 to N")
    kns = a.namespaces
    nss = [ns] if kns == 1 else ["%s-%d" % (ns, i) for i in range(kns)]
    nss_ceiling = [ns_ceiling] if kns == 1 else ["%s-%d" % (ns_ceiling, i) for i in range(kns)]
    log = a.log or "/tmp/converge-%s.log" % tag
    clusters = names(a.n)
    r = {"n": a.n, "variant": a.variant, "namespaces": kns, "controller_args": " ".join(a.controller_args),
         "converge_paused": a.converge_paused,
         "ceiling_clients": a.ceiling_clients}
    home = spread(clusters, nss)
    if a.replicas < 1 or (a.kill_one_at is not None and (a.replicas < 2 or not 0 <= a.kill_one_at <= 1)):
        ap.error("--replicas: 1 or more; --kill-one-at: 0 to 1, with --replicas 2 or more")
    nodes = kwok_nodes(api, (4 if a.ceiling_beside else 2) * a.n, "bench-node-" + tag)
    started = []  # controllers and perf, stopped in any case
    live = {}  # the converge phase's state, for what an interrupted run prints
    signal.signal(signal.SIGTERM, stop_on_signal)
    try:
        if a.replicas > 1:
            r["replicas"] = a.replicas
            replicas_run(a, api, r, nss, home, clusters, log, started, live)
        elif a.ceiling_only:
            if a.bare_clients:
                live["ceiling"] = {}
                r["bare"] = bare_ceilings(api, clusters, nss_ceiling, a.variant, a.bare_clients, live["ceiling"])
            for x in nss_ceiling:
                make_namespace(api, x)
            live["ceiling"] = {}
            r["ceiling"] = ceiling(api, spread(clusters, nss_ceiling), a.variant, a.ceiling_clients, live["ceiling"])
        else:
            # idle: start to ready, RSS with nothing to do
            make_namespace(api, ns_idle)
            c = Controller(ns_idle, log + ".idle", a.controller_args)
            started.append(c.p)
            c.metrics_port()
            time.sleep(3)
            r["idle_rss_mib"] = round(c.proc.rss_kib() / 1024, 1)
            c.close()

            # converge
            for x in nss:
                make_namespace(api, x)
            t = time.time()
            parallel(lambda n: api.must("POST", PATHS["FlinkCluster"].format(ns=home[n]), manifest(n, a.variant)), clusters)
            r["create_s"] = round(time.time() - t, 2)
            one = render(ns, clusters[:1], a.variant)
            kinds, per_cluster = sorted({o["kind"] for o in one}), len(one)
            watch = {kd: Watcher(api, nss, kd, list_rv(api, kd, nss)) for kd in kinds if kd != "FlinkCluster"}
            fc = Watcher(api, nss, "FlinkCluster", "0",
                         lambda o: bool(o.get("status", {}).get("state")))
            running = Watcher(api, nss, "FlinkCluster", "0",
                              lambda o: o.get("status", {}).get("state") == "Running")
            cpu0 = env_cpu()
            aw0 = apiserver_writes(api)
            # --converge-paused: the controller's children and first statuses on the bare API
            # server (kube-controller-manager paused until then: no pod yet), as the bare ceiling
            paused = Paused() if a.converge_paused else None
            if paused:
                paused.__enter__()
                started.append(paused)
            c = Controller(ns if kns == 1 else None, log, a.controller_args)
            started.append(c.p)
            t0 = c.t_exec
            perf = None
            if a.perf:
                perf = perf_record(c.p.pid, a.perf)
                started.append(perf)
            want = per_cluster * a.n
            children = lambda: sum(len(w.seen) for w in watch.values())
            live.update(c=c, t0=t0, children=children, want=want, fc=fc, running=running, cpu0=cpu0)
            wait_for(lambda: children() > 0, a.timeout, 0.001)
            # start to first reconcile: exec until the API server has the first child it wrote
            r["first_reconcile_ms"] = round(1000 * (min(t for w in watch.values() for t in w.seen.values()) - t0), 1)
            ok = wait_for(lambda: children() >= want, a.timeout)
            r["children_s"] = round(max(t for w in watch.values() for t in w.seen.values()) - t0, 2) if ok else None
            ok = wait_for(lambda: len(fc.held) >= a.n, a.timeout)
            r["status_s"] = round(max(fc.held.values()) - t0, 2) if ok else None
            if paused:
                r["writes_paused"] = c.writes()
                paused.__exit__()
            # start to "caches synced" (the controller's log): a slow first list (seen: 60 s for
            # the FlinkClusters) delays every figure above by as much
            synced = log_time(log, "caches synced")
            r["synced_s"] = round(synced - t0, 2) if synced else None
            ok = wait_for(lambda: len(running.held) >= a.n, a.running_timeout)
            r["running_s"] = round(max(running.held.values()) - t0, 2) if ok else None
            r["env_cpu_s"] = cpu_since(cpu0)  # the control plane's CPU until every cluster Running
            wait_for(lambda: False, 5)  # the last status writes
            text = c.metrics()
            r["writes"] = c.writes(text)
            r["writes_per_cluster"] = round(sum(r["writes"].values()) / a.n, 2)
            # by kind, as the API server counted them (everyone's writes to those kinds meanwhile)
            r["apiserver_writes_per_cluster"] = writes_since(aw0, apiserver_writes(api), a.n)
            r["cpu_s"] = round(c.proc.cpu(), 2)
            r["peak_rss_mib"] = round(c.proc.peak_kib / 1024, 1)
            # where the memory is once converged: the compact caches' texts and the Lua state
            r["cache_kib_per_cluster"] = round(c.metric("flink_controller_cache_bytes", text) / 1024 / a.n, 2)
            r["cache_objects"] = int(c.metric("flink_controller_cache_objects", text))
            r["lua_mib"] = round(c.metric("flink_controller_lua_memory_bytes", text) / 2**20, 1)
            r["heap_mib"] = c.heap_mib(text)
            r["rss_converged_mib"] = round(c.proc.rss_kib() / 1024, 1)
            if perf:
                r["profile_top"] = perf_top(perf, a.perf)

            if not a.no_update:
                before = c.writes()
                sts = Watcher(api, nss, "StatefulSet", list_rv(api, "StatefulSet", nss),
                              lambda o: o["metadata"]["name"].endswith("-taskmanager") and o["spec"].get("replicas") == 2)
                t = time.time()
                parallel(lambda n: api.must("PATCH", PATHS["FlinkCluster"].format(ns=home[n]) + "/" + n,
                                            {"spec": {"taskManager": {"replicas": 2}}}, "application/merge-patch+json"),
                         clusters)
                ok = wait_for(lambda: len(sts.held) >= a.n, a.timeout)
                r["update_s"] = round(max(sts.held.values()) - t, 2) if ok else None
                wait_for(lambda: False, 5)
                after = c.writes()
                r["update_writes"] = {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) - before.get(k, 0)}

            if a.steady > 0:
                # quiet first: no write for 10 s (the last status writes of the wave)
                last, quiet_since = c.writes(), time.time()
                while time.time() - quiet_since < 10 and time.time() - t0 < a.timeout:
                    time.sleep(1)
                    w = c.writes()
                    if w != last:
                        last, quiet_since = w, time.time()
                act0 = c.activity()
                env0, cpu0, t = env_cpu(), c.proc.cpu(), time.time()
                sperf = perf_record(c.p.pid, a.perf_steady) if a.perf_steady else None
                if sperf:
                    started.append(sperf)
                time.sleep(a.steady)
                cpu1, t1 = c.proc.cpu(), time.time()
                text = c.metrics()
                if sperf:
                    r["steady_profile_top"] = perf_top(sperf, a.perf_steady)
                w = c.writes(text)
                act1 = c.activity(text)
                r["steady_s"] = a.steady
                r["steady_writes"] = sum(w.values()) - sum(last.values())
                r["steady_cpu_pct"] = round(100 * (cpu1 - cpu0) / (t1 - t), 2)
                # what the controller was given to do meanwhile: watch events by kind, passes,
                # watch restarts (each a new request, a relist on 410) and its loop's turns
                moved = lambda k: {x: int(v - act0[k].get(x, 0)) for x, v in act1[k].items() if v - act0[k].get(x, 0)}
                r["steady_watch_events"] = moved("events")
                r["steady_passes"] = act1["passes"] - act0["passes"]
                r["steady_watch_restarts"] = moved("restarts")
                r["steady_loops_per_s"] = round((act1["loops"] - act0["loops"]) / (t1 - t), 1)
                # and whether the control plane was quiet (CPU seconds of its processes)
                r["steady_env_cpu_s"] = cpu_since(env0)
            r["peak_rss_mib"] = round(c.proc.peak_kib / 1024, 1)
            r["rss_end_mib"] = round(c.proc.rss_kib() / 1024, 1)
            r["cpu_s_total"] = round(c.proc.cpu(), 2)
            c.close()
            delete_namespace(api, ns_idle)
        # the ceiling runs on a quiet API server: the namespace (and its GC) gone first; without
        # it, the namespace is deleted with the environment (no wait for 10,000 clusters' GC)
        if not a.no_ceiling and not a.ceiling_beside and not a.ceiling_only and a.replicas == 1:
            for x in nss:
                delete_namespace(api, x)  # all asked for first, then each awaited
            r["namespace_deleted"] = all([delete_namespace(api, x, 900) for x in nss])

        if not a.no_ceiling and not a.ceiling_only and a.replicas == 1:
            # the converge figures are in hand by now: a failing ceiling (e.g. an API error) is
            # reported beside them instead of losing them
            print("converge-partial: " + json.dumps(r), flush=True)
            try:
                if a.bare_clients:
                    live["ceiling"] = {}
                    r["bare"] = bare_ceilings(api, clusters, nss_ceiling, a.variant, a.bare_clients, live["ceiling"])
                live["ceiling"] = {}
                for x in nss_ceiling:
                    make_namespace(api, x)
                r["ceiling"] = ceiling(api, spread(clusters, nss_ceiling), a.variant, a.ceiling_clients,
                                       live["ceiling"])
            except (OSError, RuntimeError, ValueError, subprocess.CalledProcessError) as e:
                r["ceiling_error"] = "%s: %s" % (type(e).__name__, e)
            for x in nss_ceiling:
                delete_namespace(api, x)
    except KeyboardInterrupt:
        interrupted(r, live)
    finally:
        for p in started:
            if isinstance(p, Paused):
                p.__exit__()
            elif p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)  # a controller's group (its wrapper's children)
                except ProcessLookupError:
                    p.kill()
                p.wait()
        for n in nodes:
            api.request("DELETE", "/api/v1/nodes/" + n)
        bare_nss = ["%s-bare%d" % (x, k) for x in nss_ceiling for k in a.bare_clients]
        for n in set([ns, ns_idle, ns_ceiling] + nss + nss_ceiling + bare_nss):
            api.request("DELETE", "/api/v1/namespaces/" + n)
    if a.replicas > 1:
        return replicas_report(a, r)
    if r.get("ceiling") and r.get("children_s"):
        r["children_vs_ceiling"] = round(r["children_s"] / r["ceiling"]["children_s"], 2)
        if r.get("status_s"):
            r["status_vs_ceiling"] = round(r["status_s"] / r["ceiling"]["status_s"], 2)
    for k in a.bare_clients:
        b = (r.get("bare") or {}).get(str(k))
        if b and r.get("children_s"):
            r["children_vs_bare_%d" % k] = round(r["children_s"] / b["children_s"], 2)
            if r.get("status_s"):
                r["status_vs_bare_%d" % k] = round(r["status_s"] / b["status_s"], 2)
    bare_rows = []
    for k in a.bare_clients:
        b = (r.get("bare") or {}).get(str(k)) or {}
        bare_rows += [
            ("bare ceiling, %d clients: children / + status, s" % k, "%s / %s" % (b.get("children_s"), b.get("status_s"))),
            ("children / bare %d, status / bare %d" % (k, k),
             "%s / %s" % (r.get("children_vs_bare_%d" % k), r.get("status_vs_bare_%d" % k))),
            ("control plane CPU in bare %d, s" % k, b.get("env_cpu_s")),
        ]
    print("converge-json: " + json.dumps(r, sort_keys=True))
    rows = [
        ("FlinkClusters (%s)" % a.variant, a.n),
        ("namespaces", kns if kns == 1 or a.ceiling_only else "%d (controller on all)" % kns),
        ("controller flags", r["controller_args"] or "(defaults)"),
        ("converge with kube-controller-manager paused", r.get("converge_paused")),
        ("start to caches synced, s", r.get("synced_s")),
        ("all children exist, s", r.get("children_s")),
        ("every status written, s", r.get("status_s")),
        ("all Running, s", r.get("running_s")),
        ("API server ceiling: clients", r.get("ceiling_clients")),
        ("API server ceiling: children, s", (r.get("ceiling") or {}).get("children_s")),
        ("API server ceiling: + status, s", (r.get("ceiling") or {}).get("status_s")),
        ("children / ceiling", r.get("children_vs_ceiling")),
        ("status / ceiling", r.get("status_vs_ceiling")),
    ] + bare_rows + [
        ("writes by verb", r.get("writes")),
        ("API server's writes per cluster, by kind", r.get("apiserver_writes_per_cluster")),
        ("control plane CPU to all Running, s", r.get("env_cpu_s")),
        ("control plane CPU in the ceiling, s", (r.get("ceiling") or {}).get("env_cpu_s")),
        ("ceiling: requests sent again, by answer", (r.get("ceiling") or {}).get("retried")),
        ("writes per cluster", r.get("writes_per_cluster")),
        ("controller CPU to converge, s", r.get("cpu_s")),
        ("peak RSS, MiB", r.get("peak_rss_mib")),
        ("RSS once converged, MiB", r.get("rss_converged_mib")),
        ("cache: objects / KiB of text per cluster", "%s / %s" % (r.get("cache_objects"), r.get("cache_kib_per_cluster"))),
        ("Lua state once converged, MiB", r.get("lua_mib")),
        ("malloc heap once converged, MiB", r.get("heap_mib")),
        ("update wave (TM replicas 1 -> 2), s", r.get("update_s")),
        ("update wave writes", r.get("update_writes")),
        ("steady %s s: writes" % a.steady, r.get("steady_writes")),
        ("steady: CPU, % of one core", r.get("steady_cpu_pct")),
        ("steady: watch events by kind / passes", "%s / %s" % (r.get("steady_watch_events"), r.get("steady_passes"))),
        ("steady: watch restarts by kind / loop turns per s",
         "%s / %s" % (r.get("steady_watch_restarts"), r.get("steady_loops_per_s"))),
        ("steady: control plane CPU, s", r.get("steady_env_cpu_s")),
        ("start to first child written, ms", r.get("first_reconcile_ms")),
        ("idle RSS (no clusters), MiB", r.get("idle_rss_mib")),
    ]
    if r.get("interrupted"):
        rows[:0] = [("INTERRUPTED after, s", r.get("interrupted_after_s")),
                    ("children / statuses / Running seen", "%s / %s / %s" % (
                        r.get("children_seen"), r.get("status_seen"), r.get("running_seen"))),
                    ("ceiling reached", r.get("ceiling_reached"))]
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print("%-*s  %s" % (w, k, "-" if v is None else v))
    for key, what in (("profile_top", "converge phase"), ("steady_profile_top", "steady phase")):
        if r.get(key):
            print("%s, self CPU by function (perf, cpu-clock):" % what)
            for line in r[key]:
                print("  " + line)
    if a.ceiling_only:
        return 0 if r.get("ceiling") else 1
    return 0 if r.get("children_s") is not None and r.get("status_s") is not None else 1


if __name__ == "__main__":
    sys.exit(main())
