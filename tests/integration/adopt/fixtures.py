#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns the objects the original operator made (adopt_dump of tests/integration/adopt.sh, run
with ADOPT_ORIGINAL_BIN and ADOPT_DUMP=DIR) into the case's fixtures in OUT:
  controllerrevision.json configmap.json jobmanager-statefulset.json jobmanager-service.json
  taskmanager-statefulset.json job-submitter.json status-running.json
Server-set fields are dropped (uid, resourceVersion, creationTimestamp, managedFields,
generation, status; a Job's selector and the labels the Job controller adds; a Service's
cluster IPs); the namespace, the FlinkCluster's uid, the job id and the status times become
@NS@ @UID@ @JOBID@ @NOW@ (adopt_fill).  The ConfigMap's
submit-job.sh, log4j-console.properties and logback-console.xml (the original's text) are
replaced by this directory's submit-job.sh (the same contract) and short files of our own.
Usage: fixtures.py DUMP_DIR OUT_DIR"""
import json
import os
import sys

LOG4J = """# The adopt case's log configuration (log4j 1 syntax, as the original operator wrote it).
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=%d %p %c - %m%n
"""
LOGBACK = """<configuration>
  <!-- the adopt case's log configuration: everything at INFO to stdout -->
  <appender name="stdout" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d %level %logger - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="stdout"/></root>
</configuration>
"""
JOB_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid",
              "batch.kubernetes.io/job-name")


def placeholders(value, subs):
    """value with every string equal to (or containing) a key of subs replaced"""
    if isinstance(value, dict):
        return {k: placeholders(v, subs) for k, v in value.items()}
    if isinstance(value, list):
        return [placeholders(v, subs) for v in value]
    if isinstance(value, str):
        for old, new in subs:
            value = value.replace(old, new)
    return value


def clean(obj):
    meta = obj["metadata"]
    for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation",
              "selfLink"):
        meta.pop(k, None)
    obj.pop("status", None)
    return obj


def main(dump, out):
    here = os.path.dirname(os.path.abspath(__file__))
    ph = dict(line.strip().split("=", 1) for line in open(os.path.join(dump, "placeholders")))
    subs = [(ph["uid"], "@UID@"), (ph["ns"], "@NS@")]

    def load(name):
        with open(os.path.join(dump, name)) as f:
            return json.load(f)

    def save(name, obj):
        with open(os.path.join(out, name), "w") as f:
            json.dump(placeholders(obj, subs), f, indent=2, sort_keys=True)
            f.write("\n")

    os.makedirs(out, exist_ok=True)
    cluster = load("flinkcluster.json")
    name = cluster["metadata"]["name"]
    # the FlinkCluster's revision, not the StatefulSets' own (the StatefulSet controller's)
    revs = [r for r in load("controllerrevisions.json")["items"]
            if any(o.get("kind") == "FlinkCluster" for o in r["metadata"].get("ownerReferences", []))]
    if len(revs) != 1:
        sys.exit("fixtures.py: want 1 ControllerRevision of the FlinkCluster, the dump has %d" % len(revs))
    save("controllerrevision.json", clean(revs[0]))

    cm = clean(load("configmap-%s-configmap.json" % name))
    with open(os.path.join(here, "submit-job.sh")) as f:
        cm["data"]["submit-job.sh"] = f.read()
    cm["data"]["log4j-console.properties"] = LOG4J
    cm["data"]["logback-console.xml"] = LOGBACK
    save("configmap.json", cm)
    for kind, obj in (("statefulset", "jobmanager"), ("service", "jobmanager"),
                      ("statefulset", "taskmanager")):
        o = clean(load("%s-%s-%s.json" % (kind, name, obj)))
        if kind == "service":
            for k in ("clusterIP", "clusterIPs"):
                o["spec"].pop(k, None)
        save("%s-%s.json" % (obj, kind), o)
    job = clean(load("job-%s-job-submitter.json" % name))
    job["spec"].pop("selector", None)
    for labels in (job["metadata"].get("labels", {}), job["spec"]["template"]["metadata"].get("labels", {})):
        for k in JOB_LABELS:
            labels.pop(k, None)
    save("job-submitter.json", job)

    status = cluster["status"]
    status["components"]["job"]["id"] = "@JOBID@"
    status["lastUpdateTime"] = "@NOW@"
    if status.get("control"):
        status["control"]["updateTime"] = "@NOW@"
    save("status-running.json", {"status": status})


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.splitlines()[-1])
    main(sys.argv[1], sys.argv[2])
