#!/bin/bash
# check-sanitizers.sh [DIR] - build ticketspin for AddressSanitizer +
# UndefinedBehaviorSanitizer and for ThreadSanitizer, and run 'make check' in
# each: VPATH builds in DIR/build-asan and DIR/build-tsan (DIR: the current
# directory).  Exits non-zero if either build or either check fails.
#
# A source tree configured in place cannot host VPATH builds, so if it is,
# a copy of it (made clean with 'make distclean') is used as the source.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
root=$(mkdir -p "${1:-.}" && cd "${1:-.}" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
status=0

if [ -f "$src/config.status" ]; then
	echo "check-sanitizers: $src is configured in place: using a clean copy in $root/sanitizer-src"
	rm -rf "$root/sanitizer-src"
	mkdir -p "$root/sanitizer-src"
	tar -C "$src" --exclude=./build-asan --exclude=./build-tsan --exclude=./sanitizer-src \
		--exclude=.git -cf - . | tar -C "$root/sanitizer-src" -xf -
	src=$root/sanitizer-src
	make -s -C "$src" distclean >/dev/null
fi

for san in asan tsan; do
	dir=$root/build-$san
	start=$SECONDS
	mkdir -p "$dir"
	echo "check-sanitizers: $san in $dir"
	if ! (cd "$dir" &&
	      { [ -f config.status ] || "$src/configure" -q --enable-sanitizers=$san; } &&
	      make -s -j"$jobs" >/dev/null &&
	      make -s check); then
		echo "check-sanitizers: $san: FAILED (logs: $dir/tests/*.log)" >&2
		status=1
	fi
	echo "check-sanitizers: $san: $((SECONDS - start)) s"
done
exit $status
