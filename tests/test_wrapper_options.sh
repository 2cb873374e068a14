#!/bin/bash
# Every TICKET_* variable the library reads has a ticketspin option, in
# --help and in the man page, and the option sets that variable and refuses
# what the library refuses.
#
# The list of variables comes from the library's own table (the "options[]"
# array of preload/options.c), so a variable added there without its option
# fails this test.  For each variable:
#   - --help has an option line whose description ends "(TICKET_X)";
#   - doc/ticketspin.1 has an option item (.TP) that names TICKET_X, for the
#     same option;
#   - the option, with a value the library accepts (the low end of the
#     first range in options.c's "accepted" text, the first word of the
#     option's syntax, or none for a flag), reaches the command's
#     environment as TICKET_X=value;
#   - a value past the high end of that range, or an unknown word, exits 2
#     with a message naming the option, and does not run the command.
# Run by 'make check' (tests/Makefile.am) from the build's tests/ directory.
set -u

srcdir=${srcdir:-.}
options_c=$srcdir/../preload/options.c
man=$srcdir/../doc/ticketspin.1
wrapper=../tools/ticketspin
lib=${TICKETSPIN_LIB:-../preload/.libs/libticketspin.so}
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

for f in "$options_c" "$man" "$wrapper" "$lib" ../tools/ticketspin-compare; do
	[ -e "$f" ] || { echo "ERROR: $f not found"; exit 99; }
done

# "TICKET_X<TAB>accepted text" for each entry of options.c's options[] table
table=$(awk '/^static const struct ts_option options\[\] = \{/ { on = 1; next }
             on && /^\};/ { exit }
             on && match($0, /\{ "TICKET_[A-Z_]+", "[^"]*"/) {
                 entry = substr($0, RSTART, RLENGTH)
                 split(entry, q, "\"")
                 print q[2] "\t" q[4]
             }' "$options_c")
count=$(printf '%s\n' "$table" | grep -c '^TICKET_')
# The table had 14 entries when this test was written: far fewer means the
# parse above broke, not that the variables went away.
if [ "$count" -lt 10 ]; then
	echo "ERROR: found only $count TICKET_* entries in $options_c's options[] table"
	exit 99
fi
echo "options.c lists $count variables"

help=$(env -u LD_PRELOAD "$wrapper" --help) || { echo "ERROR: --help failed"; exit 99; }

