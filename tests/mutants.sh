#!/bin/bash
# mutants.sh - mutation testing (issue 20): put one small, realistic bug at a
# time into a scratch copy of the sources, rebuild, run the test suites that
# should catch it, and print a table.  'make mutants' runs every mutant,
# 'make mutants-quick' (MUTANTS_QUICK=1) only those marked "quick: yes".
#
#   bash tests/mutants.sh SRCDIR [MUTANT]...
#
# SRCDIR is the source tree (a git work tree: its tracked files and its
# untracked, not ignored ones are copied, never its build products).  The
# copy, its build directory and the logs go under a temporary directory
# ($TMPDIR), removed at the end unless MUTANTS_KEEP=1.  MUTANT names limit the
# run to those mutants (file names in tests/mutants/, without .mutant).
#
# A mutant is a file tests/mutants/NAME.mutant (see tests/mutants/README):
# header lines "description:", "file:", "suites:", "quick:", "protocol:",
# then one or more pairs of "@@ original" and "@@ replacement" blocks, closed
# by "@@ end".  Each original must occur exactly once in the file named, or
# the mutant is "stale" (the code drifted: re-target it); a stale mutant is
# never counted as caught.
#
# Results: "caught (SUITE)" when a suite failed with the bug in place (the
# suites run in the order listed, stopping at the first that fails); "NOT
# CAUGHT" when every suite passed; "stale"; "build failed" (the bug does not
# compile: fix the mutant).  Exit status 0 only when every mutant was caught.
set -u

srcdir=${1:?usage: mutants.sh SRCDIR [MUTANT]...}
shift
srcdir=$(cd "$srcdir" && pwd -P) || exit 2
mutdir=$srcdir/tests/mutants
quick=${MUTANTS_QUICK:-0}
jobs=${MUTANTS_JOBS:-2}
# Per suite: a mutant that hangs the library is caught by the suite's own
# time limits; this is the last resort.
suite_limit=${MUTANTS_SUITE_TIMEOUT:-600}

started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/ticketspin-mutants.XXXXXX") || exit 2
cleanup() {
	if [ "${MUTANTS_KEEP:-0}" = 1 ]; then
		echo "mutants: kept $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

src=$work/src
build=$work/build
logs=$work/logs
mkdir -p "$src" "$build" "$logs"

# The sources: what git knows of, and new files not ignored (a mutant being
# written); never the build products of SRCDIR, whose absolute paths would
# point the tests back at SRCDIR's library.
(cd "$srcdir" && git ls-files -z --cached --others --exclude-standard |
	xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
	tar --null -T - -cf -) | (cd "$src" && tar -xf -) || { echo "mutants: cannot copy $srcdir" >&2; exit 2; }

echo "mutants: building a pristine copy in $work" >&2
if ! (cd "$src" && ./bootstrap >"$logs/bootstrap.log" 2>&1) ||
   ! (cd "$build" && "$src/configure" -q >"$logs/configure.log" 2>&1) ||
   ! make -C "$build" -j"$jobs" -s >"$logs/build.log" 2>&1 ||
   ! make -C "$build/tests" -j"$jobs" -s check TESTS= >>"$logs/build.log" 2>&1; then
	echo "mutants: the pristine copy does not build; see $logs (MUTANTS_KEEP=1 keeps it)" >&2
	MUTANTS_KEEP=1
	exit 2
fi

# header and apply: the mutant file's format (shared with test_mutants_apply.sh)
# shellcheck source=mutant-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/mutant-lib.sh"

if [ $# -gt 0 ]; then
	mutants=()
	for name in "$@"; do mutants+=("$mutdir/$name.mutant"); done
else
	mutants=("$mutdir"/*.mutant)
fi

rows=()
bad=0
ran=0
for mutant in "${mutants[@]}"; do
	name=$(basename "$mutant" .mutant)
	if ! [ -f "$mutant" ]; then
		rows+=("$(printf '%-34s %-26s %s' "$name" "stale" "no such mutant")")
		bad=$((bad + 1))
		continue
	fi
	if [ "$quick" = 1 ] && [ "$(header quick "$mutant")" != yes ]; then
		continue
	fi
	ran=$((ran + 1))
	file=$(header file "$mutant")
	suites=$(header suites "$mutant")
	desc=$(header description "$mutant")
	[ "$(header protocol "$mutant")" = yes ] && desc="[protocol] $desc"
	m_start=$(date +%s)
	target=$src/$file
	saved=$work/pristine
	if [ -z "$file" ] || [ -z "$suites" ] || ! [ -f "$target" ]; then
		result="stale"
		desc="bad header or no file '$file': $desc"
	else
		cp -p "$target" "$saved"
		if ! reason=$(apply "$mutant" "$target"); then
			result="stale"
			desc="$reason: $desc"
		elif ! make -C "$build" -j"$jobs" -s >"$logs/$name.build.log" 2>&1 ||
		     ! make -C "$build/tests" -j"$jobs" -s check TESTS= >>"$logs/$name.build.log" 2>&1; then
			result="build failed"
		else
			result="NOT CAUGHT"
			for suite in $suites; do
				if ! timeout --kill-after=30 "$suite_limit" \
				     make -C "$build/tests" -s check TESTS="$suite" \
				     >"$logs/$name.$suite.log" 2>&1; then
					result="caught ($suite)"
					break
				fi
			done
		fi
		# restore (a new mtime: the next build recompiles the pristine code)
		cp "$saved" "$target"
		touch "$target"
	fi
	case $result in
	caught*) ;;
	*) bad=$((bad + 1)) ;;
	esac
	rows+=("$(printf '%-34s %-26s %4ss  %s' "$name" "$result" "$(($(date +%s) - m_start))" "$desc")")
	printf 'mutants: %-34s %s\n' "$name" "$result" >&2
done

# the last restore: rebuild nothing, just leave the copy pristine
elapsed=$(($(date +%s) - started))
echo
printf '%-34s %-26s %5s  %s\n' "mutant" "result" "time" "description"
for row in "${rows[@]}"; do
	printf '%s\n' "$row"
done
echo
printf 'mutants: %d run%s, %d not caught, stale or broken; %d s in all (%s)\n' \
	"$ran" "$([ "$quick" = 1 ] && echo ' (quick half)')" "$bad" "$elapsed" \
	"$(date -u -d @"$elapsed" +%Mm%Ss)"
[ "$bad" -eq 0 ]
