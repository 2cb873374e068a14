#!/bin/bash
# The Debian packages, as a user gets them: unpacked into a scratch root with
# dpkg -x (no root needed, nothing touches the system), then
#   - the files are where Debian puts them: the library in the multiarch
#     directory, man pages, the reader and the examples, the sysbench script;
#   - the installed ticketspin reports its version, and defaults to the
#     installed library's path;
#   - a contended example (semaphore, 4 threads) runs under the installed
#     library, which it reports as the provider of pthread_spin_lock, with
#     its invariants held;
#   - the installed reader shows that run's statistics.
# Usage: deb-check.sh DIR, where DIR holds the .deb files ('make deb-check').
set -u

dir=${1:?usage: deb-check.sh DIR-WITH-THE-DEBS}
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

root=$(mktemp -d "${TMPDIR:-/tmp}/ticketspin-deb.XXXXXX") || exit 99
trap 'rm -rf "$root"' EXIT
for deb in "$dir"/libticketspin_*.deb "$dir"/ticketspin-tools_*.deb; do
	[ -f "$deb" ] || { echo "ERROR: no $deb (run make deb first)"; exit 99; }
	dpkg -x "$deb" "$root" || { echo "ERROR: dpkg -x $deb failed"; exit 99; }
	echo "unpacked $(basename "$deb")"
done

lib=$root/usr/lib/$multiarch/libticketspin.so
libexec=$root/usr/libexec/ticketspin
for f in "$lib" "$root/usr/bin/ticketspin" "$root/usr/bin/ticketspin-compare" \
         "$libexec/ticketspin-stats" "$libexec/semaphore" "$libexec/twolocks" \
         "$libexec/hashmap" "$libexec/churn" "$root/usr/share/ticketspin/sysbench/spinlock.lua" \
         "$root/usr/share/man/man7/libticketspin.7.gz" "$root/usr/share/man/man1/ticketspin.1.gz" \
         "$root/usr/share/man/man1/ticketspin-compare.1.gz"; do
	[ -e "$f" ] || fail "missing: ${f#"$root"}"
done

# the README and doc/ (issue 41), and a description that says what the
# default does (bounded bypass), not "first come, first served"
docs=$root/usr/share/doc/libticketspin
for f in README.md doc/tools.md doc/deploying.md doc/statistics.md; do
	[ -e "$docs/$f" ] || [ -e "$docs/$f.gz" ] || fail "missing: /usr/share/doc/libticketspin/$f"
done
description=$(dpkg-deb -f "$dir"/libticketspin_*.deb Description)
case $description in
*"first come, first served: "*|*"ticket spinlock: first come"*)
	fail "the description still says first come, first served: $description" ;;
esac
printf '%s\n' "$description" | grep -q "TICKET_BYPASS" ||
	fail "the description does not say what the default does: $description"

version=$(env -u LD_PRELOAD "$root/usr/bin/ticketspin" --version)
[[ $version =~ ^ticketspin\ [0-9]+\.[0-9]+ ]] || fail "ticketspin --version: '$version'"
echo "ticketspin --version: $version"
# --help gives the default library on the line after "--lib=PATH ... default:"
env -u LD_PRELOAD "$root/usr/bin/ticketspin" --help | grep -qx " *\(default: \)\?/usr/lib/$multiarch/libticketspin.so" ||
	fail "the installed ticketspin does not default to /usr/lib/$multiarch/libticketspin.so"

# a contended run under the installed library, with statistics in a private dir
XDG_RUNTIME_DIR=$root/run
mkdir -m 700 "$XDG_RUNTIME_DIR"
export XDG_RUNTIME_DIR
out=$(env -u LD_PRELOAD "$root/usr/bin/ticketspin" --lib="$lib" --stats-keep \
	--stats="$XDG_RUNTIME_DIR/at-exit" "$libexec/semaphore" --threads 4 --seconds 0.5 2>&1)
status=$?
echo "$out" | grep -E '^(throughput|provider|invariants)='
[ $status -eq 0 ] || fail "semaphore under the installed library: status $status: $out"
printf '%s\n' "$out" | grep -qx "provider=$lib" || fail "pthread_spin_lock is not the installed library's: $out"
printf '%s\n' "$out" | grep -q "^invariants=ok" || fail "invariants: $out"
pid=$(sed -n 's/^stats: pid \([0-9]*\):.*/\1/p' "$XDG_RUNTIME_DIR/at-exit" | head -n 1)
contended=$(sed -n 's/^stats: pid [0-9]*: \([0-9]*\) locks\{0,1\} contended.*/\1/p' "$XDG_RUNTIME_DIR/at-exit")
[ -n "$pid" ] && [ "${contended:-0}" -ge 1 ] || fail "no contended lock in the report at exit: $(cat "$XDG_RUNTIME_DIR/at-exit")"
report=$(env -u LD_PRELOAD "$libexec/ticketspin-stats" report --csv "$pid")
[ "$(printf '%s\n' "$report" | grep -c "^[0-9.]*,$pid,exited,0x")" -ge 1 ] ||
	fail "the installed reader does not show pid $pid's locks: $report"

if [ $failures -gt 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "deb-check: the installed packages work"
