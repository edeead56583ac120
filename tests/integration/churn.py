#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test tooling of the `churn` integration case (tests/integration/churn.sh): the seeded schedule
of FlinkCluster creates, spec updates and deletes, and the sweep that counts what is wrong once
the controller is quiet. Talks to the API server through kubectl ($TESTENV_KUBECTL, $KUBECONFIG).

  churn.py drive --seed S --ns NS --seconds D [--rest-jar URL --savepoints DIR]
      runs the schedule of seed S over about D seconds; one line per operation on stdout
  churn.py sweep --ns NS --bin FLINK_CONTROLLER [--flink URL --since MS]
      prints `<count name> <n>` for each count (and what each one is, as `#` lines); exit 1
      unless every count is 0

Expected children come from the controller itself: `flink-controller render` of each live
FlinkCluster (as stored, with its uid) gives the objects its policies want, and the cluster's
status names the ControllerRevisions it keeps (nextRevision, currentRevision), so a policy
change moves the expectations with it.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

# the kinds of the children a cluster can have (lua/fc/kinds.lua), as kubectl names them
CHILD_KINDS = ["configmaps", "statefulsets", "services", "jobs.batch", "controllerrevisions",
               "ingresses.networking.k8s.io", "poddisruptionbudgets.policy"]
CLUSTERS = 100
IMAGES = ["flink:1.20.0", "flink:1.20.1"]
CONFIG_HASH = "flinkoperator.k8s.io/config-hash"


def kubectl(*args, stdin=None, check=True):
    cmd = [os.environ["TESTENV_KUBECTL"], "--kubeconfig=" + os.environ["KUBECONFIG"], *args]
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError("kubectl %s: %s" % (" ".join(args[:3]), p.stderr.strip()))
    return p


def resources(limit_mem="300Mi"):
    return {"limits": {"memory": limit_mem, "cpu": "100m"}}


def cluster_manifest(name, kind, rest_jar=None, savepoints=None, recreate=True):
    """A small FlinkCluster: `session`, `job` (the submitter Job) or `rest` (the job submitted
    by the controller through Flink's REST API, jarFile an http:// URL); `recreate` false: its
    StatefulSets roll in place on an update instead of being deleted and created again."""
    spec = {
        "recreateOnUpdate": recreate,
        "image": {"name": IMAGES[0]},
        "jobManager": {"resources": resources(), "memoryOffHeapMin": "100M"},
        "taskManager": {"replicas": 1, "resources": resources(), "memoryOffHeapMin": "100M"},
        "flinkProperties": {"taskmanager.numberOfTaskSlots": "1"},
    }
    if kind == "job":
        spec["job"] = {"jarFile": "/opt/flink/examples/streaming/WordCount.jar",
                       "className": "org.apache.flink.streaming.examples.wordcount.WordCount",
                       "args": ["--input", "./README.txt"], "parallelism": 1}
    elif kind == "rest":
        spec["job"] = {"jarFile": rest_jar, "className": "testenv.Ticker", "args": ["100"],
                       "parallelism": 1, "savepointsDir": savepoints}
    return {"apiVersion": "flinkoperator.k8s.io/v1beta1", "kind": "FlinkCluster",
            "metadata": {"name": name, "labels": {"churn": "yes", "churn-kind": kind}},
            "spec": spec}


