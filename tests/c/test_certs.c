/* SPDX-License-Identifier: Apache-2.0 */
/* TAP tests of core/certs: the CA and the serving certificate it signs (names, validity, key
 * match, signature), checked with OpenSSL and the openssl CLI, and the renewal decision at
 * given times. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "certs.h"
#include "certsync.h"
#include "transport_tap.h"

static const double T0 = 1800000000.0; /* 2027-01-15T08:00:00Z */

static const char *const NAMES[] = {"flink-controller-webhook.flink-system.svc",
                                    "flink-controller-webhook.flink-system.svc.cluster.local",
                                    "flink-controller-webhook.flink-system", "127.0.0.1", "::1"};

static void test_validity(void)
{
    double v = 0;
    char err[128] = "";
    IS_INT(certs_parse_validity("90d", &v, err, sizeof err), 0, "validity: 90d");
    IS_INT((long long)v, 7776000, "validity: 90d is 7776000 s");
    certs_parse_validity("2160h", &v, err, sizeof err);
    IS_INT((long long)v, 7776000, "validity: 2160h is 90 days");
    certs_parse_validity("90s", &v, err, sizeof err);
    IS_INT((long long)v, 90, "validity: 90s");
    certs_parse_validity("45m", &v, err, sizeof err);
    IS_INT((long long)v, 2700, "validity: 45m");
    certs_parse_validity("120", &v, err, sizeof err);
    IS_INT((long long)v, 120, "validity: a bare number is seconds");
    IS_INT(certs_parse_validity("10s", &v, err, sizeof err), -1, "validity: under 30 s refused");
    IS_STR(err, "expected a duration 30s..397d such as 90d, got '10s'", "validity: the message");
    IS_INT(certs_parse_validity("398d", &v, err, sizeof err), -1, "validity: over 397 days refused");
    IS_INT(certs_parse_validity("90y", &v, err, sizeof err), -1, "validity: unknown unit refused");
    IS_INT(certs_parse_validity("-90d", &v, err, sizeof err), -1, "validity: negative refused");
    IS_INT(certs_parse_validity("", &v, err, sizeof err), -1, "validity: empty refused");
}

/* Writes `text` to a temporary file; its path in `path` (17+ bytes). */
static void write_tmp(char *path, const char *text)
{
    strcpy(path, "/tmp/fc_certs_XXXXXX");
    int fd = mkstemp(path);
    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0) perror("write");
        close(fd);
    }
}

/* The first line of a shell command's output (newline removed). */
static void run_line(const char *cmd, char *out, size_t n)
{
    out[0] = '\0';
    FILE *p = popen(cmd, "r");
    if (!p) return;
    if (!fgets(out, (int)n, p)) out[0] = '\0';
    pclose(p);
    out[strcspn(out, "\n")] = '\0';
}

