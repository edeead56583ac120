/* SPDX-License-Identifier: Apache-2.0 */
/* core/certs: webhook certificates with OpenSSL (see certs.h). */
#include "certs.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "util.h"

#define CERTS_BUNDLE_MAX 5   /* the current CA and up to 4 older ones */

/* err gets "certs: <what>: <OpenSSL's first queued reason>" (the queue is emptied). */
static void certs_ossl_err(char *err, size_t errlen, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e) ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    util_set_err(err, errlen, "certs: %s%s%s", what, e ? ": " : "", buf);
}

void certs_set_clear(certs_set *s)
{
    if (!s) return;
    free(s->ca_bundle);
    free(s->ca_key);
    free(s->cert);
    free(s->key);
    memset(s, 0, sizeof *s);
}

int certs_parse_validity(const char *s, double *out, char *err, size_t errlen)
{
    char *end = NULL;
    errno = 0;
    double v = s && *s && isdigit((unsigned char)*s) ? strtod(s, &end) : -1;
    double unit = 0;
    if (end && !errno) {
        if (!*end || strcmp(end, "s") == 0) unit = 1;
        else if (strcmp(end, "m") == 0) unit = 60;
        else if (strcmp(end, "h") == 0) unit = 3600;
        else if (strcmp(end, "d") == 0) unit = 86400;
    }
    v *= unit;
    if (unit == 0 || !isfinite(v) || v < CERTS_MIN_VALIDITY_S || v > CERTS_MAX_VALIDITY_S) {
        util_set_err(err, errlen, "expected a duration 30s..397d such as 90d, got '%s'", s ? s : "");
        return -1;
    }
    *out = floor(v);
    return 0;
}

/* ---- reading ------------------------------------------------------------------------------- */

/* The first certificate (key 0) or private key (key 1) of a PEM text; NULL when none. */
static void *certs_read_pem(const char *pem, int key)
{
    if (!pem || !*pem) return NULL;
    BIO *b = BIO_new_mem_buf(pem, -1);
    void *out = !b ? NULL : key ? (void *)PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : (void *)PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    ERR_clear_error();
    return out;
}

static X509 *certs_read_cert(const char *pem) { return certs_read_pem(pem, 0); }

static EVP_PKEY *certs_read_key(const char *pem) { return certs_read_pem(pem, 1); }

/* Seconds since the Epoch of an ASN1_TIME; 0 when unreadable. */
static double certs_time(const ASN1_TIME *t)
{
    struct tm tm;
    if (!t || !ASN1_TIME_to_tm(t, &tm)) return 0;
    return (double)timegm(&tm);
}

int certs_inspect(const char *pem, certs_info *out, char *err, size_t errlen)
{
    X509 *x = certs_read_cert(pem);
    if (!x) {
        util_set_err(err, errlen, "no certificate in the PEM text");
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->not_before = certs_time(X509_get0_notBefore(x));
    out->not_after = certs_time(X509_get0_notAfter(x));
    out->is_ca = X509_check_ca(x) == 1;
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;
    snprintf(out->serial, sizeof out->serial, "%s", hex ? hex : "");
    OPENSSL_free(hex);
    BN_free(bn);
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, out->subject_cn, sizeof out->subject_cn);
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    out->nnames = gens ? (size_t)sk_GENERAL_NAME_num(gens) : 0;
    GENERAL_NAMES_free(gens);
    X509_free(x);
    ERR_clear_error();
    return 0;
}

/* 1 when `gen` is the name `name` (an IP SAN for an address, else a DNS SAN). */
static int certs_gen_is(const GENERAL_NAME *gen, const char *name)
{
    ASN1_OCTET_STRING *ip = a2i_IPADDRESS(name);
    int same = 0;
    if (ip) {
        same = gen->type == GEN_IPADD && ASN1_STRING_cmp(ip, gen->d.iPAddress) == 0;
        ASN1_OCTET_STRING_free(ip);
    } else if (gen->type == GEN_DNS) {
        const ASN1_IA5STRING *s = gen->d.dNSName;
        same = (size_t)s->length == strlen(name) && strncasecmp((const char *)s->data, name, (size_t)s->length) == 0;
    }
    ERR_clear_error();
    return same;
}

/* The number of distinct names among names[0..n) (DNS without case). */
static size_t certs_distinct(const char *const *names, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < i && strcasecmp(names[j], names[i]) != 0) j++;
        d += j == i;
    }
    return d;
}

