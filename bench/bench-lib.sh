# bench-lib.sh - what the bench runners share; sourced, not run.
#
# Modes: a mode is a name in the tables plus how to run it: the harness's
# --lock, whether libticketspin.so is preloaded, the text the provider of the
# lock's functions must contain (checked by the harness: --expect-provider),
# and TICKET_* settings.  Every run starts from an empty environment (env -i)
# plus PATH, the mode's own variables and, for sanitizer builds only, the
# sanitizer runtime found in LD_PRELOAD and the *SAN_OPTIONS variables: no
# inherited TICKET_* or LD_PRELOAD reaches a run.

mode_label=() mode_lock=() mode_preload=() mode_expect=() mode_env=()

bench_die() { echo "$PROG: $*" >&2; exit 2; }

# keep_failed_run FILE_STEM TAG STATUS RC: a run that did not end well keeps
# its output ($tmp/out, $tmp/err) as $logs/FILE_STEM.out and .err, is added
# to the failures array, and is reported on stderr with its last lines.
keep_failed_run() {
	local stem=$1 tag=$2 status=$3 rc=$4
	mkdir -p "$logs"
	cp "$tmp/out" "$logs/$stem.out"
	cp "$tmp/err" "$logs/$stem.err"
	failures+=("$tag: $status")
	{
		echo "$PROG: FAILED: $tag: $status (exit $rc)"
		tail -n 3 "$tmp/err" | sed "s/^/$PROG:   stderr: /"
	} >&2
}

# add_mode LABEL LOCK PRELOAD(0|1) EXPECT [VAR=VALUE...]
add_mode() {
	local label=$1 lock=$2 preload=$3 expect=$4 l
	shift 4
	for l in "${mode_label[@]+"${mode_label[@]}"}"; do
		[ "$l" != "$label" ] || bench_die "mode '$label' is listed twice"
	done
	mode_label+=("$label") mode_lock+=("$lock") mode_preload+=("$preload")
	mode_expect+=("$expect") mode_env+=("$*")
}

# add_named_mode NAME AVAILABLE_LOCKS: the built-in modes.
add_named_mode() {
	local name=$1 available=$2
	case $name in
	glibc) add_mode glibc spin 0 libc.so ;;
	ticketspin) add_mode ticketspin spin 1 libticketspin.so ;;
	glibc-pshared) add_mode glibc-pshared spin-pshared 0 libc.so ;;
	ticketspin-pshared) add_mode ticketspin-pshared spin-pshared 1 libticketspin.so ;;
	mutex | mutex-adaptive | ck-ticket | ck-ticket-pb | ck-mcs | ck-fas)
		if [[ " $available " != *" $name "* ]]; then
			echo "$PROG: $name left out: not built (Concurrency Kit's headers, Debian libck-dev, were missing at configure time)" >&2
			return 0
		fi
		case $name in
		mutex*) add_mode "$name" "$name" 0 libc.so ;;
		*) add_mode "$name" "$name" 0 inline ;;
		esac ;;
	*) bench_die "unknown lock '$name' (glibc ticketspin glibc-pshared ticketspin-pshared mutex mutex-adaptive ck-ticket ck-ticket-pb ck-mcs ck-fas; --mode 'NAME VAR=VALUE...' adds a ticketspin setting)" ;;
	esac
}

# add_custom_mode 'NAME VAR=VALUE...': ticketspin with settings of its own.
add_custom_mode() {
	local -a words
	local w
	read -r -a words <<<"$1"
	[ ${#words[@]} -ge 1 ] || bench_die "--mode: empty"
	[[ ${words[0]} =~ ^[A-Za-z0-9_.+-]+$ ]] || bench_die "--mode '$1': bad name"
	for w in "${words[@]:1}"; do
		[[ $w =~ ^TICKET_[A-Z_]+=[^[:space:]]*$ ]] || bench_die "--mode '$1': '$w' is not TICKET_VAR=VALUE"
	done
	add_mode "${words[0]}" spin 1 libticketspin.so "${words[@]:1}"
}

# What a sanitizer build needs to keep, from the caller's environment.
sanitizer_preload=
sanitizer_env=()
collect_sanitizer_env() {
	local p v
	for p in $(printf '%s\n' "${LD_PRELOAD:-}" | tr ': ' '\n\n'); do
		case $p in */lib*san.so*) sanitizer_preload=${sanitizer_preload:+$sanitizer_preload:}$p ;; esac
	done
	for v in ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS; do
		[ -z "${!v:-}" ] || sanitizer_env+=("$v=${!v}")
	done
	# The sanitizer runtimes intercept pthread_mutex_*: there, the mutexes'
	# provider is the runtime (libasan.so, libtsan.so), not libc.so.  Call
	# after the modes are added.
	if [ -n "$sanitizer_preload" ]; then
		for i in "${!mode_lock[@]}"; do
			case ${mode_lock[$i]} in mutex*) mode_expect[$i]=san.so ;; esac
		done
	fi
}

# mode_command INDEX LIB: prints nothing; sets the array run_env to the
# env -i arguments for mode INDEX.
mode_command() {
	local mi=$1 lib=$2 preload=$sanitizer_preload
	run_env=(env -i "PATH=$PATH" "${sanitizer_env[@]+"${sanitizer_env[@]}"}")
	if [ "${mode_preload[$mi]}" = 1 ]; then
		preload=${preload:+$preload:}$lib
	fi
	[ -z "$preload" ] || run_env+=("LD_PRELOAD=$preload")
	# shellcheck disable=SC2206 # VAR=VALUE words, checked by add_custom_mode
	[ -z "${mode_env[$mi]}" ] || run_env+=(${mode_env[$mi]})
}

is_uint() { case $1 in '' | *[!0-9]*) return 1 ;; *) return 0 ;; esac; }

# check_list NAME LIST MIN MAX: a comma-separated list of whole numbers.
check_list() {
	local v
	IFS=, read -r -a _list <<<"$2"
	[ ${#_list[@]} -gt 0 ] || bench_die "$1: empty list"
	for v in "${_list[@]}"; do
		is_uint "$v" && [ "$v" -ge "$3" ] && [ "$v" -le "$4" ] ||
			bench_die "$1: '$v' is not a whole number $3..$4 (LIST is comma-separated)"
	done
}

# find_gnuplot: prints the gnuplot command and its PNG terminal, or nothing.
find_gnuplot() {
	local g
	g=$(command -v gnuplot || true)
	[ -n "$g" ] || return 0
	if "$g" -e 'set terminal' </dev/null 2>&1 | grep -qw pngcairo; then
		echo "$g|pngcairo noenhanced font ',10'"
	else
		echo "$g|png noenhanced"
	fi
}
