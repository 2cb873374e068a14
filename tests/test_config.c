/*
 * Configuration: every TICKET_* variable with good and bad values (parsed by
 * the core linked in), and, through lockprobe under the preload, the stderr
 * line, strict mode's exit status and the verbose report.
 */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdlib.h>

#include "active.h"
#include "options.h"
#include "ticket_lock.h"
#include "probe_run.h"

static unsigned parse_with(const char *name, const char *value, struct ts_config *cfg)
{
	setenv(name, value, 1);
	unsigned invalid = ts_config_parse(cfg);
	unsetenv(name);
	return invalid;
}

/* TICKET_ACTIVE=cpus, and the default: the CPUs we may run on, at most TS_ACTIVE_MAX. */
static uint32_t active_places_for_cpus(void)
{
	return ts_active_cpus() < TS_ACTIVE_MAX ? ts_active_cpus() : TS_ACTIVE_MAX;
}

Test(config, defaults)
{
	struct ts_config cfg;

	cr_assert_eq(ts_config_parse(&cfg), 0);
	cr_assert_eq(cfg.delay_mode, TS_DELAY_AUTO);
	cr_assert_eq(cfg.delay_min, 1);
	cr_assert_eq(cfg.delay_max, 16000);
	cr_assert_eq(cfg.table, TS_TABLE_HASHED);
	cr_assert_eq(cfg.hash_bits, 6);
	cr_assert_eq(cfg.wait, TS_WAIT_PARK);
	cr_assert_eq(cfg.spin_budget, 2000, "TICKET_SPIN's default is 2000 pauses, not %u",
	             cfg.spin_budget);
	cr_assert_null(cfg.stats);
	cr_assert(!cfg.stats_keep, "TICKET_STATS_KEEP's default is 0");
	cr_assert_eq(cfg.stats_top, 20);
	cr_assert_eq(cfg.stall_ms, 1000);
	cr_assert_eq(cfg.bypass_ns, 500, "TICKET_BYPASS_NS's default is 500 ns, not %u", cfg.bypass_ns);
	/* not FIFO by default: stealing bounded by the most the word counts */
	cr_assert_eq(cfg.bypass_max, TS_BYPASS_DEFAULT);
	cr_assert_eq(cfg.bypass_max, 31);
	cr_assert_eq(cfg.queue_capacity, TS_QUEUE_CAPACITY);
	cr_assert_eq(cfg.queue_capacity, 63);
	cr_assert_eq(cfg.rest_us, 500);
	cr_assert_eq(cfg.turn_us, 500);
	cr_assert_eq(cfg.doze_us, 50);
	cr_assert_eq(cfg.active, active_places_for_cpus(),
	             "the active set has as many places as CPUs (at most %u) by default: %u",
	             TS_ACTIVE_MAX, cfg.active);
	cr_assert_geq(cfg.active, 1);
	cr_assert_eq(cfg.active_us, 1000);
	cr_assert(!cfg.strict && !cfg.verbose);
}