int certs_names_match(const char *cert_pem, const char *const *names, size_t n)
{
    X509 *x = certs_read_cert(cert_pem);
    GENERAL_NAMES *gens = x ? X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL) : NULL;
    int ok = gens && (size_t)sk_GENERAL_NAME_num(gens) == certs_distinct(names, n);
    for (size_t i = 0; ok && i < n; i++) {
        int found = 0;
        for (int j = 0; !found && j < sk_GENERAL_NAME_num(gens); j++) found = certs_gen_is(sk_GENERAL_NAME_value(gens, j), names[i]);
        ok = found;
    }
    GENERAL_NAMES_free(gens);
    X509_free(x);
    ERR_clear_error();
    return ok;
}

int certs_key_matches(const char *cert_pem, const char *key_pem)
{
    X509 *x = certs_read_cert(cert_pem);
    EVP_PKEY *k = certs_read_key(key_pem);
    int ok = x && k && X509_check_private_key(x, k) == 1;
    X509_free(x);
    EVP_PKEY_free(k);
    ERR_clear_error();
    return ok;
}

static int certs_x509_signed_by(X509 *x, X509 *ca)
{
    EVP_PKEY *pub = X509_get0_pubkey(ca);
    int ok = pub && X509_NAME_cmp(X509_get_issuer_name(x), X509_get_subject_name(ca)) == 0 &&
             X509_verify(x, pub) == 1;
    ERR_clear_error();
    return ok;
}

int certs_signed_by(const char *cert_pem, const char *ca_pem)
{
    X509 *x = certs_read_cert(cert_pem), *ca = certs_read_cert(ca_pem);
    int ok = x && ca && certs_x509_signed_by(x, ca);
    X509_free(x);
    X509_free(ca);
    return ok;
}

/* ---- making -------------------------------------------------------------------------------- */

static double certs_backdate(double validity_s)
{
    return fmin(60.0, floor(validity_s / 10));
}

static char *certs_pem_cert(X509 *x)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data = NULL, *out = NULL;
    if (b && PEM_write_bio_X509(b, x)) {
        long n = BIO_get_mem_data(b, &data);
        out = util_memdup(data, (size_t)n);
    }
    BIO_free(b);
    return out;
}

static char *certs_pem_key(EVP_PKEY *k)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *data = NULL, *out = NULL;
    if (b && PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL)) {
        long n = BIO_get_mem_data(b, &data);
        out = util_memdup(data, (size_t)n);
    }
    BIO_free(b);
    return out;
}

/* One extension from OpenSSL's configuration syntax ("critical,CA:TRUE"), with issuer and
 * subject for the key identifiers. */
static int certs_add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    int ok = e && X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    return ok ? 0 : -1;
}

/* A new certificate for `key` with subject CN `cn`, a random positive 127-bit serial and the
 * validity window; issuer and signature are set by the caller. */
