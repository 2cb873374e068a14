/*
 * options.c - the one place that reads the environment.
 *
 * One table lists every TICKET_* variable with its parser and the values it
 * accepts.  Integers are digits only (no sign, no blank; leading zeros
 * fine), read by strtol, and must lie in range.  A bad value gets one line
 * on stderr naming the variable, the value and what is accepted, and the
 * default stays; TICKET_STRICT=1 makes any bad value fatal (exit status 2).
 * An empty value counts as unset.
 *
 * Security: every variable is read with secure_getenv().  In a process
 * running with AT_SECURE (set-user-ID or set-group-ID, gained capabilities,
 * or an LSM transition), the environment belongs to a less privileged user,
 * who must not choose where a privileged process creates files
 * (TICKET_STATS) nor how it behaves: every TICKET_* variable is then ignored,
 * and one stderr line says so when any is set (their names are looked at to
 * decide that, never their values).  This matters wherever the library is
 * loaded into a privileged program: linked in, or from /etc/ld.so.preload
 * (the dynamic loader's own LD_PRELOAD filtering does not cover those).
 * XDG_RUNTIME_DIR, where the statistics file goes, is read the same way.
 */
#include "options.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "active.h"
#include "log.h"
#include "ticket_lock.h"

struct ts_keyword {
	const char *name;
	int value;
};

struct ts_option {
	const char *name;
	const char *accepted;
	/* Returns false when @raw is not acceptable; @cfg is then unchanged. */
	bool (*parse)(const char *raw, struct ts_config *cfg);
};

static bool parse_long(const char *raw, long min, long max, long *out)
{
	char *end;
	long value;

	/*
	 * Digits only (leading zeros are fine: "007" is 7): strtol would also
	 * skip blanks and take a sign, and no setting is negative, so " 5",
	 * "+5" and "-0" are typos.  tools/ticketspin.in applies the same rule to
	 * its options (tests/test_wrapper_options.sh runs the same values
	 * through both).
	 */
	if (strspn(raw, "0123456789") != strlen(raw) || raw[0] == '\0')
		return false;
	errno = 0;
	value = strtol(raw, &end, 10);
	if (errno != 0 || end == raw || *end != '\0' || value < min || value > max)
		return false;
	*out = value;
	return true;
}

/* A plain integer setting, @min..@max, into @out. */
static bool parse_u32(const char *raw, long min, long max, uint32_t *out)
{
	long value;

	if (!parse_long(raw, min, max, &value))
		return false;
	*out = (uint32_t)value;
	return true;
}

static bool parse_keyword(const char *raw, const struct ts_keyword *keywords, int *out)
{
	for (; keywords->name != NULL; keywords++) {
		if (strcmp(raw, keywords->name) == 0) {
			*out = keywords->value;
			return true;
		}
	}
	return false;
}

static bool parse_delay(const char *raw, struct ts_config *cfg)
{
	static const struct ts_keyword modes[] = {
		{ "off", TS_DELAY_OFF }, { "auto", TS_DELAY_AUTO }, { "series", TS_DELAY_SERIES },
		{ NULL, 0 },
	};
	int mode;
	long factor;

	if (parse_keyword(raw, modes, &mode)) {
		cfg->delay_mode = (enum ts_delay_mode)mode;
		return true;
	}
	if (!parse_long(raw, 1, TS_DELAY_FACTOR_MAX, &factor))
		return false;
	cfg->delay_mode = TS_DELAY_FIXED;
	cfg->delay_factor = (uint32_t)factor;
	return true;
}

static bool parse_delay_min(const char *raw, struct ts_config *cfg)
{
	return parse_u32(raw, 1, TS_DELAY_LIMIT, &cfg->delay_min);
}

static bool parse_delay_max(const char *raw, struct ts_config *cfg)
{
	return parse_u32(raw, 1, TS_DELAY_LIMIT, &cfg->delay_max);
}

static bool parse_table(const char *raw, struct ts_config *cfg)
{
	static const struct ts_keyword tables[] = {
		{ "hashed", TS_TABLE_HASHED }, { "single", TS_TABLE_SINGLE }, { NULL, 0 },
	};
	int table;

	if (!parse_keyword(raw, tables, &table))
		return false;
	cfg->table = (enum ts_delay_table)table;
	return true;
}

static bool parse_hash_bits(const char *raw, struct ts_config *cfg)
{
	return parse_u32(raw, 0, TS_HASH_BITS_MAX, &cfg->hash_bits);
}