def schedule(seed, seconds, rest):
    """The operations of a seed: [(at_seconds, op, name, arg)], op one of create, update,
    delete. c001..c100 are created in a random order over the first 40% of the run (a quarter
    job clusters; c100 the REST-submitted one when `rest`), spec updates and deletes of live
    clusters follow at random, some deleted names created again (a new uid, the old children
    maybe not yet collected); c100 is never deleted. Each create says (kind, recreateOnUpdate)."""
    rng = random.Random(seed)
    names = ["c%03d" % i for i in range(1, CLUSTERS + 1)]
    kinds = {n: ("job" if rng.random() < 0.25 else "session") for n in names}
    if rest:
        kinds[names[-1]] = "rest"
    # half the clusters roll their StatefulSets in place (recreateOnUpdate false): both update
    # paths are churned, and fewer StatefulSets are deleted and created again at once under the
    # same name (which the garbage collector can race: kubernetes/kubernetes#131284)
    for n in names:
        kinds[n] = (kinds[n], rng.random() < 0.5)
    order = names[:]
    rng.shuffle(order)
    ops = []
    for i, n in enumerate(order):
        ops.append((seconds * 0.4 * i / len(order), "create", n, kinds[n]))
    live, deleted = set(), []
    t = 0.0
    events = []
    # 220 updates, 30 deletes, 10 re-creates spread over the whole run
    kinds_of_event = ["update"] * 220 + ["delete"] * 30 + ["recreate"] * 10
    rng.shuffle(kinds_of_event)
    step = seconds / len(kinds_of_event)
    for k in kinds_of_event:
        t += step * rng.uniform(0.5, 1.5)
        events.append((min(t, seconds), k))
    merged = sorted(ops + [(at, k, None, None) for at, k in events], key=lambda o: o[0])
    out = []
    for at, op, name, arg in merged:
        if op == "create":
            live.add(name)
            out.append((at, "create", name, arg))
            continue
        candidates = sorted(live)
        if op == "update" and candidates:
            n = rng.choice(candidates)
            what = rng.choice(["replicas", "properties", "image", "labels"])
            if what == "replicas":
                patch = {"spec": {"taskManager": {"replicas": rng.randint(1, 3)}}}
            elif what == "properties":
                patch = {"spec": {"flinkProperties": {"churn.value": str(rng.randint(0, 10 ** 6))}}}
            elif what == "image":
                patch = {"spec": {"image": {"name": rng.choice(IMAGES)}}}
            else:
                patch = {"spec": {"taskManager": {"podLabels": {"churn": str(rng.randint(0, 999))}}}}
            out.append((at, "update", n, patch))
        elif op == "delete":
            cand = [c for c in candidates if kinds[c][0] != "rest"]
            if cand:
                n = rng.choice(cand)
                live.discard(n)
                deleted.append(n)
                out.append((at, "delete", n, None))
        elif op == "recreate" and deleted:
            n = deleted.pop(rng.randrange(len(deleted)))
            live.add(n)
            out.append((at, "create", n, kinds[n]))
    return out


