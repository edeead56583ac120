/* SPDX-License-Identifier: Apache-2.0 */
/* core/certsync: the admission webhook's certificates kept by the controller itself
 * (`run --webhook-cert-secret NS/NAME`, docs/webhook.md), the Kubernetes side of core/certs.
 *
 * Every check_s seconds each replica GETs the Secret (type kubernetes.io/tls; data tls.crt,
 * tls.key, ca.crt, and ca.key: the CA's key, kept there to sign the next serving certificate)
 * and hands a new serving pair to on_pair (the webhook serves it from memory; no files). The
 * replica that may write (may_write: the leader with --leader-elect) also:
 *   1. decides with certs_plan (a missing Secret: a new CA and pair; renewal at 2/3 of the
 *      serving certificate's lifetime, on other names, on a shortened validity; a new CA at
 *      2/3 of its ten years, the old one kept in ca.crt until it expires) and makes the new set;
 *   2. keeps every webhook's clientConfig.caBundle of the ValidatingWebhookConfiguration
 *      `configuration` (and of the MutatingWebhookConfiguration of that name when there is one)
 *      equal to ca.crt: a JSON Patch guarded by a test of metadata.resourceVersion, sent only
 *      when some caBundle differs; a new set's bundle is patched in before the Secret is
 *      written, so the API server trusts a new CA before any replica serves what it signed
 *      (when that patch fails the Secret is not written: the next check tries again);
 *   3. creates the Secret (POST) or updates it (PUT of the object read, its resourceVersion
 *      guarding a concurrent write: a 409 waits for the next check).
 * With `configuration` set nothing is made while there is no ValidatingWebhookConfiguration of
 * that name (logged once): it says whether cert-manager is to fill it. A
 * ValidatingWebhookConfiguration annotated cert-manager.io/inject-ca-from (the cert-manager
 * variant, deploy/webhook-cert-manager) turns 1-3 off: cert-manager writes the Secret, its
 * cainjector the caBundle, and every replica only serves the Secret's pair.
 * API errors are logged (warn) and retried at the next check; nothing here stops the process.
 * RBAC: secrets get, create, update; validatingwebhookconfigurations and
 * mutatingwebhookconfigurations get, patch.
 */
#ifndef FC_CERTSYNC_H
#define FC_CERTSYNC_H

#include <stddef.h>
#include <ev.h>

#include "certs.h"
#include "kube.h"

#define CERTSYNC_CHECK_MAX_S 60.0   /* the longest check period (validity / 30, 2..60 s) */
#define CERTSYNC_CHECK_MIN_S 2.0
#define CERTSYNC_INJECT_ANNOTATION "cert-manager.io/inject-ca-from"

typedef struct certsync certsync;

typedef struct certsync_opts {
    const char *secret;          /* "NS/NAME" of the Secret (required) */
    const char *service;         /* "NS/NAME" of the webhook's Service, or NULL */
    const char *hosts;           /* more names, comma-separated ("127.0.0.1,webhook.example"), or NULL */
    const char *configuration;   /* webhook configurations' name whose caBundle is kept, or NULL */
    double validity_s;           /* serving certificate lifetime; 0: CERTS_DEFAULT_VALIDITY_S */
    double check_s;              /* 0: validity / 30 within CERTSYNC_CHECK_MIN_S..MAX_S */
    int (*may_write)(void *ud);  /* 1 when this replica may write (NULL: always) */
    /* a serving pair (PEM texts, borrowed for the call) read from or written to the Secret,
     * each time it differs from the last one handed over */
    void (*on_pair)(const char *cert_pem, const char *key_pem, void *ud);
    void *ud;
} certsync_opts;

/* The serving certificate's names: for `service` "NS/NAME" NAME.NS.svc (the first, its CN),
 * NAME.NS.svc.cluster.local, NAME.NS, then each of the comma-separated `hosts` (empty items
 * skipped, duplicates once). Up to max (<= CERTS_MAX_NAMES) malloc'd strings into names[];
 * returns how many (>= 1), or -1 with err ("--webhook-service: expected NAMESPACE/NAME, got
 * 'x'", "no names: --webhook-service or --webhook-host is needed", "over 16 names").
 * Free them with certsync_names_free. */
int certsync_names(const char *service, const char *hosts, char **names, size_t max, char *err, size_t errlen);
void certsync_names_free(char **names, size_t n);

/* Starts the checks on `loop` with the client `kc` (the first at once). NULL with err for bad
 * options (see certsync_names; "--webhook-cert-secret: expected NAMESPACE/NAME, got 'x'"). */
certsync *certsync_start(struct ev_loop *loop, kube_client *kc, const certsync_opts *o, char *err, size_t errlen);

/* Runs the next check now (when none is under way), e.g. on becoming the leader; NULL: no-op. */
void certsync_check_now(certsync *s);

/* Secrets written (created or updated) and configurations patched since start. */
unsigned certsync_secret_writes(const certsync *s);
unsigned certsync_bundle_patches(const certsync *s);

/* Cancels a call in flight (no callback) and frees. Before kube_client_free. NULL: no-op. */
void certsync_free(certsync *s);

#endif