Test(config, good_values)
{
	struct ts_config cfg;

	cr_assert_eq(parse_with("TICKET_DELAY", "off", &cfg), 0);
	cr_assert_eq(cfg.delay_mode, TS_DELAY_OFF);
	cr_assert_eq(parse_with("TICKET_DELAY", "auto", &cfg), 0);
	cr_assert_eq(cfg.delay_mode, TS_DELAY_AUTO);
	cr_assert_eq(parse_with("TICKET_DELAY", "series", &cfg), 0);
	cr_assert_eq(cfg.delay_mode, TS_DELAY_SERIES);
	cr_assert_eq(parse_with("TICKET_DELAY", "250", &cfg), 0);
	cr_assert_eq(cfg.delay_mode, TS_DELAY_FIXED);
	cr_assert_eq(cfg.delay_factor, 250);
	cr_assert_eq(parse_with("TICKET_DELAY_MIN", "3", &cfg), 0);
	cr_assert_eq(cfg.delay_min, 3);
	cr_assert_eq(parse_with("TICKET_DELAY_MAX", "500", &cfg), 0);
	cr_assert_eq(cfg.delay_max, 500);
	cr_assert_eq(parse_with("TICKET_DELAY_TABLE", "single", &cfg), 0);
	cr_assert_eq(cfg.table, TS_TABLE_SINGLE);
	cr_assert_eq(parse_with("TICKET_DELAY_HASH_BITS", "0", &cfg), 0);
	cr_assert_eq(cfg.hash_bits, 0);
	cr_assert_eq(parse_with("TICKET_WAIT", "yield", &cfg), 0);
	cr_assert_eq(cfg.wait, TS_WAIT_YIELD);
	cr_assert_eq(parse_with("TICKET_WAIT", "spin", &cfg), 0);
	cr_assert_eq(cfg.wait, TS_WAIT_SPIN);
	cr_assert_eq(parse_with("TICKET_SPIN", "77", &cfg), 0);
	cr_assert_eq(cfg.spin_budget, 77);
	/* TICKET_QUEUE=0: strict FIFO (no stealing), the queue's capacity left alone */
	cr_assert_eq(parse_with("TICKET_QUEUE", "0", &cfg), 0);
	cr_assert_eq(cfg.bypass_max, 0);
	cr_assert_eq(cfg.queue_capacity, 63);
	cr_assert_eq(parse_with("TICKET_QUEUE", "2", &cfg), 0);
	cr_assert_eq(cfg.queue_capacity, 2);
	cr_assert_eq(cfg.bypass_max, 31);
	cr_assert_eq(parse_with("TICKET_QUEUE", "5", &cfg), 0);
	cr_assert_eq(cfg.queue_capacity, 5);
	cr_assert_eq(parse_with("TICKET_QUEUE", "63", &cfg), 0);
	cr_assert_eq(cfg.queue_capacity, 63);
	cr_assert_eq(parse_with("TICKET_BYPASS", "0", &cfg), 0);
	cr_assert_eq(cfg.bypass_max, 0);
	cr_assert_eq(parse_with("TICKET_BYPASS", "1", &cfg), 0);
	cr_assert_eq(cfg.bypass_max, 1);
	cr_assert_eq(parse_with("TICKET_BYPASS", "63", &cfg), 0);
	cr_assert_eq(cfg.bypass_max, 63);
	cr_assert_eq(parse_with("TICKET_BYPASS_NS", "0", &cfg), 0);
	cr_assert_eq(cfg.bypass_ns, 0);
	cr_assert_eq(parse_with("TICKET_BYPASS_NS", "100", &cfg), 0);
	cr_assert_eq(cfg.bypass_ns, 100);
	cr_assert_eq(parse_with("TICKET_BYPASS_NS", "1000000", &cfg), 0);
	cr_assert_eq(cfg.bypass_ns, 1000000);
	cr_assert_eq(parse_with("TICKET_REST_US", "0", &cfg), 0);
	cr_assert_eq(cfg.rest_us, 0);
	cr_assert_eq(parse_with("TICKET_REST_US", "100000", &cfg), 0);
	cr_assert_eq(cfg.rest_us, 100000);
	cr_assert_eq(parse_with("TICKET_TURN_US", "0", &cfg), 0);
	cr_assert_eq(cfg.turn_us, 0);
	cr_assert_eq(parse_with("TICKET_TURN_US", "100000", &cfg), 0);
	cr_assert_eq(cfg.turn_us, 100000);
	cr_assert_eq(parse_with("TICKET_DOZE_US", "0", &cfg), 0);
	cr_assert_eq(cfg.doze_us, 0);
	cr_assert_eq(parse_with("TICKET_DOZE_US", "100000", &cfg), 0);
	cr_assert_eq(cfg.doze_us, 100000);
	cr_assert_eq(parse_with("TICKET_ACTIVE", "2", &cfg), 0);
	cr_assert_eq(cfg.active, 2);
	cr_assert_eq(parse_with("TICKET_ACTIVE", "8", &cfg), 0);
	cr_assert_eq(cfg.active, 8);
	cr_assert_eq(parse_with("TICKET_ACTIVE", "off", &cfg), 0);
	cr_assert_eq(cfg.active, 0);
	cr_assert_eq(parse_with("TICKET_ACTIVE", "0", &cfg), 0);
	cr_assert_eq(cfg.active, 0);
	cr_assert_eq(parse_with("TICKET_ACTIVE", "cpus", &cfg), 0);
	cr_assert_eq(cfg.active, active_places_for_cpus());
	cr_assert_geq(cfg.active, 1);
	cr_assert_eq(parse_with("TICKET_ACTIVE_US", "100", &cfg), 0);
	cr_assert_eq(cfg.active_us, 100);
	cr_assert_eq(parse_with("TICKET_ACTIVE_US", "100000", &cfg), 0);
	cr_assert_eq(cfg.active_us, 100000);
	cr_assert_eq(parse_with("TICKET_STALL_MS", "0", &cfg), 0);
	cr_assert_eq(cfg.stall_ms, 0);
	cr_assert_eq(parse_with("TICKET_STALL_MS", "86400000", &cfg), 0);
	cr_assert_eq(cfg.stall_ms, 86400000);
	cr_assert_eq(parse_with("TICKET_STATS", "1", &cfg), 0);
	cr_assert_str_eq(cfg.stats, "");
	cr_assert_eq(parse_with("TICKET_STATS", "/tmp/report.txt", &cfg), 0);
	cr_assert_str_eq(cfg.stats, "/tmp/report.txt");
	cr_assert_eq(parse_with("TICKET_STATS_TOP", "5", &cfg), 0);
	cr_assert_eq(cfg.stats_top, 5);
	cr_assert_eq(parse_with("TICKET_STRICT", "1", &cfg), 0);
	cr_assert(cfg.strict);
	cr_assert_eq(parse_with("TICKET_VERBOSE", "1", &cfg), 0);
	cr_assert(cfg.verbose);
	cr_assert_eq(parse_with("TICKET_DELAY", "", &cfg), 0, "empty counts as unset");
	cr_assert_eq(cfg.delay_mode, TS_DELAY_AUTO);
}

