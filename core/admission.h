/* SPDX-License-Identifier: Apache-2.0 */
/* core/admission: the admission webhook in `flink-controller run` (docs/admission.md): served by
 * every replica, leader or not (admission needs no leadership), on --webhook-addr, with the
 * certificate pair from --webhook-cert/--webhook-key files, or from the Secret --webhook-secret
 * that core/certsync keeps (made or renewed only by a replica that may write, replica_may_write;
 * read and served by all, a new pair taken without a restart).
 */
#ifndef FC_ADMISSION_H
#define FC_ADMISSION_H

struct run_ctx;

/* Without --webhook-secret: starts serving on --webhook-addr with the files' pair (nothing when
 * --webhook-addr is unset or empty). Returns 0, or -1 after logging "startup failed" (step
 * "serve": the files do not load, the address cannot be listened on). */
int admission_start(struct run_ctx *ctx);

/* With --webhook-secret: starts core/certsync on it (ctx->kc must be set); the webhook starts
 * with the first pair the Secret holds, later pairs replace it; a webhook that cannot listen
 * then stops the controller (run_begin_stop, exit 1). Nothing without --webhook-secret.
 * Returns 0, or -1 after logging "startup failed" (step "webhook certificates"). */
int admission_start_certs(struct run_ctx *ctx);

#endif