def drive(a):
    ops = schedule(a.seed, a.seconds, bool(a.rest_jar))
    counts = {}
    t0 = time.monotonic()
    for at, op, name, arg in ops:
        wait = at - (time.monotonic() - t0)
        if wait > 0:
            time.sleep(wait)
        if op == "create":
            doc = json.dumps(cluster_manifest(name, arg[0], a.rest_jar, a.savepoints, arg[1]))
            p = kubectl("-n", a.ns, "create", "-f", "-", stdin=doc, check=False)
        elif op == "update":
            p = kubectl("-n", a.ns, "patch", "flinkcluster", name, "--type", "merge",
                        "-p", json.dumps(arg), check=False)
        else:
            p = kubectl("-n", a.ns, "delete", "flinkcluster", name, "--wait=false", check=False)
        ok = p.returncode == 0
        counts[op + ("" if ok else " failed")] = counts.get(op + ("" if ok else " failed"), 0) + 1
        what = json.dumps(arg) if op == "update" else "%s recreateOnUpdate=%s" % arg if op == "create" else ""
        print("%6.1f %s %s %s%s" % (time.monotonic() - t0, op, name, what,
                                    "" if ok else " FAILED: " + p.stderr.strip()), flush=True)
    print("operations: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())), flush=True)
    # a create of a name whose deletion the API server has not finished is refused: that is the
    # schedule racing the API server, not the controller; any other failure is the test's
    return 0


def owner_uid(obj):
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "FlinkCluster":
            return ref.get("uid")
    return None


def render(binary, cluster, spec=None):
    """The objects the controller's policies want for this stored cluster (or for it with
    another spec): {(kind, name): obj}."""
    doc = {k: cluster[k] for k in ("apiVersion", "kind", "metadata", "spec")}
    if spec is not None:
        doc["spec"] = spec
    doc["metadata"] = {k: v for k, v in cluster["metadata"].items() if k != "managedFields"}
    p = subprocess.run([binary, "render", "-f", "-", "-o", "json"], input=json.dumps(doc),
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("render %s: %s" % (cluster["metadata"]["name"], p.stderr.strip()))
    return {(o["kind"], o["metadata"]["name"]): o for o in json.loads(p.stdout)["items"]}


def containers_of(obj):
    return [(c.get("name"), c.get("image")) for c in
            (obj.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or [])]


def differences(want, got):
    """Where a live child does not match what its cluster's current spec renders: the fields the
    churn changes (replicas, the ConfigMap's data, images, pod labels, the config hash)."""
    out = []
    kind = want["kind"]
    if kind == "ConfigMap" and want.get("data") != got.get("data"):
        out.append("data")
    if kind == "StatefulSet":
        if want["spec"].get("replicas") != got["spec"].get("replicas"):
            out.append("replicas %s, want %s" % (got["spec"].get("replicas"), want["spec"].get("replicas")))
        if containers_of(want) != containers_of(got):
            out.append("containers %s, want %s" % (containers_of(got), containers_of(want)))
        wm, gm = want["spec"]["template"]["metadata"], got["spec"]["template"]["metadata"]
        for k, v in (wm.get("labels") or {}).items():
            if (gm.get("labels") or {}).get(k) != v:
                out.append("pod label %s=%s, want %s" % (k, (gm.get("labels") or {}).get(k), v))
        wh, gh = (wm.get("annotations") or {}).get(CONFIG_HASH), (gm.get("annotations") or {}).get(CONFIG_HASH)
        if wh != gh:
            out.append("config hash %s, want %s" % (gh, wh))
    if kind == "Job" and containers_of(want) != containers_of(got):
        out.append("containers %s, want %s" % (containers_of(got), containers_of(want)))
    return out


def sweep(a):
    clusters = json.loads(kubectl("-n", a.ns, "get", "flinkclusters", "-o", "json").stdout)["items"]
    children = json.loads(kubectl("-n", a.ns, "get", ",".join(CHILD_KINDS), "-o", "json").stdout)["items"]
    live = {c["metadata"]["uid"]: c for c in clusters if not c["metadata"].get("deletionTimestamp")}
    by_owner = {}
    counts = {k: 0 for k in ("missing", "extra", "orphaned", "duplicate_submitters", "generation_lag",
                             "spec_mismatch", "duplicate_flink_jobs", "rest_job_not_running", "render_failed")}
    notes = []
    for obj in children:
        md = obj["metadata"]
        uid = owner_uid(obj)
        if uid in live:
            by_owner.setdefault(uid, []).append(obj)
        elif uid is not None or ((md.get("labels") or {}).get("cluster") and not md.get("ownerReferences")):
            # owned by a cluster that is gone, or labelled for one with no owner at all (a
            # StatefulSet's own ControllerRevisions carry the pod labels and that StatefulSet)
            counts["orphaned"] += 1
            notes.append("orphaned %s/%s (owner %s)" % (obj["kind"], md["name"], uid))
    for uid, c in sorted(live.items(), key=lambda kv: kv[1]["metadata"]["name"]):
        name = c["metadata"]["name"]
        st = c.get("status") or {}
        if st.get("observedGeneration") != c["metadata"].get("generation"):
            counts["generation_lag"] += 1
            notes.append("%s: observedGeneration %s, generation %s" %
                         (name, st.get("observedGeneration"), c["metadata"].get("generation")))
        try:
            want = render(a.bin, c)
        except RuntimeError as e:
            counts["render_failed"] += 1
            notes.append(str(e))
            continue
        have = {(o["kind"], o["metadata"]["name"]): o for o in by_owner.get(uid, [])}
        job = (st.get("components") or {}).get("job") or {}
        if job.get("submission"):
            # submitted through Flink's REST API (lib.restsubmit records it): no submitter Job
            want = {k: v for k, v in want.items() if k[0] != "Job"}
        else:
            # the submitter Job is the job's: it was rendered from the revision the job runs
            # (status.currentRevision, its spec in the ControllerRevision's data), which stays
            # behind nextRevision while an update waits for the job (a kwok submitter never
            # tells a job id: its job stays Pending, its update waits)
            cur = have.get(("ControllerRevision", st.get("currentRevision")))
            if cur is not None and st.get("currentRevision") != st.get("nextRevision"):
                for k, v in render(a.bin, c, cur.get("data")).items():
                    if k[0] == "Job" and k in want:
                        want[k] = v
        revisions = {k for k in have if k[0] == "ControllerRevision"}
        keep = {("ControllerRevision", r) for r in (st.get("currentRevision"), st.get("nextRevision")) if r}
        limit = int((c.get("spec") or {}).get("revisionHistoryLimit", 10))
        submitters = [k for k in have if k[0] == "Job"]
        if len(submitters) > 1:
            counts["duplicate_submitters"] += 1
            notes.append("%s: submitter Jobs %s" % (name, submitters))
        for k, obj in sorted(want.items()):
            if k not in have:
                counts["missing"] += 1
                notes.append("%s: missing %s/%s" % (name, *k))
            else:
                diff = differences(obj, have[k])
                if diff:
                    counts["spec_mismatch"] += 1
                    notes.append("%s: %s/%s: %s" % (name, k[0], k[1], "; ".join(diff)))
        for k in sorted(keep - revisions):
            counts["missing"] += 1
            notes.append("%s: missing %s/%s (status)" % (name, *k))
        for k in sorted(set(have) - set(want) - revisions):
            counts["extra"] += 1
            notes.append("%s: extra %s/%s" % (name, *k))
        if len(revisions) > max(limit, len(keep)):
            counts["extra"] += len(revisions) - max(limit, len(keep))
            notes.append("%s: %d ControllerRevisions, limit %d" % (name, len(revisions), limit))
    if a.flink:
        # the host Flink (every cluster's JobManager here, --flink-base-url) runs the jobs the
        # controller submitted through the REST API (those started since --since): never two at
        # once (a job started before the previous one ended), at most one per REST cluster not
        # ended, and each of those is the one that cluster's status follows
        out = subprocess.run(["curl", "-sf", a.flink + "/jobs/overview"], capture_output=True, text=True)
        jobs = [j for j in json.loads(out.stdout or '{"jobs": []}')["jobs"] if j.get("start-time", 0) >= a.since]
        jobs.sort(key=lambda j: j["start-time"])
        ended = ("FINISHED", "CANCELED", "FAILED")
        running = [j["jid"] for j in jobs if j["state"] not in ended]
        rest = [c for c in live.values() if (c["metadata"].get("labels") or {}).get("churn-kind") == "rest"]
        followed = {((c.get("status") or {}).get("components") or {}).get("job", {}).get("id") for c in rest}
        unfollowed = [jid for jid in running if jid not in followed]
        overlapping = 0
        if len(rest) == 1:
            for prev, j in zip(jobs, jobs[1:]):
                if prev["state"] not in ended or prev.get("end-time", -1) > j["start-time"]:
                    overlapping += 1
                    notes.append("Flink job %s started while %s ran" % (j["jid"], prev["jid"]))
        counts["duplicate_flink_jobs"] = max(len(running) - len(rest), len(unfollowed), overlapping)
        # and each REST cluster's job runs once the controller is quiet (none lost by a kill)
        for c in rest:
            job = ((c.get("status") or {}).get("components") or {}).get("job") or {}
            if job.get("state") != "Running" or job.get("id") not in running:
                counts["rest_job_not_running"] += 1
                notes.append("%s: job %s %s, Flink runs %s" % (c["metadata"]["name"], job.get("id"), job.get("state"), running))
        if unfollowed:
            notes.append("Flink jobs no cluster follows: %s (status ids %s)" % (unfollowed, sorted(map(str, followed))))
        notes.append("Flink jobs since the start: %d, %d not ended %s" % (len(jobs), len(running), running))
    notes.append("%d live clusters, %d children" % (len(live), len(children)))
    for line in notes:
        print("# " + line)
    for k, v in counts.items():
        print("%s %d" % (k, v))
    return 0 if all(v == 0 for v in counts.values()) else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("drive")
    d.add_argument("--seed", type=int, required=True)
    d.add_argument("--ns", required=True)
    d.add_argument("--seconds", type=float, default=120)
    d.add_argument("--rest-jar")
    d.add_argument("--savepoints")
    s = sub.add_parser("sweep")
    s.add_argument("--ns", required=True)
    s.add_argument("--bin", required=True)
    s.add_argument("--flink")
    s.add_argument("--since", type=int, default=0, help="Flink jobs started before (ms since the epoch) are not ours")
    a = ap.parse_args()
    return drive(a) if a.cmd == "drive" else sweep(a)


if __name__ == "__main__":
    sys.exit(main())
