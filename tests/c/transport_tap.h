/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal TAP output for the transport tests (test_http, test_kube,
 * test_reflector, test_workqueue). */
#ifndef TRANSPORT_TAP_H
#define TRANSPORT_TAP_H
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

#define OK(cond, ...) do { int ok_ = !!(cond); tap_n++; if (!ok_) tap_failed++; \
    printf("%s %d - ", ok_ ? "ok" : "not ok", tap_n); printf(__VA_ARGS__); printf("\n"); \
    if (!ok_) printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); } while (0)
#define IS_INT(got, want, ...) do { long long g_ = (long long)(got), w_ = (long long)(want); \
    OK(g_ == w_, __VA_ARGS__); if (g_ != w_) printf("#   got %lld, want %lld\n", g_, w_); } while (0)
#define IS_STR(got, want, ...) do { const char *g_ = (got), *w_ = (want); \
    int e_ = g_ && w_ && strcmp(g_, w_) == 0; OK(e_, __VA_ARGS__); \
    if (!e_) printf("#   got \"%s\", want \"%s\"\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); } while (0)
#define DONE_TESTING() (printf("1..%d\n", tap_n), tap_failed ? 1 : 0)
#endif