Test(config, bad_values_keep_the_default)
{
	static const struct {
		const char *name, *value;
	} bad[] = {
		{ "TICKET_DELAY", "fast" },        { "TICKET_DELAY", "0" },
		{ "TICKET_DELAY", "-5" },          { "TICKET_DELAY", "10x" },
		{ "TICKET_DELAY", "100001" },      { "TICKET_DELAY", " 10" },
		{ "TICKET_DELAY_MIN", "0" },       { "TICKET_DELAY_MIN", "abc" },
		{ "TICKET_DELAY_MAX", "1000001" }, { "TICKET_DELAY_MAX", "99999999999999999999" },
		{ "TICKET_DELAY_TABLE", "hash" },  { "TICKET_DELAY_HASH_BITS", "7" },
		{ "TICKET_DELAY_HASH_BITS", "-1" }, { "TICKET_WAIT", "sleep" },
		{ "TICKET_SPIN", "0" },            { "TICKET_QUEUE", "1" },
		{ "TICKET_QUEUE", "40000" },       { "TICKET_QUEUE", "64" },
		{ "TICKET_QUEUE", "-1" },          { "TICKET_BYPASS", "64" },
		{ "TICKET_BYPASS", "-1" },         { "TICKET_BYPASS", "1x" },
		{ "TICKET_BYPASS_NS", "99" },      { "TICKET_BYPASS_NS", "1000001" },
		{ "TICKET_BYPASS_NS", "-1" },      { "TICKET_BYPASS_NS", "500ns" },
		{ "TICKET_REST_US", "-1" },        { "TICKET_REST_US", "100001" },
		{ "TICKET_REST_US", "1ms" },
		{ "TICKET_TURN_US", "-1" },        { "TICKET_TURN_US", "100001" },
		{ "TICKET_TURN_US", "0.5" },
		{ "TICKET_DOZE_US", "-1" },        { "TICKET_DOZE_US", "100001" },
		{ "TICKET_DOZE_US", "3us" },
		{ "TICKET_ACTIVE", "9" },          { "TICKET_ACTIVE", "-1" },
		{ "TICKET_ACTIVE", "cpu" },        { "TICKET_ACTIVE", "2 " },
		{ "TICKET_ACTIVE_US", "99" },      { "TICKET_ACTIVE_US", "100001" },
		{ "TICKET_ACTIVE_US", "0" },       { "TICKET_ACTIVE_US", "1ms" },
		{ "TICKET_STALL_MS", "-1" },       { "TICKET_STALL_MS", "86400001" },
		{ "TICKET_STALL_MS", "1s" },       { "TICKET_STATS_TOP", "0" },
		{ "TICKET_STRICT", "yes" },        { "TICKET_VERBOSE", "2" },
	};
	struct ts_config defaults, cfg;

	cr_assert_eq(ts_config_parse(&defaults), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(parse_with(bad[i].name, bad[i].value, &cfg), 1, "%s=%s accepted",
		             bad[i].name, bad[i].value);
		cr_assert(memcmp(&cfg, &defaults, sizeof(cfg)) == 0,
		          "%s=%s changed the configuration", bad[i].name, bad[i].value);
	}
}

