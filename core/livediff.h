/* SPDX-License-Identifier: Apache-2.0 */
/*
 * livediff: `flink-controller diff` — what a candidate policy directory would change in live
 * FlinkClusters, shown as `kubectl diff` shows it (issue "Policy authoring", item 3). Read-only:
 * lists and gets, and server-side dry runs (dryRun=All) of the objects a pass would apply. The
 * decisions are lua/fc/livediff.lua's (one fc.reconcile pass per cluster).
 */
#ifndef FC_LIVEDIFF_H
#define FC_LIVEDIFF_H

/* `flink-controller diff [--kubeconfig F] [--context NAME] [--policy-dir D] [budgets] (NAMESPACE/NAME | -A)`:
 * argv[0] is "diff". Prints the unified diff (`diff -u -N` of LIVE/ and MERGED/ trees, files
 * named <group>.<version>.<Kind>.<namespace>.<name>) on stdout. Exit status as kubectl diff's:
 * 0 nothing would change, 1 something would, 2 an error (usage, the API server, a dry run the
 * server refused: named on stderr). */
int livediff_main(int argc, char **argv);

#endif
