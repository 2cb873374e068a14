#!/bin/bash
# Every mutant in tests/mutants/ still applies and, for C, still compiles:
# each "@@ original" block occurs exactly once in the file the mutant
# names, and the C file (every preload/*.c, for a header) with the
# replacements in place passes the compiler's syntax and type checks.  A
# mutant that drifted from the code is reported "stale" or "build failed"
# by 'make mutants', and counts as not caught there: two CI runs failed on
# one (stats-mark-without-stats, impatient-on-any-lock), after a change
# that 'make check' passed.  This catches it in 'make check', in seconds.
# Needs perl (perl-base, in every Debian; mutant-lib.sh's apply) and the C
# compiler that built us.
set -u
srcdir=$(cd "$(dirname "$0")/.." && pwd)
# config.h is the build tree's: automake runs the tests in BUILDDIR/tests
# (a sanitizer build's source copy has none of its own).
builddir=$(cd .. && pwd)
CC=${CC:-cc}
# Not under the library or a sanitizer runtime: the compiler is not ours.
unset LD_PRELOAD
# header and apply: the mutant file's format, as tests/mutants.sh reads it
# shellcheck source=mutant-lib.sh
. "$srcdir/tests/mutant-lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 count=0 compiled=0

for mutant in "$srcdir"/tests/mutants/*.mutant; do
	name=$(basename "$mutant" .mutant)
	count=$((count + 1))
	file=$(header file "$mutant")
	[ -n "$file" ] && [ -f "$srcdir/$file" ] || {
		echo "FAIL: $name: no file, or '$file' not found"; fail=1; continue; }
	rm -rf "$tmp/src" && mkdir -p "$tmp/src/preload" "$tmp/src/tools" &&
		cp "$srcdir"/preload/*.[ch] "$tmp/src/preload/" && cp "$srcdir"/tools/*.[ch] "$tmp/src/tools/" 2>/dev/null
	mkdir -p "$(dirname "$tmp/src/$file")"
	cp "$srcdir/$file" "$tmp/src/$file"
	# Every block applied to the copy, as 'make mutants' applies them.
	if ! reason=$(apply "$mutant" "$tmp/src/$file"); then
		echo "FAIL: $name: stale in $file: $reason"; fail=1; continue
	fi
	case $file in
	*.c) targets=$tmp/src/$file ;;
	*.h) targets=$(ls "$tmp"/src/preload/*.c) ;;
	*) continue ;;
	esac
	for c in $targets; do
		if ! "$CC" -fsyntax-only -std=gnu11 -D_GNU_SOURCE -I"$builddir" -I"$srcdir" \
			-I"$tmp/src/preload" -I"$srcdir/preload" "$c" 2>"$tmp/err"; then
			echo "FAIL: $name: does not compile ($(basename "$c")):"; head -n 5 "$tmp/err"
			fail=1; break
		fi
	done
	compiled=$((compiled + 1))
done
echo "$count mutants, $compiled in C compiled with their replacements"
[ "$count" -gt 0 ] || { echo "FAIL: no mutants found"; exit 1; }
exit $fail