static bool parse_wait(const char *raw, struct ts_config *cfg)
{
	static const struct ts_keyword policies[] = {
		{ "spin", TS_WAIT_SPIN }, { "yield", TS_WAIT_YIELD }, { "park", TS_WAIT_PARK },
		{ NULL, 0 },
	};
	int policy;

	if (!parse_keyword(raw, policies, &policy))
		return false;
	cfg->wait = (enum ts_wait_policy)policy;
	return true;
}

static bool parse_spin(const char *raw, struct ts_config *cfg)
{
	return parse_u32(raw, 1, 100000000, &cfg->spin_budget);
}

/*
 * TICKET_QUEUE=0 asks for strict FIFO (as TICKET_BYPASS=0 does); otherwise
 * the most threads in the queue at once, the others waiting outside it.
 */
static bool parse_queue(const char *raw, struct ts_config *cfg)
{
	long value;

	if (!parse_long(raw, 0, TS_QUEUE_CAPACITY, &value) || value == 1)
		return false;
	if (value == 0)
		cfg->bypass_max = 0;
	else
		cfg->queue_capacity = (uint32_t)value;
	return true;
}

static bool parse_bypass(const char *raw, struct ts_config *cfg)
{
	long value;

	/* Parsed after TICKET_QUEUE: TICKET_QUEUE=0 wins (see the table's order). */
	if (!parse_long(raw, 0, TS_BYPASS_MAX, &value))
		return false;
	if (cfg->bypass_max != 0)
		cfg->bypass_max = (uint32_t)value;
	return true;
}

static bool parse_bypass_ns(const char *raw, struct ts_config *cfg)
{
	long value;

	if (!parse_long(raw, 0, TS_BYPASS_NS_MAX, &value) || (value != 0 && value < TS_BYPASS_NS_MIN))
		return false;
	cfg->bypass_ns = (uint32_t)value;
	return true;
}

static bool parse_rest_us(const char *raw, struct ts_config *cfg)
{
	return parse_u32(raw, 0, TS_REST_US_MAX, &cfg->rest_us);
}

static bool parse_turn_us(const char *raw, struct ts_config *cfg)
{
	return parse_u32(raw, 0, TS_TURN_US_MAX, &cfg->turn_us);
}

static bool parse_doze_us(const char *raw, struct ts_config *cfg)
{
	return parse_u32(raw, 0, TS_DOZE_US_MAX, &cfg->doze_us);
}

/* The CPUs this process may run on, at most TS_ACTIVE_MAX: TICKET_ACTIVE's default. */
static uint32_t active_for_cpus(void)
{
	uint32_t cpus = ts_active_cpus();

	return cpus < TS_ACTIVE_MAX ? cpus : TS_ACTIVE_MAX;
}

/* TICKET_ACTIVE: off (0), cpus (the default), or a count. */
static bool parse_active(const char *raw, struct ts_config *cfg)
{
	if (strcmp(raw, "off") == 0) {
		cfg->active = 0;
		return true;
	}
	if (strcmp(raw, "cpus") == 0) {
		cfg->active = active_for_cpus();
		return true;
	}
	return parse_u32(raw, 0, TS_ACTIVE_MAX, &cfg->active);
}

static bool parse_active_us(const char *raw, struct ts_config *cfg)
{
	return parse_u32(raw, TS_ACTIVE_US_MIN, TS_ACTIVE_US_MAX, &cfg->active_us);
}

static bool parse_stall_ms(const char *raw, struct ts_config *cfg)
{
	return parse_u32(raw, 0, TS_STALL_MS_MAX, &cfg->stall_ms);
}

static bool parse_stats(const char *raw, struct ts_config *cfg)
{
	if (strcmp(raw, "0") == 0)
		cfg->stats = NULL;
	else if (strcmp(raw, "1") == 0)
		cfg->stats = "";
	else
		cfg->stats = raw; /* a file name; the environment outlives us */
	return true;
}

static bool parse_stats_top(const char *raw, struct ts_config *cfg)
{
	return parse_u32(raw, 1, 1000000, &cfg->stats_top);
}

static bool parse_flag(const char *raw, bool *out)
{
	long value;

	if (!parse_long(raw, 0, 1, &value))
		return false;
	*out = value != 0;
	return true;
}

static bool parse_strict(const char *raw, struct ts_config *cfg)
{
	return parse_flag(raw, &cfg->strict);
}