/*
 * One rule for every integer, the same as the ticketspin wrapper's: digits
 * only, leading zeros fine; no sign (not even "-0" or "+5"), no blank.
 */
Test(config, integers_are_digits_only)
{
	static const char *const refused[] = { "-0", "+5", "-5", " 5", "5 ", "0x10", "1e3", "-",
	                                       "+" };
	struct ts_config cfg;

	cr_assert_eq(parse_with("TICKET_BYPASS", "007", &cfg), 0, "007 refused");
	cr_assert_eq(cfg.bypass_max, 7);
	cr_assert_eq(parse_with("TICKET_STALL_MS", "0000000000000000000000042", &cfg), 0);
	cr_assert_eq(cfg.stall_ms, 42);
	cr_assert_eq(parse_with("TICKET_REST_US", "00", &cfg), 0);
	cr_assert_eq(cfg.rest_us, 0);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		cr_assert_eq(parse_with("TICKET_REST_US", refused[i], &cfg), 1,
		             "TICKET_REST_US='%s' accepted", refused[i]);
}

/* TICKET_QUEUE=0 asks for strict FIFO: a TICKET_BYPASS beside it does not undo that. */
Test(config, queue_zero_wins_over_bypass)
{
	struct ts_config cfg;

	setenv("TICKET_QUEUE", "0", 1);
	setenv("TICKET_BYPASS", "5", 1);
	cr_assert_eq(ts_config_parse(&cfg), 0);
	unsetenv("TICKET_QUEUE");
	unsetenv("TICKET_BYPASS");
	cr_assert_eq(cfg.bypass_max, 0);
	setenv("TICKET_QUEUE", "4", 1);
	setenv("TICKET_BYPASS", "5", 1);
	cr_assert_eq(ts_config_parse(&cfg), 0);
	unsetenv("TICKET_QUEUE");
	unsetenv("TICKET_BYPASS");
	cr_assert_eq(cfg.bypass_max, 5);
	cr_assert_eq(cfg.queue_capacity, 4);
}

Test(config, min_above_max_reverts_both)
{
	struct ts_config cfg;

	setenv("TICKET_DELAY_MIN", "100", 1);
	setenv("TICKET_DELAY_MAX", "50", 1);
	cr_assert_eq(ts_config_parse(&cfg), 1);
	cr_assert_eq(cfg.delay_min, 1);
	cr_assert_eq(cfg.delay_max, 16000);
}

/* The documented bounds, MIN <= MAX, at their edges: equal is accepted. */
Test(config, min_equal_to_max_is_accepted)
{
	static const char *const equal[] = { "1", "50", "16000", "1000000" };
	struct ts_config cfg;

	for (size_t i = 0; i < sizeof(equal) / sizeof(equal[0]); i++) {
		setenv("TICKET_DELAY_MIN", equal[i], 1);
		setenv("TICKET_DELAY_MAX", equal[i], 1);
		cr_assert_eq(ts_config_parse(&cfg), 0, "MIN = MAX = %s refused", equal[i]);
		cr_assert_eq(cfg.delay_min, (uint32_t)atol(equal[i]));
		cr_assert_eq(cfg.delay_max, (uint32_t)atol(equal[i]));
	}
	/* one above is refused, and both revert */
	setenv("TICKET_DELAY_MIN", "51", 1);
	setenv("TICKET_DELAY_MAX", "50", 1);
	cr_assert_eq(ts_config_parse(&cfg), 1);
	cr_assert_eq(cfg.delay_min, 1);
	cr_assert_eq(cfg.delay_max, 16000);
	unsetenv("TICKET_DELAY_MIN");
	unsetenv("TICKET_DELAY_MAX");
}

/*
 * Every integer setting at the edges of the values README's table gives it
 * (and libticketspin(7)): both ends accepted and in force, one past each
 * end refused.  TICKET_DELAY_MIN and MAX each with the other at 1000000 or
 * 1, so that only the range decides.
 */
struct edge {
	const char *name, *value;
	bool accepted;
	const char *other; /* another VAR=VALUE set beside it, or NULL */
};