static void test_make(void)
{
    char err[256] = "", *ca = NULL, *cakey = NULL, *crt = NULL, *key = NULL;
    certs_info ci, si;
    IS_INT(certs_new_ca(CERTS_CA_CN, T0, CERTS_CA_VALIDITY_S, &ca, &cakey, err, sizeof err), 0, "ca: made (%s)", err);
    OK(ca && strncmp(ca, "-----BEGIN CERTIFICATE-----\n", 28) == 0, "ca: a PEM certificate");
    OK(cakey && strncmp(cakey, "-----BEGIN PRIVATE KEY-----\n", 28) == 0, "ca: a PKCS#8 PEM key");
    IS_INT(certs_inspect(ca, &ci, err, sizeof err), 0, "ca: inspected");
    IS_INT(ci.is_ca, 1, "ca: basicConstraints CA:TRUE");
    IS_STR(ci.subject_cn, "flink-controller-webhook-ca", "ca: CN");
    IS_INT((long long)ci.not_before, (long long)T0 - 60, "ca: notBefore backdated 60 s");
    IS_INT((long long)ci.not_after, (long long)T0 + 315360000, "ca: notAfter 10 years (3650 days) on");
    IS_INT(ci.nnames, 0, "ca: no subjectAltName");
    IS_INT(certs_key_matches(ca, cakey), 1, "ca: key matches");

    IS_INT(certs_new_serving(ca, cakey, NAMES, 5, T0, 7776000, &crt, &key, err, sizeof err), 0, "serving: made (%s)", err);
    IS_INT(certs_inspect(crt, &si, err, sizeof err), 0, "serving: inspected");
    IS_INT(si.is_ca, 0, "serving: not a CA");
    IS_STR(si.subject_cn, NAMES[0], "serving: CN is the first name");
    IS_INT((long long)si.not_before, (long long)T0 - 60, "serving: notBefore backdated 60 s");
    IS_INT((long long)si.not_after, (long long)T0 + 7776000, "serving: notAfter 90 days on");
    IS_INT(si.nnames, 5, "serving: 5 subjectAltName entries");
    OK(strlen(si.serial) >= 30 && strcmp(si.serial, ci.serial) != 0, "serving: a random serial (%s)", si.serial);
    IS_INT(certs_names_match(crt, NAMES, 5), 1, "serving: names match the wanted ones");
    const char *reordered[] = {"::1", "127.0.0.1", "FLINK-controller-webhook.flink-system", NAMES[1], NAMES[0]};
    IS_INT(certs_names_match(crt, reordered, 5), 1, "serving: names match in any order, DNS without case");
    IS_INT(certs_names_match(crt, NAMES, 4), 0, "serving: a name fewer does not match");
    const char *other[] = {NAMES[0], NAMES[1], NAMES[2], "127.0.0.2", "::1"};
    IS_INT(certs_names_match(crt, other, 5), 0, "serving: another IP does not match");
    IS_INT(certs_key_matches(crt, key), 1, "serving: key matches its certificate");
    IS_INT(certs_key_matches(crt, cakey), 0, "serving: the CA key does not");
    IS_INT(certs_signed_by(crt, ca), 1, "serving: signed by the CA");
    IS_INT(certs_signed_by(ca, ca), 1, "ca: self-signed");

    /* a short lifetime: backdated a tenth of it */
    char *c2 = NULL, *k2 = NULL;
    certs_new_serving(ca, cakey, NAMES, 1, T0, 90, &c2, &k2, err, sizeof err);
    certs_inspect(c2, &si, err, sizeof err);
    IS_INT((long long)si.not_before, (long long)T0 - 9, "serving 90 s: notBefore backdated 9 s");
    IS_INT((long long)si.not_after, (long long)T0 + 90, "serving 90 s: notAfter 90 s on");

    /* openssl's own view: the chain verifies for the purpose sslserver, the SANs as written */
    char fca[32], fcrt[32], cmd[256], line[512];
    write_tmp(fca, ca);
    write_tmp(fcrt, crt);
    snprintf(cmd, sizeof cmd, "openssl verify -attime %.0f -purpose sslserver -CAfile %s %s 2>&1", T0 + 10, fca, fcrt);
    run_line(cmd, line, sizeof line);
    char want[64];
    snprintf(want, sizeof want, "%s: OK", fcrt);
    IS_STR(line, want, "openssl verify: the serving certificate chains to the CA");
    snprintf(cmd, sizeof cmd, "openssl x509 -in %s -noout -ext subjectAltName 2>&1 | tail -n 1", fcrt);
    run_line(cmd, line, sizeof line);
    IS_STR(line,
           "    DNS:flink-controller-webhook.flink-system.svc, DNS:flink-controller-webhook.flink-system.svc.cluster.local, "
           "DNS:flink-controller-webhook.flink-system, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1",
           "openssl x509: subjectAltName");
    snprintf(cmd, sizeof cmd, "openssl x509 -in %s -noout -ext extendedKeyUsage 2>&1 | tail -n 1", fcrt);
    run_line(cmd, line, sizeof line);
    IS_STR(line, "    TLS Web Server Authentication", "openssl x509: extendedKeyUsage serverAuth");
    unlink(fca);
    unlink(fcrt);

    /* errors */
    char *x = NULL, *y = NULL;
    IS_INT(certs_new_serving(ca, key, NAMES, 1, T0, 90, &x, &y, err, sizeof err), -1, "serving: wrong CA key refused");
    IS_STR(err, "certs: CA key does not match the CA", "serving: the message");
    IS_INT(certs_new_serving(ca, cakey, NAMES, 0, T0, 90, &x, &y, err, sizeof err), -1, "serving: no names refused");
    IS_STR(err, "certs: 1 to 16 names are needed, got 0", "serving: the message for no names");
    IS_INT(certs_new_serving("junk", cakey, NAMES, 1, T0, 90, &x, &y, err, sizeof err), -1, "serving: no CA refused");
    IS_STR(err, "certs: no CA certificate", "serving: the message for no CA");
    IS_INT(certs_inspect("junk", &si, err, sizeof err), -1, "inspect: junk refused");
    OK(!x && !y, "errors leave no texts");
    free(ca);
    free(cakey);
    free(crt);
    free(key);
    free(c2);
    free(k2);
}

