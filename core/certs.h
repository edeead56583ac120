/* SPDX-License-Identifier: Apache-2.0 */
/* core/certs: the admission webhook's certificates, made and checked with OpenSSL (EVP keys,
 * X509): a self-signed CA and a serving certificate it signs, both ECDSA P-256 (the key type
 * cert-manager and the API server's own serving certificates default to), and the decision when
 * to make new ones. No I/O: the Kubernetes side (the Secret, the webhook configurations'
 * caBundle) is core/certsync.
 *
 * A set is four PEM texts, as the Secret flink-controller-webhook holds them:
 *   ca_bundle  the CAs the API server is to trust (the caBundle): the current CA first, then
 *              older CAs that are still valid (kept after a CA rotation until they expire)
 *   ca_key     the current CA's private key (PKCS#8)
 *   cert, key  the serving certificate (signed by the current CA) and its key (PKCS#8)
 *
 * Rules (docs/webhook.md, "Rotation"):
 *   - the serving certificate is renewed when 2/3 of its lifetime has passed (cert-manager's
 *     default renewBefore is 1/3 of the duration), when its names differ from the wanted ones,
 *     when its key does not match, when the current CA did not sign it, or when it would
 *     outlive a new one by over a minute (the validity was shortened);
 *   - the CA (CERTS_CA_VALIDITY_S) is replaced when 2/3 of its lifetime has passed or it cannot
 *     be used (missing, not a CA, key mismatch); the old one stays in ca_bundle until it
 *     expires, so a serving certificate it signed is still trusted while the new one spreads.
 *   - notBefore is backdated by min(60 s, a tenth of the lifetime) for clocks a little behind.
 * Times are seconds since the Epoch (UTC) as doubles; whole seconds are used.
 */
#ifndef FC_CERTS_H
#define FC_CERTS_H

#include <stddef.h>

#define CERTS_CA_VALIDITY_S (10.0 * 365 * 86400)  /* the CA: 10 years */
#define CERTS_DEFAULT_VALIDITY_S (90.0 * 86400)   /* serving certificate default: 90 days */
#define CERTS_MIN_VALIDITY_S 30.0                 /* shortest --webhook-cert-validity */
#define CERTS_MAX_VALIDITY_S (397.0 * 86400)      /* longest: CA/Browser Forum's 397 days */
#define CERTS_CA_CN "flink-controller-webhook-ca"
#define CERTS_MAX_NAMES 16

/* Four PEM texts (malloc'd, NUL-terminated; NULL when absent). */
typedef struct certs_set {
    char *ca_bundle, *ca_key, *cert, *key;
} certs_set;

/* What certs_plan decided: bits of CERTS_NEW_CA and CERTS_NEW_SERVING; 0 keeps the set. */
enum { CERTS_NEW_SERVING = 1, CERTS_NEW_CA = 2 };

/* What a certificate says (certs_inspect). */
typedef struct certs_info {
    double not_before, not_after;   /* seconds since the Epoch */
    int is_ca;                      /* basicConstraints CA:TRUE */
    char serial[80];                /* hex, upper case, as openssl x509 -serial prints it */
    char subject_cn[256];
    size_t nnames;                  /* subjectAltName entries (DNS and IP) */
} certs_info;

/* Frees the four texts and zeroes the set. NULL: no-op. */
void certs_set_clear(certs_set *s);

/* Parses a duration "N" followed by s, m, h or d (e.g. "90s", "2160h", "90d"; a number without
 * a unit is seconds) into *out seconds, within CERTS_MIN_VALIDITY_S..CERTS_MAX_VALIDITY_S.
 * 0, or -1 with err ("expected a duration 30s..397d such as 90d, got 'x'"). */
int certs_parse_validity(const char *s, double *out, char *err, size_t errlen);

/* Reads the first certificate of `pem` into *out. 0, or -1 with err ("no certificate in the
 * PEM text", OpenSSL's reason). */
int certs_inspect(const char *pem, certs_info *out, char *err, size_t errlen);

/* 1 when the first certificate of `cert_pem` carries exactly `names` as its subjectAltName
 * entries (each name once, in any order; DNS names compared without case, IP addresses as
 * addresses), 0 otherwise or when it cannot be read. */
int certs_names_match(const char *cert_pem, const char *const *names, size_t n);

/* 1 when `key_pem` is the private key of the first certificate of `cert_pem`, else 0. */
int certs_key_matches(const char *cert_pem, const char *key_pem);

/* 1 when the first certificate of `ca_pem` issued the first of `cert_pem` (issuer name and
 * signature checked with the CA's public key), else 0. */
int certs_signed_by(const char *cert_pem, const char *ca_pem);

/* Makes a self-signed CA (CN `cn`, basicConstraints critical CA:TRUE pathlen 0, keyUsage
 * critical keyCertSign cRLSign), valid from `now` minus the backdate to `now + validity_s`.
 * *cert_pem, *key_pem: new malloc'd texts. 0, or -1 with err ("certs: <OpenSSL's reason>"). */
int certs_new_ca(const char *cn, double now, double validity_s, char **cert_pem, char **key_pem, char *err,
                 size_t errlen);

/* Makes a serving certificate signed by the CA (`ca_pem`'s first certificate, `ca_key_pem`):
 * CN names[0], subjectAltName IP:<name> for names that parse as an IPv4 or IPv6 address and
 * DNS:<name> for the others, extendedKeyUsage serverAuth, keyUsage critical digitalSignature,
 * valid from `now` minus the backdate to `now + validity_s` (not after the CA's notAfter).
 * `n` is 1..CERTS_MAX_NAMES. 0, or -1 with err ("certs: CA key does not match the CA", ...). */
int certs_new_serving(const char *ca_pem, const char *ca_key_pem, const char *const *names, size_t n, double now,
                      double validity_s, char **cert_pem, char **key_pem, char *err, size_t errlen);

/* The decision at `now` for the set `cur` (any member may be NULL or garbage) with the wanted
 * names and serving validity: a mask of CERTS_NEW_CA and CERTS_NEW_SERVING (a new CA implies a
 * new serving certificate), 0 to keep it. `why` gets the reason in words ("no usable CA: ...",
 * "serving certificate past 2/3 of its lifetime", "names differ", ...; "" for 0). */
int certs_plan(const certs_set *cur, const char *const *names, size_t n, double now, double validity_s,
               char *why, size_t whylen);

/* Makes the set `out` from `cur` as `plan` says (certs_plan's mask): CERTS_NEW_CA makes a new
 * CA, which heads the new ca_bundle followed by the certificates of cur's bundle still valid
 * at `now` (up to 4 of them); CERTS_NEW_SERVING a serving certificate by the (new or current)
 * CA. What the plan does not renew is copied. 0, or -1 with err (out then cleared). */
int certs_issue(const certs_set *cur, int plan, const char *const *names, size_t n, double now, double validity_s,
                certs_set *out, char *err, size_t errlen);

#endif