static long setting_of(const struct ts_config *cfg, const char *name)
{
	static const struct {
		const char *name;
		size_t offset;
	} fields[] = {
		{ "TICKET_DELAY", offsetof(struct ts_config, delay_factor) },
		{ "TICKET_DELAY_MIN", offsetof(struct ts_config, delay_min) },
		{ "TICKET_DELAY_MAX", offsetof(struct ts_config, delay_max) },
		{ "TICKET_DELAY_HASH_BITS", offsetof(struct ts_config, hash_bits) },
		{ "TICKET_SPIN", offsetof(struct ts_config, spin_budget) },
		{ "TICKET_BYPASS", offsetof(struct ts_config, bypass_max) },
		{ "TICKET_BYPASS_NS", offsetof(struct ts_config, bypass_ns) },
		{ "TICKET_REST_US", offsetof(struct ts_config, rest_us) },
		{ "TICKET_TURN_US", offsetof(struct ts_config, turn_us) },
		{ "TICKET_DOZE_US", offsetof(struct ts_config, doze_us) },
		{ "TICKET_ACTIVE", offsetof(struct ts_config, active) },
		{ "TICKET_ACTIVE_US", offsetof(struct ts_config, active_us) },
		{ "TICKET_STALL_MS", offsetof(struct ts_config, stall_ms) },
		{ "TICKET_STATS_TOP", offsetof(struct ts_config, stats_top) },
	};

	if (strcmp(name, "TICKET_QUEUE") == 0)
		return cfg->bypass_max == 0 ? 0 : (long)cfg->queue_capacity;
	if (strcmp(name, "TICKET_STRICT") == 0)
		return cfg->strict;
	if (strcmp(name, "TICKET_VERBOSE") == 0)
		return cfg->verbose;
	if (strcmp(name, "TICKET_STATS_KEEP") == 0)
		return cfg->stats_keep;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (strcmp(name, fields[i].name) == 0)
			return *(const uint32_t *)((const char *)cfg + fields[i].offset);
	cr_assert_fail("no field for %s", name);
	return -1;
}