static void test_plan(void)
{
    char why[160], err[256] = "";
    const double V = 90.0 * 86400;
    IS_INT(certs_plan(NULL, NAMES, 3, T0, V, why, sizeof why), CERTS_NEW_CA | CERTS_NEW_SERVING, "plan: nothing: a CA and a certificate");
    IS_STR(why, "no usable CA: no CA certificate", "plan: the reason");
    certs_set empty = {0}, s = {0}, s2 = {0};
    IS_INT(certs_issue(&empty, CERTS_NEW_CA, NAMES, 3, T0, V, &s, err, sizeof err), 0, "issue: from nothing (%s)", err);
    OK(s.ca_bundle && s.ca_key && s.cert && s.key, "issue: all four texts");
    IS_INT(certs_signed_by(s.cert, s.ca_bundle), 1, "issue: serving signed by the bundle's first CA");
    IS_INT(certs_plan(&s, NAMES, 3, T0, V, why, sizeof why), 0, "plan: fresh set kept");
    IS_STR(why, "", "plan: no reason");
    /* 2/3 of [T0-60, T0+90d]: T0 - 60 + (90d + 60) * 2/3 = T0 + 5183980 */
    IS_INT(certs_plan(&s, NAMES, 3, T0 + 5183979, V, why, sizeof why), 0, "plan: one second before 2/3: kept");
    IS_INT(certs_plan(&s, NAMES, 3, T0 + 5183980, V, why, sizeof why), CERTS_NEW_SERVING, "plan: at 2/3: renew the serving certificate");
    IS_STR(why, "serving certificate past 2/3 of its lifetime", "plan: the reason");
    IS_INT(certs_plan(&s, NAMES, 4, T0, V, why, sizeof why), CERTS_NEW_SERVING, "plan: another name: renew");
    IS_STR(why, "serving certificate names differ", "plan: the reason");
    IS_INT(certs_plan(&s, NAMES, 3, T0, 90, why, sizeof why), CERTS_NEW_SERVING, "plan: validity shortened to 90 s: renew");
    IS_STR(why, "serving certificate outlives a new one (validity shortened)", "plan: the reason");
    IS_INT(certs_plan(&s, NAMES, 3, T0 + 86400, 89.0 * 86400 - 60, why, sizeof why), 0,
           "plan: a new one would end a minute before this one: kept");
    IS_INT(certs_plan(&s, NAMES, 3, T0 + 86400, 89.0 * 86400 - 61, why, sizeof why), CERTS_NEW_SERVING,
           "plan: a new one would end over a minute before this one: renew");

    /* the renewal keeps the CA */
    IS_INT(certs_issue(&s, CERTS_NEW_SERVING, NAMES, 3, T0 + 5183980, V, &s2, err, sizeof err), 0, "issue: renewal");
    IS_STR(s2.ca_bundle, s.ca_bundle, "issue: renewal keeps the bundle");
    IS_STR(s2.ca_key, s.ca_key, "issue: renewal keeps the CA key");
    OK(strcmp(s2.cert, s.cert) != 0 && strcmp(s2.key, s.key) != 0, "issue: a new pair");
    IS_INT(certs_signed_by(s2.cert, s.ca_bundle), 1, "issue: signed by the same CA");
    IS_INT(certs_plan(&s2, NAMES, 3, T0 + 5183980, V, why, sizeof why), 0, "plan: the renewed set is kept");

    /* broken members */
    certs_set bad = s;
    bad.key = s2.key;
    IS_INT(certs_plan(&bad, NAMES, 3, T0, V, why, sizeof why), CERTS_NEW_SERVING, "plan: mismatched serving key: renew");
    IS_STR(why, "serving key does not match its certificate", "plan: the reason");
    bad = s;
    bad.cert = NULL;
    IS_INT(certs_plan(&bad, NAMES, 3, T0, V, why, sizeof why), CERTS_NEW_SERVING, "plan: no serving certificate");
    IS_STR(why, "no serving certificate", "plan: the reason");
    bad = s;
    bad.ca_key = s.key;
    IS_INT(certs_plan(&bad, NAMES, 3, T0, V, why, sizeof why), CERTS_NEW_CA | CERTS_NEW_SERVING, "plan: wrong CA key: new CA");
    IS_STR(why, "no usable CA: the CA key does not match", "plan: the reason");
    bad = s;
    bad.ca_bundle = s.cert;
    bad.ca_key = s.key;
    IS_INT(certs_plan(&bad, NAMES, 3, T0, V, why, sizeof why), CERTS_NEW_CA | CERTS_NEW_SERVING, "plan: a leaf as CA: new CA");
    IS_STR(why, "no usable CA: not a CA certificate", "plan: the reason");

    /* a serving certificate from another CA */
    certs_set other = {0};
    certs_issue(NULL, CERTS_NEW_CA, NAMES, 3, T0, V, &other, err, sizeof err);
    bad = s;
    bad.cert = other.cert;
    bad.key = other.key;
    IS_INT(certs_plan(&bad, NAMES, 3, T0, V, why, sizeof why), CERTS_NEW_SERVING, "plan: signed by another CA: renew");
    IS_STR(why, "serving certificate not signed by the CA", "plan: the reason");

    /* the CA's 2/3: T0 - 60 + (3650d + 60) * 2/3 = T0 + 210239980 */
    IS_INT(certs_plan(&s, NAMES, 3, T0 + 210239979, V, why, sizeof why), CERTS_NEW_SERVING,
           "plan: CA not yet at 2/3 (the serving one long past it)");
    double tca = T0 + 210239980;
    IS_INT(certs_plan(&s, NAMES, 3, tca, V, why, sizeof why), CERTS_NEW_CA | CERTS_NEW_SERVING, "plan: CA at 2/3: new CA");
    OK(strncmp(why, "CA past 2/3 of its lifetime", 27) == 0, "plan: the reason (%s)", why);
    certs_set r = {0};
    IS_INT(certs_issue(&s, CERTS_NEW_CA, NAMES, 3, tca, V, &r, err, sizeof err), 0, "issue: CA rotation");
    OK(strcmp(r.ca_key, s.ca_key) != 0, "issue: a new CA key");
    OK(strncmp(r.ca_bundle, s.ca_bundle, strlen(s.ca_bundle)) != 0, "issue: the new CA heads the bundle");
    OK(strlen(r.ca_bundle) > strlen(s.ca_bundle) && strcmp(r.ca_bundle + strlen(r.ca_bundle) - strlen(s.ca_bundle), s.ca_bundle) == 0,
       "issue: the old CA follows it (still valid)");
    IS_INT(certs_signed_by(r.cert, r.ca_bundle), 1, "issue: serving signed by the new CA");
    IS_INT(certs_signed_by(r.cert, s.ca_bundle), 0, "issue: not by the old one");
    IS_INT(certs_plan(&r, NAMES, 3, tca, V, why, sizeof why), 0, "plan: the rotated set is kept");
    certs_set r2 = {0};
    certs_issue(&r, CERTS_NEW_CA, NAMES, 3, T0 + 315360000 + 1, V, &r2, err, sizeof err);
    const char *end = strstr(r.ca_bundle, "-----END CERTIFICATE-----\n");
    char *rfirst = end ? strndup(r.ca_bundle, (size_t)(end - r.ca_bundle) + 26) : NULL;
    OK(rfirst && strncmp(r2.ca_bundle, rfirst, strlen(rfirst)) != 0, "issue: a second rotation: another CA first");
    OK(rfirst && strlen(r2.ca_bundle) > strlen(rfirst) &&
       strcmp(r2.ca_bundle + strlen(r2.ca_bundle) - strlen(rfirst), rfirst) == 0,
       "issue: a second rotation keeps the CA still valid after it");
    OK(!strstr(r2.ca_bundle, s.ca_bundle), "issue: the expired first CA is dropped");
    free(rfirst);
    certs_set_clear(&r2);
    IS_INT(certs_issue(&empty, CERTS_NEW_SERVING, NAMES, 3, T0, V, &r2, err, sizeof err), -1, "issue: no CA to sign with");
    IS_STR(err, "certs: no CA to sign with", "issue: the message");
    certs_set_clear(&s);
    certs_set_clear(&s2);
    certs_set_clear(&other);
    certs_set_clear(&r);
    certs_set_clear(&r2);
    certs_set_clear(NULL);
}