static bool parse_verbose(const char *raw, struct ts_config *cfg)
{
	return parse_flag(raw, &cfg->verbose);
}

static bool parse_stats_keep(const char *raw, struct ts_config *cfg)
{
	return parse_flag(raw, &cfg->stats_keep);
}

static bool parse_check_unlock(const char *raw, struct ts_config *cfg)
{
	return parse_flag(raw, &cfg->check_unlock);
}

static const struct ts_option options[] = {
	{ "TICKET_DELAY", "off, auto, series, or a fixed factor 1..100000", parse_delay },
	{ "TICKET_DELAY_MIN", "an integer 1..1000000, at most TICKET_DELAY_MAX", parse_delay_min },
	{ "TICKET_DELAY_MAX", "an integer 1..1000000, at least TICKET_DELAY_MIN", parse_delay_max },
	{ "TICKET_DELAY_TABLE", "hashed or single", parse_table },
	{ "TICKET_DELAY_HASH_BITS", "an integer 0..6", parse_hash_bits },
	{ "TICKET_WAIT", "spin, yield or park", parse_wait },
	{ "TICKET_SPIN", "an integer 1..100000000", parse_spin },
	{ "TICKET_QUEUE", "0 (strict FIFO) or an integer 2..63", parse_queue },
	{ "TICKET_BYPASS", "0 (strict FIFO) or an integer 1..63", parse_bypass },
	{ "TICKET_BYPASS_NS", "0 (no time bound) or nanoseconds 100..1000000", parse_bypass_ns },
	{ "TICKET_REST_US", "0 (never rest) or microseconds 1..100000", parse_rest_us },
	{ "TICKET_TURN_US", "0 (never yield) or microseconds 1..100000", parse_turn_us },
	{ "TICKET_DOZE_US", "0 (never doze before queueing) or microseconds 1..100000", parse_doze_us },
	{ "TICKET_ACTIVE", "off, cpus, or an integer 0..8 (0: off)", parse_active },
	{ "TICKET_ACTIVE_US", "microseconds 100..100000", parse_active_us },
	{ "TICKET_STALL_MS", "0 (off) or milliseconds 1..86400000", parse_stall_ms },
	{ "TICKET_STATS", "0, 1 (stderr) or a file name", parse_stats },
	{ "TICKET_STATS_TOP", "an integer 1..1000000", parse_stats_top },
	{ "TICKET_STATS_KEEP", "0 or 1", parse_stats_keep },
	{ "TICKET_CHECK_UNLOCK", "0 or 1", parse_check_unlock },
	{ "TICKET_STRICT", "0 or 1", parse_strict },
	{ "TICKET_VERBOSE", "0 or 1", parse_verbose },
};

static const struct ts_config defaults = {
	.delay_mode = TS_DELAY_AUTO,
	.delay_factor = 50,
	.delay_min = 1,
	.delay_max = 16000,
	.table = TS_TABLE_HASHED,
	.hash_bits = 6,
	.wait = TS_WAIT_PARK,
	.spin_budget = 2000,
	.bypass_max = TS_BYPASS_DEFAULT,
	.bypass_ns = 500,
	.queue_capacity = TS_QUEUE_CAPACITY,
	.rest_us = 500,
	.turn_us = 500,
	.doze_us = 50,
	.active = 0, /* replaced by active_for_cpus() in ts_config_parse() */
	.active_us = 1000,
	.stall_ms = 1000,
	.stats = NULL,
	.stats_top = 20,
	.stats_keep = false,
	.check_unlock = false,
	.strict = false,
	.verbose = false,
};

static const char *delay_mode_name(const struct ts_config *cfg)
{
	switch (cfg->delay_mode) {
	case TS_DELAY_OFF: return "off";
	case TS_DELAY_FIXED: return "fixed";
	case TS_DELAY_SERIES: return "series";
	default: return "auto";
	}
}

static const char *wait_name(enum ts_wait_policy wait)
{
	switch (wait) {
	case TS_WAIT_SPIN: return "spin";
	case TS_WAIT_YIELD: return "yield";
	default: return "park";
	}
}

extern char **environ;

/* Whether any TICKET_* variable is set; only names are looked at. */
static bool any_ticket_variable(void)
{
	for (char **e = environ; e != NULL && *e != NULL; e++)
		if (strncmp(*e, "TICKET_", 7) == 0)
			return true;
	return false;
}

