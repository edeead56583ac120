/* SPDX-License-Identifier: Apache-2.0 */
/* core/version: the release and the commit this binary was built from.
 *
 * FC_VERSION  the release, "MAJOR.MINOR.PATCH" with git describe's suffix when built from a
 *             commit after a tag ("0.2.0-3-g1a2b3c4d5e6f", "-dirty" for local changes), or the
 *             VERSION file's release when the tree has no tag;
 * FC_COMMIT   the commit, 12 hex digits ("-dirty" appended for local changes), or "unknown"
 *             when built outside a git checkout without COMMIT= (the Dockerfile passes it).
 * Both come from the Makefile (-D, through build/version.flags); the defaults below serve a
 * compile without it. */
#ifndef FC_VERSION_H
#define FC_VERSION_H

#ifndef FC_VERSION
#define FC_VERSION "0.0.0"
#endif
#ifndef FC_COMMIT
#define FC_COMMIT "unknown"
#endif

#endif