Test(config, every_documented_range_at_its_edges)
{
	static const struct edge edges[] = {
		{ "TICKET_DELAY", "1", true, NULL },           { "TICKET_DELAY", "100000", true, NULL },
		{ "TICKET_DELAY", "0", false, NULL },          { "TICKET_DELAY", "100001", false, NULL },
		{ "TICKET_DELAY_MIN", "1", true, NULL },
		{ "TICKET_DELAY_MIN", "1000000", true, "TICKET_DELAY_MAX=1000000" },
		{ "TICKET_DELAY_MIN", "0", false, NULL },
		{ "TICKET_DELAY_MIN", "1000001", false, "TICKET_DELAY_MAX=1000000" },
		{ "TICKET_DELAY_MAX", "1", true, "TICKET_DELAY_MIN=1" },
		{ "TICKET_DELAY_MAX", "1000000", true, NULL },
		{ "TICKET_DELAY_MAX", "0", false, "TICKET_DELAY_MIN=1" },
		{ "TICKET_DELAY_MAX", "1000001", false, NULL },
		{ "TICKET_DELAY_HASH_BITS", "0", true, NULL },
		{ "TICKET_DELAY_HASH_BITS", "6", true, NULL },
		{ "TICKET_DELAY_HASH_BITS", "7", false, NULL },
		{ "TICKET_SPIN", "1", true, NULL },            { "TICKET_SPIN", "100000000", true, NULL },
		{ "TICKET_SPIN", "0", false, NULL },           { "TICKET_SPIN", "100000001", false, NULL },
		{ "TICKET_BYPASS", "0", true, NULL },          { "TICKET_BYPASS", "63", true, NULL },
		{ "TICKET_BYPASS", "64", false, NULL },
		{ "TICKET_BYPASS_NS", "0", true, NULL },       { "TICKET_BYPASS_NS", "100", true, NULL },
		{ "TICKET_BYPASS_NS", "1000000", true, NULL }, { "TICKET_BYPASS_NS", "99", false, NULL },
		{ "TICKET_BYPASS_NS", "1000001", false, NULL },
		{ "TICKET_QUEUE", "0", true, NULL },           { "TICKET_QUEUE", "2", true, NULL },
		{ "TICKET_QUEUE", "63", true, NULL },          { "TICKET_QUEUE", "1", false, NULL },
		{ "TICKET_QUEUE", "64", false, NULL },
		{ "TICKET_REST_US", "0", true, NULL },         { "TICKET_REST_US", "1", true, NULL },
		{ "TICKET_REST_US", "100000", true, NULL },    { "TICKET_REST_US", "100001", false, NULL },
		{ "TICKET_TURN_US", "0", true, NULL },         { "TICKET_TURN_US", "1", true, NULL },
		{ "TICKET_TURN_US", "100000", true, NULL },    { "TICKET_TURN_US", "100001", false, NULL },
		{ "TICKET_DOZE_US", "0", true, NULL },         { "TICKET_DOZE_US", "1", true, NULL },
		{ "TICKET_DOZE_US", "100000", true, NULL },    { "TICKET_DOZE_US", "100001", false, NULL },
		{ "TICKET_ACTIVE", "0", true, NULL },          { "TICKET_ACTIVE", "8", true, NULL },
		{ "TICKET_ACTIVE", "9", false, NULL },
		{ "TICKET_ACTIVE_US", "100", true, NULL },     { "TICKET_ACTIVE_US", "100000", true, NULL },
		{ "TICKET_ACTIVE_US", "99", false, NULL },     { "TICKET_ACTIVE_US", "100001", false, NULL },
		{ "TICKET_STALL_MS", "0", true, NULL },        { "TICKET_STALL_MS", "1", true, NULL },
		{ "TICKET_STALL_MS", "86400000", true, NULL }, { "TICKET_STALL_MS", "86400001", false, NULL },
		{ "TICKET_STATS_TOP", "1", true, NULL },       { "TICKET_STATS_TOP", "1000000", true, NULL },
		{ "TICKET_STATS_TOP", "0", false, NULL },      { "TICKET_STATS_TOP", "1000001", false, NULL },
		{ "TICKET_STATS_KEEP", "0", true, NULL },      { "TICKET_STATS_KEEP", "1", true, NULL },
		{ "TICKET_STATS_KEEP", "2", false, NULL },
		{ "TICKET_STRICT", "0", true, NULL },          { "TICKET_STRICT", "1", true, NULL },
		{ "TICKET_STRICT", "2", false, NULL },
		{ "TICKET_VERBOSE", "0", true, NULL },         { "TICKET_VERBOSE", "1", true, NULL },
		{ "TICKET_VERBOSE", "2", false, NULL },
	};
	struct ts_config defaults, cfg;

	cr_assert_eq(ts_config_parse(&defaults), 0);
	for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		const struct edge *e = &edges[i];
		char other[64] = "";
		unsigned invalid;

		if (e->other != NULL) {
			snprintf(other, sizeof(other), "%s", e->other);
			other[strcspn(other, "=")] = '\0';
			setenv(other, strchr(e->other, '=') + 1, 1);
		}
		setenv(e->name, e->value, 1);
		invalid = ts_config_parse(&cfg);
		unsetenv(e->name);
		if (e->other != NULL)
			unsetenv(other);
		if (e->accepted) {
			cr_assert_eq(invalid, 0, "%s=%s refused (README: accepted)", e->name, e->value);
			cr_assert_eq(setting_of(&cfg, e->name), atol(e->value), "%s=%s: in force %ld",
			             e->name, e->value, setting_of(&cfg, e->name));
		} else {
			cr_assert_eq(invalid, 1, "%s=%s accepted (README: out of range)", e->name,
			             e->value);
			cr_assert_eq(setting_of(&cfg, e->name), setting_of(&defaults, e->name),
			             "%s=%s: the default not kept", e->name, e->value);
		}
	}
}

static void run_probe(struct probe_result *r, const char *const *env)
{
	probe_run(r, env, (const char *const[]){ LOCKPROBE, "provider", NULL }, 30);
}

Test(config, bad_value_gets_one_stderr_line_and_the_program_runs)
{
	struct probe_result r;

	run_probe(&r, (const char *const[]){ "TICKET_DELAY=fast", NULL });
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0);
	cr_assert_str_eq(r.err, "ticketspin: TICKET_DELAY='fast' is not valid: accepted: off, "
	                        "auto, series, or a fixed factor 1..100000; keeping the default\n");
	cr_assert_null(strstr(r.out, "ticketspin: "), "stdout must stay clean: %s", r.out);
}

Test(config, the_queue_variables_name_what_they_accept)
{
	struct probe_result r;

	run_probe(&r, (const char *const[]){ "TICKET_QUEUE=200", "TICKET_BYPASS=64", NULL });
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0);
	cr_assert_str_eq(r.err, "ticketspin: TICKET_QUEUE='200' is not valid: accepted: 0 (strict "
	                        "FIFO) or an integer 2..63; keeping the default\n"
	                        "ticketspin: TICKET_BYPASS='64' is not valid: accepted: 0 (strict "
	                        "FIFO) or an integer 1..63; keeping the default\n");
}

