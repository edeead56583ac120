/* SPDX-License-Identifier: Apache-2.0 */
/* core/lhost_json: lhost_call_json with jansson values. See lhost_json.h. */
#include "lhost_json.h"
#include "util.h"

#include <stdlib.h>

json_t *lhost_json_call(struct lhost *h, const char *module, const char *fn, const json_t *in, size_t decode_flags,
                        char *err, size_t errlen)
{
    char *text = in ? json_dumps(in, JSON_COMPACT | JSON_ENCODE_ANY) : NULL, *out = NULL;
    json_t *res = NULL;
    if (!text) {
        util_set_err(err, errlen, "out of memory");
        return NULL;
    }
    if (lhost_call_json(h, module, fn, text, &out, err, errlen) == 0) {
        res = json_loads(out, decode_flags, NULL);
        if (!res)
            util_set_err(err, errlen, "%s.%s: its result is not JSON", module, fn);
    }
    free(text);
    free(out);
    return res;
}
