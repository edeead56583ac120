/* SPDX-License-Identifier: Apache-2.0 */
/* core/override: a policy set made from the built-in policy dir and a ConfigMap's overrides
 * (`run --policy-configmap NS/NAME`, docs/policies.md, "Overriding policies in a running controller"),
 * checked before use. What the ConfigMap's keys mean is lua/fc/override.lua's (fc.override.files);
 * here is the I/O:
 *   - a set's files are, relative to its dir: `*.lua` at the top (not `*_spec.lua`),
 *     `lib/<name>.lua` and `testdata/<policy>/<case>/<file>.yaml`; nothing else is copied or hashed;
 *   - override_materialize copies the base set into a fresh directory under a work dir and
 *     writes the overrides over it; override_hash names a set; override_compile compiles every
 *     Lua file (text only, nothing runs); override_check_start runs `flink-controller test
 *     --policy-dir DIR` (every fixture in the production sandbox and budgets) in a child
 *     process, so a slow or hostile set never blocks the controller's loop.
 * Errors: int functions return 0, or -1 with a message in err (NUL-terminated, errlen bytes).
 */
#ifndef FC_OVERRIDE_H
#define FC_OVERRIDE_H

#include <stddef.h>
#include <ev.h>
#include <jansson.h>

#define OVERRIDE_HASH_LEN 12            /* hex characters of a set's hash */
#define OVERRIDE_FILE_MAX ((size_t)8 << 20) /* bytes of one file of a set */
#define OVERRIDE_CHECK_LIMIT_S 120.0    /* seconds a set's fixtures may take before it is refused */

/* Makes `<work_dir>/flink-controller-policies-XXXXXX` (mkdtemp) holding the set of `base_dir`,
 * then, from `plan` = fc.override.files' answer {files=[{path, text}], remove=[path]}: unlinks
 * each `remove` path (absent is fine) and writes each file (directories made as needed). The
 * new directory's path goes to out (n bytes). On failure the directory is removed; err says
 * "<path>: <strerror>" or what is wrong with the plan (a path with "..", "/" first). */
int override_materialize(const char *base_dir, const char *work_dir, json_t *plan, char *out, size_t n, char *err,
                         size_t errlen);

/* The set's hash into out (OVERRIDE_HASH_LEN + 1 bytes): the first OVERRIDE_HASH_LEN hex digits
 * of SHA-256 over, for each file of the set in byte order of its relative path, the path, a NUL,
 * its size in decimal, a NUL and its bytes. Two dirs with the same files hash the same. */
int override_hash(const char *dir, char *out, size_t n, char *err, size_t errlen);

/* Compiles every Lua file of the set (luaL_loadbufferx, mode "t": no chunk runs). 0 when all
 * compile; 1 with the first error in err, named as Lua names it with the relative path as the
 * chunk name ("cluster.lua:12: 'end' expected near <eof>", "lib/names.lua:3: ..."); -1 on an
 * I/O error. */
int override_compile(const char *dir, char *err, size_t errlen);

/* Removes a directory made by override_materialize (and its `.out` file). NULL or "" ignored. */
void override_remove(const char *dir);

typedef struct override_check override_check;

/* The outcome of a check: `status` 0 when every fixture passed, 1 when one failed, 2 when the
 * command refused the dir, -1 when the child was killed (after OVERRIDE_CHECK_LIMIT_S, or by a
 * signal); `output` the command's stdout and stderr (at most OVERRIDE_FILE_MAX bytes, "" when
 * unreadable). Valid during the callback; the check is freed after it returns. */
typedef void (*override_done_fn)(int status, const char *output, void *ud);

/* Starts `/proc/self/exe test --policy-dir DIR --policy-timeout-ms T --policy-memory-mib M` (T,
 * M: the budgets the live host uses; 0 = the defaults), its output into `<dir>.out`, on `loop`
 * (which must be the default loop: libev watches children there only). `done` runs exactly
 * once, never inside this call, unless cancelled. NULL with err when it cannot start. */
override_check *override_check_start(struct ev_loop *loop, const char *dir, unsigned timeout_ms,
                                     unsigned memory_mib, override_done_fn done, void *ud, char *err,
                                     size_t errlen);

/* Kills the child (SIGKILL; libev reaps it) and frees the check; `done` will not run. */
void override_check_cancel(override_check *c);

#endif
