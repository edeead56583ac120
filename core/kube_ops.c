/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube_ops: the object writes on top of kube_request (server-side apply, patch, delete,
 * Events) and their table kube_ops. See kube_ops.h. */
#include "kube_ops.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define APPLY_PATCH "application/apply-patch+yaml"

/* The path a PATCH of `content_type` goes to: the object's (kube_path), and for a server-side
 * apply the query fieldManager=flink-controller&force=true (force: our fields win conflicts,
 * as controllers do). The object's path must leave 64 of the n bytes free (room for that
 * query). 0, or -1 when it does not fit. */
static int patch_path(char *path, size_t n, const kube_kind *k, const char *ns, const char *name,
                      const char *subresource, const char *content_type)
{
    if (n <= 64 || kube_path(path, n - 64, k, ns, name, subresource) != 0)
        return -1;
    if (strcmp(content_type, APPLY_PATCH) == 0)
        strcat(path, "?fieldManager=" KUBE_FIELD_MANAGER "&force=true");
    return 0;
}

static kube_call *apply_object(kube_client *c, const char *json, int dry_run, kube_done_fn cb, void *ud,
                               char *err, size_t errlen);

kube_call *kube_apply(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    return apply_object(c, json, 0, cb, ud, err, errlen);
}

kube_call *kube_apply_dry_run(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err,
                              size_t errlen)
{
    return apply_object(c, json, 1, cb, ud, err, errlen);
}

static kube_call *apply_object(kube_client *c, const char *json, int dry_run, kube_done_fn cb, void *ud,
                               char *err, size_t errlen)
{
    json_error_t je;
    json_t *obj = json ? json_loads(json, JSON_ALLOW_NUL, &je) : NULL;
    if (!json_is_object(obj)) {
        util_set_err(err, errlen, "kube_apply: not a JSON object: %s", obj ? "wrong type" : (json ? je.text : "NULL"));
        json_decref(obj);
        return NULL;
    }
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const kube_kind *k = kube_kind_find(av, kind);
    char path[1024];
    kube_call *call = NULL;
    if (!k)
        util_set_err(err, errlen, "kube_apply: unknown apiVersion/kind: %s/%s", av ? av : "?", kind ? kind : "?");
    else if (!name || !*name)
        util_set_err(err, errlen, "kube_apply: metadata.name: missing");
    else if (strlen(name) != json_string_length(json_object_get(meta, "name")))
        util_set_err(err, errlen, "kube_apply: metadata.name: holds a NUL");
    else if (k->namespaced && (!ns || !*ns))
        util_set_err(err, errlen, "kube_apply: metadata.namespace: missing");
    else if (ns && strlen(ns) != json_string_length(json_object_get(meta, "namespace")))
        util_set_err(err, errlen, "kube_apply: metadata.namespace: holds a NUL");
    else if (patch_path(path, sizeof path, k, ns, name, NULL, APPLY_PATCH) != 0)
        util_set_err(err, errlen, "kube_apply: path too long");
    else {
        if (dry_run) /* patch_path keeps 64 bytes free for the query */
            strcat(path, "&dryRun=All");
        kube_req r = {.method = "PATCH", .path = path, .content_type = APPLY_PATCH, .body = json};
        call = kube_request(c, &r, cb, ud, err, errlen);
    }
    json_decref(obj);
    return call;
}

kube_call *kube_patch(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                      const char *subresource, const char *content_type, const char *patch_json,
                      kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    char path[1024];
    if (!k || !name || !*name || !patch_json || !content_type ||
        patch_path(path, sizeof path, k, ns, name, subresource, content_type) != 0) {
        util_set_err(err, errlen, "kube_patch: kind, name, content type and patch are required");
        return NULL;
    }
    kube_req r = {.method = "PATCH", .path = path, .content_type = content_type, .body = patch_json};
    return kube_request(c, &r, cb, ud, err, errlen);
}

kube_call *kube_patch_status(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                             const char *merge_patch_json, kube_done_fn cb, void *ud, char *err,
                             size_t errlen)
{
    return kube_patch(c, k, ns, name, "status", "application/merge-patch+json", merge_patch_json, cb, ud, err,
                      errlen);
}

kube_call *kube_delete(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                       const char *propagation, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    char path[1024];
    if (!k || !name || !*name || kube_path(path, sizeof path, k, ns, name, NULL) != 0) {
        util_set_err(err, errlen, "kube_delete: kind and name are required");
        return NULL;
    }
    json_t *opts = json_pack("{s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
    if (propagation && *propagation)
        json_object_set_new(opts, "propagationPolicy", json_string(propagation));
    char *body = json_dumps(opts, JSON_COMPACT);
    json_decref(opts);
    if (!body) {
        util_set_err(err, errlen, "kube_delete: out of memory or bad propagation policy");
        return NULL;
    }
    kube_req r = {.method = "DELETE", .path = path, .body = body};
    kube_call *call = kube_request(c, &r, cb, ud, err, errlen);
    free(body);
    return call;
}

kube_call *kube_event_create(kube_client *c, json_t *involved, const char *type, const char *reason,
                             const char *message, kube_done_fn cb, void *ud, char *err, size_t errlen)
{
    json_t *meta = json_object_get(involved, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *av = json_string_value(json_object_get(involved, "apiVersion"));
    const char *kind = json_string_value(json_object_get(involved, "kind"));
    if (!name || !ns || !av || !kind || !type || !reason || !message) {
        util_set_err(err, errlen, "kube_event_create: involved object needs apiVersion, kind, metadata.name and "
                             "metadata.namespace; type, reason and message are required");
        return NULL;
    }
    char ts[32];
    if (util_format_time((double)time(NULL), 0, ts, sizeof ts) != 0)
        snprintf(ts, sizeof ts, "1970-01-01T00:00:00Z");
    char msg[1025];
    snprintf(msg, sizeof msg, "%s", message);
    size_t ml = strlen(msg);
    if (ml == sizeof msg - 1) {           /* truncated: do not cut a UTF-8 sequence */
        while (ml > 0 && ((unsigned char)message[ml] & 0xC0) == 0x80)
            ml--;                         /* message[ml] would start the next part */
        msg[ml] = '\0';
    }
    char gen[300];
    snprintf(gen, sizeof gen, "%.240s.", name);
    json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s},"
                           " s:s, s:s, s:i}",
                           "apiVersion", "v1", "kind", "Event", "metadata", "generateName", gen, "namespace", ns,
                           "involvedObject", "apiVersion", av, "kind", kind, "name", name, "namespace", ns,
                           "type", type, "reason", reason, "message", msg, "source", "component",
                           KUBE_FIELD_MANAGER, "firstTimestamp", ts, "lastTimestamp", ts, "count", 1);
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    if (ev && uid)
        json_object_set_new(json_object_get(ev, "involvedObject"), "uid", json_string(uid));
    char *body = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    char path[1024];
    if (!body || kube_path(path, sizeof path, &kube_kind_event, ns, NULL, NULL) != 0) {
        free(body);
        util_set_err(err, errlen, "kube_event_create: cannot build the event (non-UTF-8 text?)");
        return NULL;
    }
    kube_req r = {.method = "POST", .path = path, .body = body};
    kube_call *call = kube_request(c, &r, cb, ud, err, errlen);
    free(body);
    return call;
}

const kube_ops kube_ops_default = {.apply = kube_apply,
                                   .apply_dry_run = kube_apply_dry_run,
                                   .patch = kube_patch,
                                   .patch_status = kube_patch_status,
                                   .delete = kube_delete,
                                   .event_create = kube_event_create,
                                   .cancel = kube_cancel};
