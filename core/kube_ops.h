/* SPDX-License-Identifier: Apache-2.0 */
/* core/kube_ops: the object writes, each one kube_request (core/kube) with its path, content
 * type and body: server-side apply (also as a dry run), merge/JSON/apply patches, delete with a
 * propagation policy, core/v1 Events; and kube_ops, the table of them that core/executor writes
 * through. kube.h includes this header: callers include kube.h.
 */
#ifndef FC_KUBE_OPS_H
#define FC_KUBE_OPS_H

#include <jansson.h>

#include "kube.h"

#define KUBE_FIELD_MANAGER "flink-controller"

/* Server-side apply of a whole object given as JSON text: PATCH to its
 * object path with Content-Type application/apply-patch+yaml (JSON is YAML),
 * fieldManager=flink-controller and force=true. The path comes from the
 * object's apiVersion, kind (one of the kube_kind_* list), metadata.name and
 * metadata.namespace. Bad JSON or an unknown kind fails at once (NULL, err). */
kube_call *kube_apply(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err,
                      size_t errlen);

/* kube_apply with dryRun=All: the API server runs admission and validation (a 422, a webhook's
 * refusal, a quota's 403) and answers the object it would store, writing nothing (Kubernetes
 * API conventions, "Dry-run"). Same arguments and errors. */
kube_call *kube_apply_dry_run(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err,
                              size_t errlen);

/* PATCH of an object (`subresource` NULL) or of a subresource ("status")
 * with `content_type` "application/merge-patch+json" (RFC 7386: null
 * deletes a key, lists are replaced whole), "application/json-patch+json"
 * (RFC 6902) or "application/apply-patch+yaml" (then fieldManager and force
 * are added to the query). `patch_json` is sent as given. */
kube_call *kube_patch(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                      const char *subresource, const char *content_type, const char *patch_json,
                      kube_done_fn cb, void *ud, char *err, size_t errlen);

/* PATCH of the /status subresource with an RFC 7386 merge patch (JSON text,
 * e.g. {"status":{...}}); keep observedGeneration in it. */
kube_call *kube_patch_status(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                             const char *merge_patch_json, kube_done_fn cb, void *ud, char *err,
                             size_t errlen);

/* DELETE with a DeleteOptions body carrying `propagation` ("Background",
 * "Foreground", "Orphan"; NULL = server default). 200 and 202 both mean
 * accepted; 404 means already gone. */
kube_call *kube_delete(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                       const char *propagation, kube_done_fn cb, void *ud, char *err,
                       size_t errlen);

/* DELETE of the collection of kind `k` in namespace `ns` matching `label_selector` (Kubernetes
 * syntax, e.g. "app=x,type=flink-native-kubernetes"; required and non-empty: an empty one
 * would delete every object of the kind), with a DeleteOptions body carrying `propagation` as
 * kube_delete. 200 means accepted (the body is the list of what was deleted, possibly empty).
 * NULL with err filled on a missing kind or selector. */
kube_call *kube_delete_collection(kube_client *c, const kube_kind *k, const char *ns, const char *label_selector,
                                  const char *propagation, kube_done_fn cb, void *ud, char *err, size_t errlen);

/* Creates a core/v1 Event in the object's namespace about `involved` (an
 * object with apiVersion, kind, metadata.name/namespace/uid): `type` "Normal"
 * or "Warning", `reason` CamelCase, `message` free text (truncated to 1024
 * bytes, never inside a UTF-8 sequence). source.component is "flink-controller". */
kube_call *kube_event_create(kube_client *c, json_t *involved, const char *type, const char *reason,
                             const char *message, kube_done_fn cb, void *ud, char *err,
                             size_t errlen);

/* The writes of a pass as a table of the functions above, for core/executor (and its Events and
 * status writes): kube_ops_default calls them; a test hands a fake one (tests/c/test_executor.c)
 * that records the calls and answers them. Same arguments, results and errors as the functions
 * they stand for. */
typedef struct kube_ops {
    kube_call *(*apply)(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err, size_t errlen);
    kube_call *(*apply_dry_run)(kube_client *c, const char *json, kube_done_fn cb, void *ud, char *err,
                                size_t errlen);
    kube_call *(*patch)(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                        const char *subresource, const char *content_type, const char *patch_json,
                        kube_done_fn cb, void *ud, char *err, size_t errlen);
    kube_call *(*patch_status)(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                               const char *merge_patch_json, kube_done_fn cb, void *ud, char *err,
                               size_t errlen);
    kube_call *(*delete)(kube_client *c, const kube_kind *k, const char *ns, const char *name,
                         const char *propagation, kube_done_fn cb, void *ud, char *err, size_t errlen);
    kube_call *(*delete_collection)(kube_client *c, const kube_kind *k, const char *ns, const char *label_selector,
                                    const char *propagation, kube_done_fn cb, void *ud, char *err, size_t errlen);
    kube_call *(*event_create)(kube_client *c, json_t *involved, const char *type, const char *reason,
                               const char *message, kube_done_fn cb, void *ud, char *err, size_t errlen);
    void (*cancel)(kube_call *call);
} kube_ops;

/* kube_apply, kube_apply_dry_run, kube_patch, kube_patch_status, kube_delete,
 * kube_delete_collection, kube_event_create, kube_cancel. */
extern const kube_ops kube_ops_default;

#endif
