/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fixtures: `flink-controller test` — every policy's fixture cases run in the production
 * sandbox (issue "Policy authoring", item 2). The walk and the files are here; decoding, the
 * policy calls and the comparison are lua/fc/fixtures.lua's (fc.fixtures.run_case).
 */
#ifndef FC_FIXTURES_H
#define FC_FIXTURES_H

#include <stdio.h>

#include "lhost.h"

/* Runs the fixtures of every policy of the host's policy directory: each `<name>.lua` there (not
 * `*_spec.lua`, not under lib/) must have at least one case directory
 * testdata/<name>/<case>/ with input.yaml (and expected.yaml, or expected-partial.yaml for a
 * partial match; old.yaml for a validate update).
 * `pattern` (NULL: all) keeps the cases whose "<policy>/<case>" contains it. `update`
 * ("<policy>/<case>", NULL: none) first rewrites that case's expected.yaml from the policy's
 * output. Prints one line per case to `out` ("ok <policy>/<case>" or "FAIL <policy>/<case>:
 * <every difference or the error>", several differences one indented line each), a policy without cases as a FAIL line, then
 * "<n> passed, <n> failed". Returns 0 when all passed, 1 when one failed (or `update` named no
 * case), -1 with a message in err on an I/O error (the policy directory unreadable). */
int fixtures_run(struct lhost *h, const char *pattern, const char *update, FILE *out, char *err, size_t errlen);

#endif
