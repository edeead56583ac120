/* SPDX-License-Identifier: Apache-2.0 */
/* core/lhost_json: the C side's calls into the framework with jansson values: lhost_call_json
 * with the input encoded and the result decoded here, the one place for what livediff, the
 * fixtures runner, `reconcile` (fc.replay) and the policy set serving (fc.override) each wrote.
 * Not part of fc.sandbox (build/lib/fc/sandbox.so links no jansson). A room of core/lhost.
 */
#ifndef FC_LHOST_JSON_H
#define FC_LHOST_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "lhost.h"

/* Calls the trusted framework function `module.fn(value)` (lhost_call_json) where value is `in`
 * encoded compact (JSON_ENCODE_ANY: a string or number too), and decodes its result with
 * jansson's `decode_flags` (0, JSON_DECODE_ANY for a result that is no object or array,
 * JSON_ALLOW_NUL to keep a "\u0000"). Returns a new reference the caller json_decref's, or NULL
 * with err (errlen bytes): "out of memory" (`in` NULL or not encodable), the framework's error
 * (lhost_call_json's: a Lua error with its traceback), or "<module>.<fn>: its result is not
 * JSON". `in` is borrowed. */
json_t *lhost_json_call(struct lhost *h, const char *module, const char *fn, const json_t *in, size_t decode_flags,
                        char *err, size_t errlen);

#endif