static X509 *certs_new_x509(EVP_PKEY *key, const char *cn, double not_before, double not_after)
{
    X509 *x = X509_new();
    unsigned char rnd[16];
    BIGNUM *bn = NULL;
    int ok = x && X509_set_version(x, 2) && RAND_bytes(rnd, sizeof rnd) == 1;
    if (ok) {
        rnd[0] &= 0x7f;   /* positive, at most 20 octets (RFC 5280 4.1.2.2) */
        rnd[0] |= 0x40;   /* and never with a leading zero octet */
        bn = BN_bin2bn(rnd, sizeof rnd, NULL);
        ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
    }
    ok = ok && ASN1_TIME_set(X509_getm_notBefore(x), (time_t)not_before) &&
         ASN1_TIME_set(X509_getm_notAfter(x), (time_t)not_after) && X509_set_pubkey(x, key) &&
         X509_NAME_add_entry_by_NID(X509_get_subject_name(x), NID_commonName, MBSTRING_UTF8,
                                    (const unsigned char *)cn, -1, -1, 0);
    BN_free(bn);
    if (!ok) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static int certs_out(X509 *x, EVP_PKEY *k, char **cert_pem, char **key_pem, char *err, size_t errlen)
{
    *cert_pem = certs_pem_cert(x);
    *key_pem = certs_pem_key(k);
    if (!*cert_pem || !*key_pem) {
        free(*cert_pem);
        free(*key_pem);
        *cert_pem = *key_pem = NULL;
        certs_ossl_err(err, errlen, "PEM encoding");
        return -1;
    }
    return 0;
}

int certs_new_ca(const char *cn, double now, double validity_s, char **cert_pem, char **key_pem, char *err,
                 size_t errlen)
{
    *cert_pem = *key_pem = NULL;
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = k ? certs_new_x509(k, cn && *cn ? cn : CERTS_CA_CN, floor(now) - certs_backdate(validity_s),
                                 floor(now) + validity_s)
                : NULL;
    int ok = x && X509_set_issuer_name(x, X509_get_subject_name(x)) &&
             certs_add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") == 0 &&
             certs_add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") == 0 &&
             certs_add_ext(x, x, NID_subject_key_identifier, "hash") == 0 && X509_sign(x, k, EVP_sha256()) > 0;
    int rc = -1;
    if (!ok) certs_ossl_err(err, errlen, "making the CA");
    else rc = certs_out(x, k, cert_pem, key_pem, err, errlen);
    X509_free(x);
    EVP_PKEY_free(k);
    return rc;
}

/* subjectAltName of `names` (IP: for addresses, DNS: for the rest). */
static int certs_add_san(X509 *x, const char *const *names, size_t n)
{
    GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
    int ok = gens != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        GENERAL_NAME *g = GENERAL_NAME_new();
        ASN1_OCTET_STRING *ip = g ? a2i_IPADDRESS(names[i]) : NULL;
        ERR_clear_error();
        if (!g) {
            ok = 0;
        } else if (ip) {
            GENERAL_NAME_set0_value(g, GEN_IPADD, ip);
        } else {
            ASN1_IA5STRING *s = ASN1_IA5STRING_new();
            ok = s && ASN1_STRING_set(s, names[i], -1);
            if (ok) GENERAL_NAME_set0_value(g, GEN_DNS, s);
            else ASN1_IA5STRING_free(s);
        }
        if (ok && !sk_GENERAL_NAME_push(gens, g)) ok = 0;
        if (!ok) GENERAL_NAME_free(g);
    }
    ok = ok && X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) == 1;
    GENERAL_NAMES_free(gens);
    return ok ? 0 : -1;
}