/* certsync_names: the Service's three forms, then --webhook-host's, each once */
static void test_names(void)
{
    char *names[CERTS_MAX_NAMES], err[160] = "";
    int n = certsync_names("flink-system/flink-controller-webhook", "127.0.0.1,,webhook.example,::1,127.0.0.1",
                           names, CERTS_MAX_NAMES, err, sizeof err);
    IS_INT(n, 6, "names: 3 of the Service, 3 hosts (an empty item skipped, a repeat once)");
    if (n == 6) {
        IS_STR(names[0], "flink-controller-webhook.flink-system.svc", "names: NAME.NS.svc first (the CN)");
        IS_STR(names[1], "flink-controller-webhook.flink-system.svc.cluster.local", "names: NAME.NS.svc.cluster.local");
        IS_STR(names[2], "flink-controller-webhook.flink-system", "names: NAME.NS");
        IS_STR(names[3], "127.0.0.1", "names: the first host");
        IS_STR(names[4], "webhook.example", "names: the second host");
        IS_STR(names[5], "::1", "names: the third host");
    }
    certsync_names_free(names, n > 0 ? (size_t)n : 0);
    n = certsync_names(NULL, "127.0.0.1", names, CERTS_MAX_NAMES, err, sizeof err);
    IS_INT(n, 1, "names: hosts alone");
    if (n == 1) IS_STR(names[0], "127.0.0.1", "names: the host is the CN");
    certsync_names_free(names, n > 0 ? (size_t)n : 0);
    IS_INT(certsync_names("flink-controller-webhook", NULL, names, CERTS_MAX_NAMES, err, sizeof err), -1,
           "names: a Service without namespace refused");
    IS_STR(err, "--webhook-service: expected NAMESPACE/NAME, got 'flink-controller-webhook'", "names: its message");
    IS_INT(certsync_names(NULL, ",", names, CERTS_MAX_NAMES, err, sizeof err), -1, "names: none refused");
    IS_STR(err, "no names: --webhook-service or --webhook-host is needed", "names: its message");
    IS_INT(certsync_names("a/b", "c,d", names, 4, err, sizeof err), -1, "names: over the maximum refused");
    IS_STR(err, "over 4 names", "names: its message");
}

int main(void)
{
    test_validity();
    test_names();
    test_make();
    test_plan();
    return DONE_TESTING();
}