Test(config, strict_makes_a_bad_value_fatal_before_main)
{
	struct probe_result r;

	run_probe(&r, (const char *const[]){ "TICKET_STRICT=1", "TICKET_WAIT=nap", NULL });
	cr_assert_eq(r.status, 2, "status %d, stderr: %s", r.status, r.err);
	cr_assert_str_eq(r.out, "", "main must not run: %s", r.out);
	cr_assert(strstr(r.err, "TICKET_WAIT='nap' is not valid: accepted: spin, yield or park")
	          != NULL, "%s", r.err);
	cr_assert(strstr(r.err, "exiting with status 2") != NULL, "%s", r.err);
}

Test(config, strict_with_good_values_runs)
{
	struct probe_result r;

	run_probe(&r, (const char *const[]){ "TICKET_STRICT=1", "TICKET_DELAY=10", NULL });
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0);
	cr_assert_str_eq(r.err, "");
}

/* Under the preload, strict: MIN = MAX is no bad value, and is in force. */
Test(config, min_equal_to_max_runs_strict)
{
	struct probe_result r;

	run_probe(&r, (const char *const[]){ "TICKET_STRICT=1", "TICKET_VERBOSE=1",
	                                     "TICKET_DELAY_MIN=7", "TICKET_DELAY_MAX=7", NULL });
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, " min=7 max=7 ") != NULL, "%s", r.err);
	cr_assert_null(strstr(r.err, "not valid"), "%s", r.err);
	cr_assert_null(strstr(r.err, "exceeds"), "%s", r.err);
}

Test(config, verbose_reports_the_effective_settings_once)
{
	struct probe_result r;

	run_probe(&r, (const char *const[]){ "TICKET_VERBOSE=1", "TICKET_DELAY=250",
	                                     "TICKET_DELAY_TABLE=single", NULL });
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0);
	cr_assert(strstr(r.err, "ticketspin: delay=fixed factor=250 ") != NULL, "%s", r.err);
	cr_assert(strstr(r.err, " table=single ") != NULL, "%s", r.err);
	cr_assert(strstr(r.err, " bypass=31 bypass_ns=500 queue=63 ") != NULL, "%s", r.err);
	cr_assert_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1, "one line: %s", r.err);
	cr_assert_null(strstr(r.out, "ticketspin: "));
}

/*
 * README, libticketspin(7): "A bad value gets one line on standard error
 * naming the variable, the value and what is accepted, and the default is
 * kept; with TICKET_STRICT=1 the process exits with status 2 instead,
 * before main.  The library never writes to standard output."  For every
 * variable, under the preload: one line, the value quoted, what is accepted
 * (the values README's table gives), the program runs; strict: status 2,
 * nothing of main on stdout.
 */
static void bad_value_is_reported(const char *name, const char *value,
                                  const char *const *accepted)
{
	struct probe_result r;
	char setting[128], line[256];

	snprintf(setting, sizeof(setting), "%s=%s", name, value);
	snprintf(line, sizeof(line), "ticketspin: %s='%s' is not valid: accepted: ", name, value);
	run_probe(&r, (const char *const[]){ setting, "TICKET_STRICT=", "TICKET_VERBOSE=", NULL });
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "%s: status %d\n%s", setting, r.status, r.err);
	cr_assert_eq(count_occurrences(r.err, "\n"), 1, "%s: not one stderr line:\n%s", setting,
	             r.err);
	cr_assert(strncmp(r.err, line, strlen(line)) == 0, "%s: '%s' expected:\n%s", setting, line,
	          r.err);
	cr_assert(strstr(r.err, "; keeping the default\n") != NULL, "%s:\n%s", setting, r.err);
	for (const char *const *a = accepted; *a != NULL; a++)
		cr_assert(strstr(r.err + strlen(line), *a) != NULL,
		          "%s: what is accepted does not say '%s':\n%s", setting, *a, r.err);
	cr_assert_null(strstr(r.out, "ticketspin: "), "%s: stdout: %s", setting, r.out);

	if (strcmp(name, "TICKET_STRICT") == 0)
		return; /* a bad TICKET_STRICT is not strict */
	run_probe(&r, (const char *const[]){ setting, "TICKET_STRICT=1", "TICKET_VERBOSE=", NULL });
	cr_assert_eq(r.status, 2, "%s, TICKET_STRICT=1: status %d\n%s", setting, r.status, r.err);
	cr_assert_str_eq(r.out, "", "%s, TICKET_STRICT=1: main ran", setting);
	cr_assert(strncmp(r.err, line, strlen(line)) == 0, "%s, strict:\n%s", setting, r.err);
	cr_assert(strstr(r.err, "exiting with status 2") != NULL, "%s, strict:\n%s", setting,
	          r.err);
}