unsigned ts_config_parse(struct ts_config *out)
{
	unsigned invalid = 0;
	size_t i;

	*out = defaults;
	/* sched_getaffinity(): a system call, no cancellation point, safe before main. */
	out->active = active_for_cpus();
	if (getauxval(AT_SECURE) != 0) {
		if (any_ticket_variable())
			ts_log("set-user-ID or otherwise secure process (AT_SECURE): ignoring every "
			       "TICKET_* variable");
		return 0;
	}
	out->runtime_dir = secure_getenv("XDG_RUNTIME_DIR");
	if (out->runtime_dir != NULL && out->runtime_dir[0] != '/')
		out->runtime_dir = NULL; /* the specification wants an absolute path */
	for (i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		const char *raw = secure_getenv(options[i].name);

		if (raw == NULL || raw[0] == '\0')
			continue;
		if (!options[i].parse(raw, out)) {
			ts_log("%s='%s' is not valid: accepted: %s; keeping the default",
			       options[i].name, raw, options[i].accepted);
			invalid++;
		}
	}
	if (out->delay_min > out->delay_max) {
		ts_log("TICKET_DELAY_MIN=%u exceeds TICKET_DELAY_MAX=%u: accepted: MIN <= MAX; "
		       "keeping the defaults %u and %u",
		       out->delay_min, out->delay_max, defaults.delay_min, defaults.delay_max);
		out->delay_min = defaults.delay_min;
		out->delay_max = defaults.delay_max;
		invalid++;
	}
	return invalid;
}

static void report(const struct ts_config *cfg)
{
	char fixed[32] = "";

	if (cfg->delay_mode == TS_DELAY_FIXED)
		snprintf(fixed, sizeof(fixed), " factor=%u", cfg->delay_factor);
	ts_log("delay=%s%s min=%u max=%u table=%s hash_bits=%u wait=%s spin=%u "
	       "bypass=%u bypass_ns=%u queue=%u rest_us=%u turn_us=%u doze_us=%u active=%u active_us=%u stall_ms=%u stats=%s stats_top=%u check_unlock=%d strict=%d",
	       delay_mode_name(cfg), fixed, cfg->delay_min, cfg->delay_max,
	       cfg->table == TS_TABLE_HASHED ? "hashed" : "single", cfg->hash_bits,
	       wait_name(cfg->wait), cfg->spin_budget, cfg->bypass_max, cfg->bypass_ns, cfg->queue_capacity,
	       cfg->rest_us, cfg->turn_us, cfg->doze_us, cfg->active, cfg->active_us, cfg->stall_ms,
	       cfg->stats == NULL ? "off" : cfg->stats[0] == '\0' ? "stderr" : cfg->stats,
	       cfg->stats_top, cfg->check_unlock, cfg->strict);
}

enum { CONFIG_UNREAD, CONFIG_READING, CONFIG_READY };

/*
 * TICKET_CHECK_UNLOCK, for the unlock's slow path, which must not pay a
 * call to ts_config() for each counted release: a word marked TS_UNLOCK_DUE
 * was marked by code that had read the configuration.
 */
bool ts_unlock_checks;

static struct ts_config config;
static int config_state = CONFIG_UNREAD;

const struct ts_config *ts_config(void)
{
	int state = __atomic_load_n(&config_state, __ATOMIC_ACQUIRE);

	if (__builtin_expect(state == CONFIG_READY, 1))
		return &config; /* ACQUIRE pairs with the RELEASE store below */

	state = CONFIG_UNREAD;
	if (__atomic_compare_exchange_n(&config_state, &state, CONFIG_READING, false,
	                                __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
		unsigned invalid = ts_config_parse(&config);

		if (invalid > 0 && config.strict) {
			ts_log("TICKET_STRICT=1: %u invalid setting%s, exiting with status 2",
			       invalid, invalid == 1 ? "" : "s");
			_exit(2);
		}
		if (config.verbose)
			report(&config);
		__atomic_store_n(&ts_unlock_checks, config.check_unlock, __ATOMIC_RELAXED);
		/* RELEASE pairs with the ACQUIRE loads above: readers see the whole config. */
		__atomic_store_n(&config_state, CONFIG_READY, __ATOMIC_RELEASE);
		return &config;
	}
	/* Another thread is parsing; that takes microseconds, so spinning is fine. */
	while (__atomic_load_n(&config_state, __ATOMIC_ACQUIRE) != CONFIG_READY)
		__builtin_ia32_pause();
	return &config;
}
