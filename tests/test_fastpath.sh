#!/bin/bash
# The fast paths, inspected in the built object (no timing): the exported
# pthread_spin_lock, _trylock and _unlock must reach their first "ret" with
# no call, no thread-local access (%fs) and no stack frame; lock with
# exactly one locked instruction (the exchange of the lock byte, locked
# without a prefix), trylock with one (the compare-and-swap), unlock with
# none (a load, a test and a byte store).  Fails when the library grows a
# call, a TLS test or a second atomic on the uncontended path (issue 19),
# or a thread-local anywhere that needs __tls_get_addr().
set -u
lib=${TICKETSPIN_LIB:?TICKETSPIN_LIB: the library to inspect}
command -v objdump >/dev/null || { echo "objdump not found (binutils)"; exit 77; }
# A sanitizer build instruments the fast paths with calls, by design.
if objdump -p "$lib" | grep -qE 'NEEDED +lib[a-z]*san\.so'; then
	echo "a sanitizer build: its fast paths are instrumented"
	exit 77
fi
status=0
fail() { echo "FAIL: $*"; status=1; }

# The instructions of function $1 up to its first ret.
fast_path() {
	objdump -d --no-show-raw-insn "$lib" |
		awk -v f="<$1>:" '$2 == f { on = 1; next } on && /^$/ { exit }
		                  on { sub(/^ *[0-9a-f]+:\t/, ""); print; if ($0 ~ /^ret/) exit }'
}

for fn in pthread_spin_lock pthread_spin_trylock pthread_spin_unlock; do
	body=$(fast_path "$fn")
	[ -n "$body" ] || { fail "$fn: not found in $lib"; continue; }
	echo "== $fn, up to its first ret:"
	printf '%s\n' "$body" | sed 's/^/   /'
	printf '%s\n' "$body" | grep -q '^ret' || fail "$fn: no ret on the fast path"
	printf '%s\n' "$body" | grep -qE '^(call|jmp +\*)' && fail "$fn: a call on the fast path"
	printf '%s\n' "$body" | grep -q '%fs' && fail "$fn: a thread-local access on the fast path"
	printf '%s\n' "$body" | grep -qE '^(push|sub +\$0x[0-9a-f]+,%rsp)' &&
		fail "$fn: a stack frame on the fast path"
	# xchg with a memory operand is locked by definition
	locked=$(printf '%s\n' "$body" | grep -cE '^lock |^xchg +%[a-z0-9]+,\(')
	case $fn in
	pthread_spin_unlock) want=0 ;;
	*) want=1 ;;
	esac
	[ "$locked" -eq "$want" ] || fail "$fn: $locked locked instructions on the fast path, not $want"
done
# Off the fast paths too, no thread-local goes through __tls_get_addr(): a
# general-dynamic access, which after a dlopen() of a module with TLS may
# malloc() inside the lock's slow path (whose caller may be malloc).
if objdump -T "$lib" | grep -q '__tls_get_addr'; then
	fail "__tls_get_addr imported: a __thread without tls_model(\"initial-exec\")"
fi
[ $status -eq 0 ] && echo "fast paths: as they should be; every thread-local initial-exec"
exit $status