#define ACCEPTS(...) ((const char *const[]){ __VA_ARGS__, NULL })

Test(config, every_variable_names_a_bad_value_and_what_it_accepts)
{
	bad_value_is_reported("TICKET_DELAY", "fastest", ACCEPTS("off", "auto", "series", "1..100000"));
	bad_value_is_reported("TICKET_DELAY_MIN", "0", ACCEPTS("1..1000000", "TICKET_DELAY_MAX"));
	bad_value_is_reported("TICKET_DELAY_MAX", "1000001", ACCEPTS("1..1000000", "TICKET_DELAY_MIN"));
	bad_value_is_reported("TICKET_DELAY_TABLE", "tree", ACCEPTS("hashed", "single"));
	bad_value_is_reported("TICKET_DELAY_HASH_BITS", "7", ACCEPTS("0..6"));
	bad_value_is_reported("TICKET_WAIT", "nap", ACCEPTS("spin", "yield", "park"));
	bad_value_is_reported("TICKET_SPIN", "0", ACCEPTS("1..100000000"));
	bad_value_is_reported("TICKET_BYPASS", "64", ACCEPTS("0 (strict FIFO)", "1..63"));
	bad_value_is_reported("TICKET_QUEUE", "1", ACCEPTS("0 (strict FIFO)", "2..63"));
	bad_value_is_reported("TICKET_REST_US", "100001", ACCEPTS("0 (", "1..100000"));
	bad_value_is_reported("TICKET_TURN_US", "-1", ACCEPTS("0 (", "1..100000"));
	bad_value_is_reported("TICKET_DOZE_US", "50us", ACCEPTS("0 (", "1..100000"));
	bad_value_is_reported("TICKET_ACTIVE", "9", ACCEPTS("off", "cpus", "0..8"));
	bad_value_is_reported("TICKET_ACTIVE_US", "99", ACCEPTS("100..100000"));
	bad_value_is_reported("TICKET_STALL_MS", "1s", ACCEPTS("0 (off)", "1..86400000"));
	bad_value_is_reported("TICKET_STATS_TOP", "0", ACCEPTS("1..1000000"));
	bad_value_is_reported("TICKET_STATS_KEEP", "yes", ACCEPTS("0 or 1"));
	bad_value_is_reported("TICKET_STRICT", "2", ACCEPTS("0 or 1"));
	bad_value_is_reported("TICKET_VERBOSE", "on", ACCEPTS("0 or 1"));
}

/*
 * TICKET_DELAY_MIN above TICKET_DELAY_MAX, each valid alone: the same one
 * line (both named, with their values and the rule), both defaults kept;
 * fatal with TICKET_STRICT=1.
 */
Test(config, min_above_max_gets_one_line_and_is_fatal_when_strict)
{
	static const char line[] = "ticketspin: TICKET_DELAY_MIN=100 exceeds TICKET_DELAY_MAX=50: "
	                           "accepted: MIN <= MAX; keeping the defaults 1 and 16000\n";
	struct probe_result r;

	run_probe(&r, (const char *const[]){ "TICKET_DELAY_MIN=100", "TICKET_DELAY_MAX=50",
	                                     "TICKET_VERBOSE=1", NULL });
	assert_probe_provider(&r);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert(strncmp(r.err, line, strlen(line)) == 0, "not '%s':\n%s", line, r.err);
	cr_assert(strstr(r.err, " min=1 max=16000 ") != NULL, "the defaults not in force:\n%s", r.err);
	cr_assert_eq(count_occurrences(r.err, "\n"), 2, "the line, then the settings:\n%s", r.err);
	run_probe(&r, (const char *const[]){ "TICKET_DELAY_MIN=100", "TICKET_DELAY_MAX=50",
	                                     "TICKET_STRICT=1", NULL });
	cr_assert_eq(r.status, 2, "status %d:\n%s", r.status, r.err);
	cr_assert_str_eq(r.out, "");
}