# "--option-syntax<TAB>TICKET_X" from --help: the variable closes the
# description of the option line above it
help_map=$(printf '%s\n' "$help" | awk '
	/^  --/ { option = $1 }
	match($0, /\(TICKET_[A-Z_]+\)$/) { print option "\t" substr($0, RSTART + 1, RLENGTH - 2) }')

# "--option<TAB>TICKET_X" from the man page: an item is ".TP", its tag line
# (the option, with \- for dashes and font escapes), then its text up to
# the next ".TP" or section
man_map=$(awk '
	/^\.(TP|SS|SH)/ { tag = ($1 == ".TP"); option = ""; next }
	tag == 1 {
		line = $0
		gsub(/\\-/, "-", line); gsub(/\\f[BIRP]/, "", line)
		if (match(line, /--[a-z-]+/)) option = substr(line, RSTART, RLENGTH)
		tag = 0
		next
	}
	option != "" && match($0, /TICKET_[A-Z_]+/) {
		print option "\t" substr($0, RSTART, RLENGTH)
		option = ""
	}' "$man")

while IFS=$'\t' read -r variable accepted; do
	syntax=$(printf '%s\n' "$help_map" | awk -F '\t' -v v="$variable" '$2 == v { print $1; exit }')
	if [ -z "$syntax" ]; then
		fail "$variable: no option in 'ticketspin --help' ends with ($variable)"
		continue
	fi
	option=${syntax%%[=[]*}
	if ! printf '%s\n' "$man_map" | grep -qx -- "$option"$'\t'"$variable"; then
		fail "$variable: doc/ticketspin.1 has no item for $option naming $variable"
	fi

	# a good value and, when there is one, a bad one
	range=$(printf '%s\n' "$accepted" | grep -oE '[0-9]+\.\.[0-9]+' | head -n 1)
	case $syntax in
	*'[='*)
		good=; expect=1; bad= ;;          # --stats[=FILE]: alone, sets 1
	*=[A-Z]*)
		[ -n "$range" ] || { fail "$variable: no range in '$accepted' for $syntax"; continue; }
		good=${range%..*}; expect=$good; bad=$((${range#*..} + 1)) ;;
	*=*)
		good=${syntax#*=}; good=${good%%|*}; expect=$good; bad=no-such-value ;;
	*)
		good=; expect=1; bad= ;;          # a flag: sets 1
	esac
	args=("$option${good:+=$good}")
	out=$(env -u LD_PRELOAD -u "$variable" "$wrapper" --lib="$lib" "${args[@]}" -- env 2>&1)
	status=$?
	if [ $status -ne 0 ] || ! printf '%s\n' "$out" | grep -qx -- "$variable=$expect"; then
		fail "$variable: 'ticketspin ${args[*]} -- env' (status $status) did not set $variable=$expect: $out"
	else
		echo "ok: ${args[*]} sets $variable=$expect"
	fi
	if [ -n "$bad" ]; then
		out=$(env -u LD_PRELOAD "$wrapper" --lib="$lib" "$option=$bad" -- echo ran 2>&1)
		status=$?
		if [ $status -ne 2 ] || printf '%s\n' "$out" | grep -qx ran ||
		   ! printf '%s\n' "$out" | grep -q -- "$option='$bad' is not valid"; then
			fail "$variable: '$option=$bad' gave status $status, not 2 and a message: $out"
		else
			echo "ok: $option=$bad refused"
		fi
	fi
done <<<"$table"

# Every line of every help text fits 80 columns: the wrapper's, the
# statistics reader's (report and top), ticketspin-compare's.  A line that is
# a path alone (the library's default, where it was built or installed: a
# sanitizer build's tree is deep) is data, not text, and is not judged.
for command in "$wrapper --help" "$wrapper report --help" "$wrapper top --help" \
               "../tools/ticketspin-compare --help"; do
	text=$(env -u LD_PRELOAD $command 2>&1) || fail "'$command' failed: $text"
	long=$(printf '%s\n' "$text" | awk 'length($0) > 80 && $0 !~ /^ *\/[^ ]*$/ { print length($0) ": " $0 }')
	if [ -n "$long" ]; then
		fail "'$command': lines over 80 columns:
$long"
	else
		echo "ok: '$command' within 80 columns ($(printf '%s\n' "$text" | wc -l) lines)"
	fi
done

# Every default --help states is the library's: "(default N)" in an
# option's text against the setting of that name in the line
# TICKET_VERBOSE=1 prints (with no other TICKET_* set), "--rest-us" against
# "rest_us=", "--delay-min" against "min=".
# (a sanitizer build's runtime options kept: its runtime checks where it is loaded)
settings=$(env -i PATH="$PATH" ${ASAN_OPTIONS+ASAN_OPTIONS="$ASAN_OPTIONS"} \
	${TSAN_OPTIONS+TSAN_OPTIONS="$TSAN_OPTIONS"} ${UBSAN_OPTIONS+UBSAN_OPTIONS="$UBSAN_OPTIONS"} \
	TICKET_VERBOSE=1 LD_PRELOAD="$lib" true 2>&1)
case $settings in
"ticketspin: delay="*) ;;
*) echo "ERROR: TICKET_VERBOSE=1 printed no settings: $settings"; exit 99 ;;
esac
defaults=$(printf '%s\n' "$help" | awk '
	/^  --/ { option = substr($1, 3); sub(/[=[].*/, "", option) }
	option != "" && match($0, /\(default [0-9]+\)/) {
		print option, substr($0, RSTART + 9, RLENGTH - 10)
	}')
[ -n "$defaults" ] || { echo "ERROR: no '(default N)' in --help"; exit 99; }
while read -r option value; do
	key=${option#delay-}
	key=${key//-/_}
	actual=$(printf '%s\n' "$settings" | tr ' ' '\n' | sed -n "s/^$key=//p")
	if [ "$actual" != "$value" ]; then
		fail "--help: --$option (default $value), the library: $key=${actual:-(none)}"
	else
		echo "ok: --$option default $value"
	fi
done <<<"$defaults"

# One rule for integers in both: the same values through the wrapper's
# option and the library's variable (TICKET_STRICT=1: a refused value exits
# 2 at load, so /bin/true, which takes no lock, is enough) are accepted or
# refused alike.
same_rule=0
for pair in bypass:TICKET_BYPASS stall-ms:TICKET_STALL_MS delay:TICKET_DELAY; do
	option=${pair%%:*} variable=${pair#*:}
	for value in 007 0 00 1 31 0000000000000000000031 -0 +5 -5 ' 5' '5 ' 0x1f 1e1 64 \
	             99999999999999999999 auto; do
		env -u LD_PRELOAD "$wrapper" --lib="$lib" "--$option=$value" -- true >/dev/null 2>&1
		by_wrapper=$?
		env "$variable=$value" TICKET_STRICT=1 LD_PRELOAD="$lib" true >/dev/null 2>&1
		by_library=$?
		if [ $by_wrapper -ne $by_library ]; then
			fail "--$option='$value' gives status $by_wrapper, $variable='$value' $by_library"
		fi
		same_rule=$((same_rule + 1))
	done
done
echo "ok: $same_rule values, the same verdict from the wrapper and the library"

# ticketspin(1): it "sets the TICKET_* variables that its options name
# (others already in the environment pass through)"
out=$(env -u LD_PRELOAD TICKET_SPIN=77 TICKET_DELAY=series "$wrapper" --lib="$lib" --delay=off \
	-- env 2>&1)
if printf '%s\n' "$out" | grep -qx TICKET_SPIN=77 && printf '%s\n' "$out" | grep -qx TICKET_DELAY=off &&
   ! printf '%s\n' "$out" | grep -qx TICKET_DELAY=series; then
	echo "ok: TICKET_SPIN=77 in the environment passes through, --delay=off wins over TICKET_DELAY"
else
	fail "TICKET_SPIN=77 TICKET_DELAY=series ticketspin --delay=off: $(printf '%s\n' "$out" | grep ^TICKET_)"
fi

# ticketspin(1): "To run a command named report or top, put -- before it"
# (and where, says --help): after --, they are the command, run under the
# library; before it, the subcommands.
bindir=$(mktemp -d "${TMPDIR:-/tmp}/ticketspin-options.XXXXXX") || exit 99
for name in report top where; do
	printf '#!/bin/sh\necho "the command %s: $*"\n' "$name" >"$bindir/$name"
	chmod +x "$bindir/$name"
	# first, as the man page writes it (the build tree's library), and after an option
	for options in "" "--lib=$lib"; do
		out=$(env -u LD_PRELOAD PATH="$bindir:$PATH" "$wrapper" $options -- "$name" 1 2>&1)
		if [ "$out" != "the command $name: 1" ]; then
			fail "'ticketspin $options -- $name 1' did not run the command $name: $out"
		else
			echo "ok: ticketspin $options -- $name runs a command named $name"
		fi
	done
done
rm -rf "$bindir"

if [ $failures -gt 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "all $count variables have their option, in --help and the man page"
