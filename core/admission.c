/* SPDX-License-Identifier: Apache-2.0 */
/* core/admission: the admission webhook and its certificates (see admission.h). */
#include <stddef.h>

#include "admission.h"
#include "certsync.h"
#include "log.h"
#include "replica.h"
#include "runctx.h"
#include "webhook.h"

/* Starts the webhook with `wo` (its address, host and metric filled in here); 0, or -1 with
 * err (n bytes). */
static int admission_serve(struct run_ctx *ctx, webhook_opts *wo, char *err, size_t n)
{
    wo->addr = ctx->o.webhook_addr;
    wo->host = ctx->host;
    wo->admissions = ctx->m.webhook_admissions;
    ctx->wh = webhook_start(ctx->loop, wo, err, n);
    if (!ctx->wh) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "serve", "error", err, NULL);
        return -1;
    }
    run_log(LOG_INFO, NULL, "serving the admission webhook", "port", RUN_LD(webhook_port(ctx->wh)), NULL);
    return 0;
}

int admission_start(struct run_ctx *ctx)
{
    char err[1024];
    if (!ctx->o.webhook_addr || !*ctx->o.webhook_addr || ctx->o.webhook_secret)
        return 0;
    webhook_opts wo = {.cert_file = ctx->o.webhook_cert, .key_file = ctx->o.webhook_key};
    return admission_serve(ctx, &wo, err, sizeof err);
}

/* core/certsync's pair: the webhook starts with the first one (a replica serves once the
 * Secret holds a pair), later ones replace it. */
static void admission_on_pair(const char *cert_pem, const char *key_pem, void *ud)
{
    struct run_ctx *ctx = ud;
    char err[512];
    if (!ctx->o.webhook_addr || !*ctx->o.webhook_addr)
        return;
    if (ctx->wh) {
        if (webhook_set_pair(ctx->wh, cert_pem, key_pem, err, sizeof err))
            run_log(LOG_WARN, NULL, "webhook certificate not taken, the previous one serves", "error", err, NULL);
        else
            run_log(LOG_INFO, NULL, "webhook serving the certificate from the Secret", "generation",
                    RUN_LD(webhook_generation(ctx->wh)), NULL);
        return;
    }
    webhook_opts wo = {.cert_pem = cert_pem, .key_pem = key_pem};
    /* as at start with files: a webhook that cannot listen stops the controller */
    if (admission_serve(ctx, &wo, err, sizeof err))
        run_begin_stop(ctx, 1);
}

static int admission_may_write(void *ud)
{
    return replica_may_write(ud);
}

int admission_start_certs(struct run_ctx *ctx)
{
    char err[1024];
    if (!ctx->o.webhook_secret)
        return 0;
    /* every replica reads the Secret and serves its pair; only one that may write makes it */
    certsync_opts co = {.secret = ctx->o.webhook_secret,
                        .service = ctx->o.webhook_service,
                        .hosts = ctx->o.webhook_hosts,
                        .configuration = ctx->o.webhook_config,
                        .validity_s = ctx->o.webhook_validity_s,
                        .may_write = admission_may_write,
                        .on_pair = admission_on_pair,
                        .ud = ctx};
    ctx->cs = certsync_start(ctx->loop, ctx->kc, &co, err, sizeof err);
    if (!ctx->cs) {
        run_log(LOG_ERROR, NULL, "startup failed", "step", "webhook certificates", "error", err, NULL);
        return -1;
    }
    return 0;
}
