#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Debian root file system for the test environment's container images (no
# registry here, so no `FROM debian:...`): debootstrap minbase plus packages,
# then trimmed like Debian's slim images (no .debs, apt lists, docs but the
# copyright files, man/info pages, locales, logs; an empty /dev; no host
# resolv.conf/hostname: the container runtime provides those).
# Usage: tests/env/image/rootfs.sh SUITE PKG[,PKG...] DIR
#   SUITE  Debian suite (bookworm); PKGs: debootstrap --include list; DIR must
#   not exist yet (written as DIR.tmp.<pid>, renamed at the end).
# Mirror: $TESTENV_DEBIAN_MIRROR, else the first http(s) URI of the machine's
# apt sources (/etc/apt/sources.list, sources.list.d/*.list|*.sources) that
# serves SUITE itself (not -security/-updates).
# Needs root and debootstrap.  Exit: 0 done; 1 debootstrap failed (its log
# tail on stderr) or no mirror found; 2 usage.
set -euo pipefail
[ $# -eq 3 ] || { sed -n '7,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
suite=$1 pkgs=$2 dir=$3
[ ! -e "$dir" ] || { echo "rootfs: $dir exists" >&2; exit 2; }

# debian_mirror SUITE: the URI of the first apt source (one-line or deb822)
# with suite SUITE.
debian_mirror() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v suite="$1" '
      # one-line format: deb [options] URI SUITE COMPONENTS...
      $1 == "deb" { l = $0; gsub(/\[[^]]*\]/, "", l); split(l, a, " ");
                    if (a[3] == suite) { print a[2]; exit } }
      # deb822: URIs: and Suites: fields of one paragraph
      /^[ \t]*$/ { uri = ""; ok = 0 }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (j = 2; j <= NF; j++) if ($j == suite) ok = 1 }
      uri != "" && ok { print uri; exit }' "$f"
  done | grep -m1 -E '^https?://'
}
mirror=${TESTENV_DEBIAN_MIRROR:-$(debian_mirror "$suite" || true)}
[ -n "$mirror" ] || { echo "rootfs: no apt source for $suite (set TESTENV_DEBIAN_MIRROR)" >&2; exit 1; }

tmp=$dir.tmp.$$
trap 'rm -rf "$tmp"' EXIT
echo "rootfs: debootstrap $suite from $mirror with $pkgs" >&2
debootstrap --variant=minbase --include="$pkgs" "$suite" "$tmp" "$mirror" >"$tmp.log" 2>&1 || {
  tail -n 20 "$tmp.log" >&2; rm -f "$tmp.log"; exit 1; }
rm -f "$tmp.log"

rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/cache/apt/*.bin "$tmp"/var/lib/apt/lists/* \
  "$tmp"/usr/share/man/* "$tmp"/usr/share/info/* "$tmp"/usr/share/locale/* \
  "$tmp"/var/cache/debconf/*-old "$tmp"/var/lib/dpkg/*-old "$tmp"/dev/* "$tmp"/tmp/* \
  "$tmp"/etc/resolv.conf "$tmp"/etc/hostname
find "$tmp"/usr/share/doc -type f ! -name copyright -delete
find "$tmp"/usr/share/doc -type d -empty -delete
find "$tmp"/var/log -type f -delete
mv "$tmp" "$dir"
trap - EXIT
