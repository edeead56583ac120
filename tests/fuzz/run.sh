#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fuzz suite (tests/run.sh fuzz; docs/reliability.md), in TAP: builds the libFuzzer
# targets (make fuzz: clang-14 under ASan+UBSan, objects in build/fuzz/), then for each target
# one test: every input kept in tests/fuzz/regressions/<target>/ and tests/fuzz/corpus/<target>/
# run once, then FUZZ_SECONDS (default 55) of fuzzing from the corpus. A crash, a leak, a
# sanitizer report, an input over 1 s (-timeout=1; 3 s for render, see below) or over the memory bounds (one allocation
# over 64 MiB: -malloc_limit_mb=64; the Lua heap growing by over 64 MiB: fuzz_host.h;
# -rss_limit_mb=512 as the process's backstop, ASan's own memory included) fails the test and
# prints the input's path. A found input belongs in tests/fuzz/regressions/<target>/ (with
# the fix), where every later run replays it. Without clang-14 (make deps installs it) the
# suite fails.
set -u
cd "$(dirname "$0")/../.."
SECONDS_EACH=${FUZZ_SECONDS:-55}
OUT=build/fuzz
LOGS=${FC_TEST_LOGS:-build/test-logs}/fuzz
mkdir -p "$LOGS"
targets=()
for f in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
echo "1..$((1 + ${#targets[@]}))"
if ! command -v clang-14 >/dev/null; then
  echo "not ok 1 build the fuzz targets: clang-14 is missing (make deps installs it)"
  exit 1
fi
if ! make -s -j2 fuzz >"$LOGS/build.log" 2>&1; then
  echo "not ok 1 build the fuzz targets (make fuzz)"
  sed 's/^/# /' "$LOGS/build.log" | tail -n 30
  exit 1
fi
echo "ok 1 build the fuzz targets (${targets[*]})"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
n=1
for t in "${targets[@]}"; do
  n=$((n + 1))
  name=${t#fuzz_}
  # render runs every policy under ASan+UBSan, 10 to 100 times slower than the product (the
  # kept native-misspelled-resource-slow took 1.09 s here, 10 ms of CPU in build/flink-controller):
  # 3 s for it, 1 s for the others
  timeout=1
  [ "$name" = render ] && timeout=3
  BOUNDS=(-timeout=$timeout -malloc_limit_mb=64 -rss_limit_mb=512)
  log=$LOGS/$name.log
  inputs=()
  for d in tests/fuzz/regressions/$name tests/fuzz/corpus/$name; do
    [ -d "$d" ] && while IFS= read -r f; do inputs+=("$f"); done < <(find "$d" -type f | sort)
  done
  if [ ${#inputs[@]} -eq 0 ]; then
    echo "not ok $n $name: no corpus in tests/fuzz/corpus/$name"
    continue
  fi
  # the kept inputs, each once
  if ! "$OUT/$t" "${BOUNDS[@]}" "${inputs[@]}" >"$log" 2>&1; then
    echo "not ok $n $name: a kept input fails: $(grep -E '^Running: ' "$log" | tail -n 1 | cut -d' ' -f2-)"
    grep -E 'ERROR|SUMMARY|^fuzz|runtime error|ALARM' "$log" | head -n 20 | sed 's/^/# /'
    continue
  fi
  # then fuzzing, from a working copy of the corpus (what it finds stays in build/fuzz/)
  work=$OUT/corpus/$name
  art=$OUT/artifacts/$name/
  mkdir -p "$work" "$art"
  cp "${inputs[@]}" "$work"/
  if "$OUT/$t" "${BOUNDS[@]}" -max_total_time="$SECONDS_EACH" -artifact_prefix="$art" "$work" >>"$log" 2>&1; then
    runs=$(grep -oE '^Done [0-9]+ runs' "$log" | tail -n 1 | cut -d' ' -f2)
    echo "ok $n $name: ${#inputs[@]} kept inputs, then ${runs:-?} runs in ${SECONDS_EACH} s"
  else
    found=$(grep -oE 'Test unit written to .*' "$log" | tail -n 1 | cut -d' ' -f5-)
    echo "not ok $n $name: the fuzzer found an input: ${found:-see $log}"
    grep -E 'ERROR|SUMMARY|^fuzz|runtime error|ALARM' "$log" | head -n 20 | sed 's/^/# /'
  fi
done