int certs_new_serving(const char *ca_pem, const char *ca_key_pem, const char *const *names, size_t n, double now,
                      double validity_s, char **cert_pem, char **key_pem, char *err, size_t errlen)
{
    *cert_pem = *key_pem = NULL;
    if (n < 1 || n > CERTS_MAX_NAMES) {
        util_set_err(err, errlen, "certs: 1 to %d names are needed, got %zu", CERTS_MAX_NAMES, n);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (!names[i] || !*names[i] || strlen(names[i]) > 253) {
            util_set_err(err, errlen, "certs: name %zu is empty or over 253 characters", i + 1);
            return -1;
        }
    X509 *ca = certs_read_cert(ca_pem);
    EVP_PKEY *cak = certs_read_key(ca_key_pem);
    if (!ca || !cak || X509_check_private_key(ca, cak) != 1) {
        ERR_clear_error();
        util_set_err(err, errlen, "certs: %s", !ca ? "no CA certificate" : !cak ? "no CA key" : "CA key does not match the CA");
        X509_free(ca);
        EVP_PKEY_free(cak);
        return -1;
    }
    double not_after = fmin(floor(now) + validity_s, certs_time(X509_get0_notAfter(ca)));
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = k ? certs_new_x509(k, names[0], floor(now) - certs_backdate(validity_s), not_after) : NULL;
    int ok = x && X509_set_issuer_name(x, X509_get_subject_name(ca)) &&
             certs_add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") == 0 &&
             certs_add_ext(x, ca, NID_key_usage, "critical,digitalSignature") == 0 &&
             certs_add_ext(x, ca, NID_ext_key_usage, "serverAuth") == 0 &&
             certs_add_ext(x, ca, NID_authority_key_identifier, "keyid:always") == 0 &&
             certs_add_san(x, names, n) == 0 && X509_sign(x, cak, EVP_sha256()) > 0;
    int rc = -1;
    if (!ok) certs_ossl_err(err, errlen, "making the serving certificate");
    else rc = certs_out(x, k, cert_pem, key_pem, err, errlen);
    X509_free(x);
    EVP_PKEY_free(k);
    X509_free(ca);
    EVP_PKEY_free(cak);
    return rc;
}

/* ---- deciding ------------------------------------------------------------------------------ */

/* 1 when 2/3 of [not_before, not_after] has passed at `now`. */
static int certs_aged(const certs_info *i, double now)
{
    return now >= i->not_before + (i->not_after - i->not_before) * 2.0 / 3.0;
}

int certs_plan(const certs_set *cur, const char *const *names, size_t n, double now, double validity_s,
               char *why, size_t whylen)
{
    certs_info ca, sv;
    char e[128];
    util_set_err(why, whylen, "%s", "");
    if (!cur || certs_inspect(cur->ca_bundle, &ca, e, sizeof e)) {
        util_set_err(why, whylen, "no usable CA: no CA certificate");
        return CERTS_NEW_CA | CERTS_NEW_SERVING;
    }
    if (!ca.is_ca || !certs_key_matches(cur->ca_bundle, cur->ca_key)) {
        util_set_err(why, whylen, "no usable CA: %s", !ca.is_ca ? "not a CA certificate" : "the CA key does not match");
        return CERTS_NEW_CA | CERTS_NEW_SERVING;
    }
    if (certs_aged(&ca, now)) {
        util_set_err(why, whylen, "CA past 2/3 of its lifetime (expires %.0f)", ca.not_after);
        return CERTS_NEW_CA | CERTS_NEW_SERVING;
    }
    if (certs_inspect(cur->cert, &sv, e, sizeof e)) {
        util_set_err(why, whylen, "no serving certificate");
        return CERTS_NEW_SERVING;
    }
    if (!certs_key_matches(cur->cert, cur->key)) util_set_err(why, whylen, "serving key does not match its certificate");
    else if (!certs_signed_by(cur->cert, cur->ca_bundle)) util_set_err(why, whylen, "serving certificate not signed by the CA");
    else if (!certs_names_match(cur->cert, names, n)) util_set_err(why, whylen, "serving certificate names differ");
    else if (certs_aged(&sv, now)) util_set_err(why, whylen, "serving certificate past 2/3 of its lifetime");
    else if (sv.not_after > floor(now) + validity_s + 60) util_set_err(why, whylen, "serving certificate outlives a new one (validity shortened)");
    else return 0;
    return CERTS_NEW_SERVING;
}

/* ca_bundle for a new CA: `ca_pem` then the certificates of `old` valid at `now`, not the same
 * as the new one, up to CERTS_BUNDLE_MAX in all. */
static char *certs_bundle(const char *ca_pem, const char *old, double now)
{
    util_buf b = {.first = 4096};
    util_buf_str(&b, ca_pem);
    BIO *in = old && *old ? BIO_new_mem_buf(old, -1) : NULL;
    X509 *x;
    int kept = 1;
    while (in && kept < CERTS_BUNDLE_MAX && (x = PEM_read_bio_X509(in, NULL, NULL, NULL))) {
        if (certs_time(X509_get0_notAfter(x)) > now) {
            char *pem = certs_pem_cert(x);
            if (pem && strcmp(pem, ca_pem) != 0) {
                util_buf_str(&b, pem);
                kept++;
            }
            free(pem);
        }
        X509_free(x);
    }
    BIO_free(in);
    ERR_clear_error();
    if (b.oom) {
        util_buf_free(&b);
        return NULL;
    }
    return b.p;
}

int certs_issue(const certs_set *cur, int plan, const char *const *names, size_t n, double now, double validity_s,
                certs_set *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    certs_set none = {0};
    if (!cur) cur = &none;
    if (plan & CERTS_NEW_CA) {
        char *ca = NULL;
        if (certs_new_ca(CERTS_CA_CN, now, CERTS_CA_VALIDITY_S, &ca, &out->ca_key, err, errlen)) return -1;
        out->ca_bundle = certs_bundle(ca, cur->ca_bundle, now);
        free(ca);
        plan |= CERTS_NEW_SERVING;
    } else {
        out->ca_bundle = cur->ca_bundle ? strdup(cur->ca_bundle) : NULL;
        out->ca_key = cur->ca_key ? strdup(cur->ca_key) : NULL;
    }
    if (!out->ca_bundle || !out->ca_key) {
        util_set_err(err, errlen, "certs: %s", plan & CERTS_NEW_CA ? "out of memory" : "no CA to sign with");
        certs_set_clear(out);
        return -1;
    }
    if (plan & CERTS_NEW_SERVING) {
        if (certs_new_serving(out->ca_bundle, out->ca_key, names, n, now, validity_s, &out->cert, &out->key, err,
                              errlen)) {
            certs_set_clear(out);
            return -1;
        }
    } else {
        out->cert = cur->cert ? strdup(cur->cert) : NULL;
        out->key = cur->key ? strdup(cur->key) : NULL;
        if (!out->cert || !out->key) {
            util_set_err(err, errlen, "certs: no serving certificate to keep");
            certs_set_clear(out);
            return -1;
        }
    }
    return 0;
}
