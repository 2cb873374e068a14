/*
 * common.c - option parsing, the timed thread harness and the report shared
 * by the example programs.  See common.h.
 */
#include "common.h"

#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

atomic_int ex_stop;
struct ex_common *ex_settings;

static atomic_int ex_start;

#define EX_SAMPLES_PER_THREAD 16384u

/* ---- options ---------------------------------------------------------- */

static const struct ex_option *common_options(struct ex_common *c)
{
	static struct ex_option opts[8];

	opts[0] = (struct ex_option){ "threads", EX_LONG, &c->threads, 1, 4096,
	                              "worker threads" };
	opts[1] = (struct ex_option){ "seconds", EX_DOUBLE, &c->seconds, 0.01, 86400,
	                              "length of the run (may be fractional)" };
	opts[2] = (struct ex_option){ "csv", EX_FLAG, &c->csv, 0, 0,
	                              "print a CSV header and one row instead of text" };
	opts[3] = (struct ex_option){ "json", EX_FLAG, &c->json, 0, 0,
	                              "print one JSON object instead of text" };
	opts[4] = (struct ex_option){ "no-latency", EX_FLAG, &c->no_latency, 0, 0,
	                              "do not sample lock latencies" };
	opts[5] = (struct ex_option){ "seed", EX_LONG, &c->seed, 0, 2147483647,
	                              "random seed" };
	opts[6] = (struct ex_option){ NULL, EX_FLAG, NULL, 0, 0, NULL };
	return opts;
}

static void print_options(FILE *f, const struct ex_option *o)
{
	for (; o->name != NULL; o++) {
		char arg[64] = "";

		if (o->kind == EX_LONG)
			snprintf(arg, sizeof(arg), " N");
		else if (o->kind == EX_DOUBLE)
			snprintf(arg, sizeof(arg), " X");
		fprintf(f, "  --%s%-*s %s", o->name, (int)(16 - strlen(o->name)), arg, o->help);
		if (o->kind == EX_LONG)
			fprintf(f, " (%.0f..%.0f, default %ld)", o->min, o->max, *(long *)o->value);
		else if (o->kind == EX_DOUBLE)
			fprintf(f, " (%g..%g, default %g)", o->min, o->max, *(double *)o->value);
		fputc('\n', f);
	}
}

static void usage(FILE *f, const char *name, const char *summary, const struct ex_option *own,
                  const struct ex_option *common)
{
	fprintf(f, "usage: %s [options]\n%s\n\noptions of %s:\n", name, summary, name);
	print_options(f, own);
	fprintf(f, "common options:\n");
	print_options(f, common);
	fprintf(f, "  --help             this text\n\n"
	           "Text output has the lines throughput=<ops/s> and provider=<library>.\n"
	           "Exit status: 0 invariants held, 1 an invariant was violated, 2 usage.\n");
}

static bool set_value(const struct ex_option *o, const char *raw)
{
	char *end;
	double v;

	if (raw[0] == '\0')
		return false;
	errno = 0;
	v = o->kind == EX_LONG ? (double)strtol(raw, &end, 10) : strtod(raw, &end);
	if (errno != 0 || *end != '\0' || !(v >= o->min && v <= o->max))
		return false;
	if (o->kind == EX_LONG)
		*(long *)o->value = (long)v;
	else
		*(double *)o->value = v;
	return true;
}

static size_t count_options(const struct ex_option *o)
{
	size_t n = 0;

	while (o[n].name != NULL)
		n++;
	return n;
}

/* getopt_long's value for option @i of the example's and common options */
#define EX_OPTION_VALUE(i) (256 + (int)(i))

void ex_parse(int argc, char **argv, const char *name, const char *summary,
              struct ex_common *common, const struct ex_option *options)
{
	const struct ex_option *common_opts = common_options(common);
	size_t nown = count_options(options), ncommon = count_options(common_opts);
	struct option *longopts = calloc(nown + ncommon + 2, sizeof(*longopts));
	int opt;

	if (longopts == NULL) {
		perror(name);
		exit(2);
	}
	/* the example's options first: they may shadow a common one */
	for (size_t i = 0; i < nown + ncommon; i++) {
		const struct ex_option *o = i < nown ? &options[i] : &common_opts[i - nown];

		longopts[i] = (struct option){ o->name,
		                               o->kind == EX_FLAG ? no_argument : required_argument,
		                               NULL, EX_OPTION_VALUE(i) };
	}
	longopts[nown + ncommon] = (struct option){ "help", no_argument, NULL, 'h' };
	opterr = 0; /* our messages, naming the program and the accepted values */
	optind = 1;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const struct ex_option *o;
		size_t i;

		if (opt == 'h') {
			usage(stdout, name, summary, options, common_opts);
			exit(0);
		}
		if (opt == '?') {
			fprintf(stderr, "%s: bad option '%s': unknown, ambiguous, or a flag given a value\n",
			        name, argv[optind - 1]);
			goto bad;
		}
		if (opt == ':') {
			fprintf(stderr, "%s: %s needs a value\n", name, argv[optind - 1]);
			goto bad;
		}
		i = (size_t)(opt - EX_OPTION_VALUE(0));
		o = i < nown ? &options[i] : &common_opts[i - nown];
		if (o->kind == EX_FLAG) {
			*(bool *)o->value = true;
		} else if (!set_value(o, optarg)) {
			if (o->kind == EX_LONG)
				fprintf(stderr, "%s: --%s '%s': expected an integer %.0f..%.0f\n",
				        name, o->name, optarg, o->min, o->max);
			else
				fprintf(stderr, "%s: --%s '%s': expected a number %g..%g\n", name,
				        o->name, optarg, o->min, o->max);
			goto bad;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", name, argv[optind]);
		goto bad;
	}
	free(longopts);
	if (common->csv && common->json) {
		fprintf(stderr, "%s: --csv and --json exclude each other\n", name);
		goto bad;
	}
	common->format = common->csv ? EX_CSV : common->json ? EX_JSON : EX_TEXT;
	ex_settings = common;
	return;
bad:
	fprintf(stderr, "%s: try '%s --help'\n", name, name);
	exit(2);
}

/* ---- harness ---------------------------------------------------------- */

void ex_record_latency(struct ex_thread *t, uint64_t ns)
{
	uint32_t v = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;

	if (ns > t->lat_max)
		t->lat_max = ns;
	t->seen++;
	if (t->nsamples < EX_SAMPLES_PER_THREAD) {
		t->samples[t->nsamples++] = v;
	} else {
		/* reservoir sampling keeps a uniform sample of the whole run */
		uint64_t j = ex_random(t) % t->seen;

		if (j < EX_SAMPLES_PER_THREAD)
			t->samples[j] = v;
	}
}

struct start {
	void *(*worker)(void *);
	struct ex_thread *t;
};

static void *thread_main(void *arg)
{
	struct start *s = arg;

	/* Yield rather than spin: threads may outnumber CPUs. */
	while (!atomic_load_explicit(&ex_start, memory_order_acquire))
		sched_yield();
	return s->worker(s->t);
}

struct ex_thread *ex_run(void *(*worker)(void *), void **args, double *elapsed)
{
	long n = ex_settings->threads;
	struct ex_thread *threads;
	struct start *starts = calloc((size_t)n, sizeof(*starts));
	pthread_t *tids = calloc((size_t)n, sizeof(*tids));
	struct timespec sleep_for;
	uint64_t t0, t1;

	if (posix_memalign((void **)&threads, 64, (size_t)n * sizeof(*threads)) != 0 ||
	    starts == NULL || tids == NULL) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	memset(threads, 0, (size_t)n * sizeof(*threads));
	for (long i = 0; i < n; i++) {
		struct ex_thread *t = &threads[i];

		t->id = (int)i;
		t->arg = args != NULL ? args[i] : NULL;
		t->rng = ((uint64_t)ex_settings->seed + 1) * 0x9e3779b97f4a7c15ull + (uint64_t)i * 0xbf58476d1ce4e5b9ull + 1;
		t->sink = (uint64_t)i;
		if (!ex_settings->no_latency) {
			t->samples = malloc(EX_SAMPLES_PER_THREAD * sizeof(*t->samples));
			if (t->samples == NULL) {
				fprintf(stderr, "out of memory\n");
				exit(2);
			}
		}
		starts[i] = (struct start){ worker, t };
		errno = pthread_create(&tids[i], NULL, thread_main, &starts[i]);
		if (errno != 0) {
			perror("pthread_create");
			exit(2);
		}
	}
	t0 = ex_now_ns();
	atomic_store_explicit(&ex_start, 1, memory_order_release);
	sleep_for.tv_sec = (time_t)ex_settings->seconds;
	sleep_for.tv_nsec = (long)((ex_settings->seconds - (double)sleep_for.tv_sec) * 1e9);
	while (nanosleep(&sleep_for, &sleep_for) != 0 && errno == EINTR)
		;
	atomic_store_explicit(&ex_stop, 1, memory_order_relaxed);
	for (long i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	t1 = ex_now_ns();
	*elapsed = (double)(t1 - t0) / 1e9;
	free(starts);
	free(tids);
	return threads;
}

uint64_t ex_total_ops(const struct ex_thread *threads)
{
	uint64_t total = 0;

	for (long i = 0; i < ex_settings->threads; i++)
		total += threads[i].ops;
	return total;
}

/* ---- report ----------------------------------------------------------- */

#define EX_MAX_FIELDS 64

struct ex_field {
	char key[40];
	char value[512];
	bool number;
	bool extra; /* the example's own field */
};

struct ex_report {
	const char *example;
	struct ex_field fields[EX_MAX_FIELDS];
	int nfields;
	int violations;
	char first_violation[256];
};

static struct ex_field *add_field(struct ex_report *r, const char *key, bool number, bool extra)
{
	struct ex_field *f;

	if (r->nfields >= EX_MAX_FIELDS) {
		fprintf(stderr, "%s: too many report fields\n", r->example);
		exit(2);
	}
	f = &r->fields[r->nfields++];
	snprintf(f->key, sizeof(f->key), "%s", key);
	f->number = number;
	f->extra = extra;
	return f;
}

static void put_long(struct ex_report *r, const char *key, long long v, bool extra)
{
	snprintf(add_field(r, key, true, extra)->value, sizeof(r->fields[0].value), "%lld", v);
}

static void put_double(struct ex_report *r, const char *key, double v, bool extra)
{
	struct ex_field *f = add_field(r, key, true, extra);

	if (isfinite(v) && fabs(v) >= 1e5)
		snprintf(f->value, sizeof(f->value), "%.0f", v);
	else if (isfinite(v))
		snprintf(f->value, sizeof(f->value), "%.6g", v);
	else
		snprintf(f->value, sizeof(f->value), "null"); /* JSON; text/CSV print it too */
}

void ex_report_long(struct ex_report *r, const char *key, long long value)
{
	put_long(r, key, value, true);
}

void ex_report_double(struct ex_report *r, const char *key, double value)
{
	put_double(r, key, value, true);
}

void ex_report_string(struct ex_report *r, const char *key, const char *value)
{
	snprintf(add_field(r, key, false, true)->value, sizeof(r->fields[0].value), "%s", value);
}

static int compare_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static const char *provider(void)
{
	Dl_info info;
	void *address = dlsym(RTLD_DEFAULT, "pthread_spin_lock");

	if (address == NULL || !dladdr(address, &info) || info.dli_fname == NULL)
		return "(unknown)";
	return info.dli_fname;
}

struct ex_report *ex_report_new(const char *example, const struct ex_thread *threads,
                                double elapsed)
{
	return ex_report_new_units(example, threads, ex_settings->threads, elapsed);
}

struct ex_report *ex_report_new_units(const char *example, const struct ex_thread *threads,
                                      long n, double elapsed)
{
	struct ex_report *r = calloc(1, sizeof(*r));
	uint64_t total = 0, min = UINT64_MAX, max = 0;
	double mean, var = 0;
	size_t nsamples = 0;
	uint64_t lat_max = 0;

	if (r == NULL) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	r->example = example;
	for (long i = 0; i < n; i++) {
		total += threads[i].ops;
		min = threads[i].ops < min ? threads[i].ops : min;
		max = threads[i].ops > max ? threads[i].ops : max;
		nsamples += threads[i].nsamples;
		lat_max = threads[i].lat_max > lat_max ? threads[i].lat_max : lat_max;
	}
	mean = (double)total / (double)n;
	for (long i = 0; i < n; i++)
		var += ((double)threads[i].ops - mean) * ((double)threads[i].ops - mean);
	var /= (double)n;

	add_field(r, "example", false, false);
	snprintf(r->fields[0].value, sizeof(r->fields[0].value), "%s", example);
	put_long(r, "threads", ex_settings->threads, false);
	put_double(r, "seconds", elapsed, false);
	put_double(r, "throughput", elapsed > 0 ? (double)total / elapsed : 0, false);
	put_long(r, "ops", (long long)total, false);
	put_long(r, "ops_min", (long long)min, false);
	put_long(r, "ops_max", (long long)max, false);
	put_double(r, "ops_mean", mean, false);
	put_double(r, "ops_stddev", sqrt(var), false);
	put_double(r, "fairness", max > 0 ? (double)min / (double)max : 0, false);

	if (nsamples > 0) {
		uint32_t *all = malloc(nsamples * sizeof(*all));
		size_t k = 0;
		static const struct { const char *key; double q; } pct[] = {
			{ "lat_p50_ns", 0.50 }, { "lat_p90_ns", 0.90 },
			{ "lat_p99_ns", 0.99 }, { "lat_p999_ns", 0.999 },
		};

		if (all == NULL) {
			fprintf(stderr, "out of memory\n");
			exit(2);
		}
		for (long i = 0; i < n; i++) {
			memcpy(all + k, threads[i].samples, threads[i].nsamples * sizeof(*all));
			k += threads[i].nsamples;
		}
		qsort(all, nsamples, sizeof(*all), compare_u32);
		for (size_t p = 0; p < sizeof(pct) / sizeof(pct[0]); p++) {
			size_t idx = (size_t)(pct[p].q * (double)(nsamples - 1) + 0.5);

			put_long(r, pct[p].key, all[idx], false);
		}
		put_long(r, "lat_max_ns", (long long)lat_max, false);
		put_long(r, "lat_samples", (long long)nsamples, false);
		free(all);
	} else {
		static const char *const keys[] = { "lat_p50_ns", "lat_p90_ns", "lat_p99_ns",
		                                    "lat_p999_ns", "lat_max_ns" };

		for (size_t p = 0; p < sizeof(keys) / sizeof(keys[0]); p++)
			put_double(r, keys[p], NAN, false);
		put_long(r, "lat_samples", 0, false);
	}
	return r;
}

void ex_violation(struct ex_report *r, const char *fmt, ...)
{
	va_list ap;
	char line[256];

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: INVARIANT VIOLATED: %s\n", r->example, line);
	if (r->violations++ == 0)
		snprintf(r->first_violation, sizeof(r->first_violation), "%s", line);
}

static const struct ex_field *field(const struct ex_report *r, const char *key)
{
	for (int i = 0; i < r->nfields; i++)
		if (strcmp(r->fields[i].key, key) == 0)
			return &r->fields[i];
	return NULL;
}

static void print_json_string(const char *s)
{
	putchar('"');
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void print_csv_value(const char *s)
{
	if (strpbrk(s, ",\"\n") == NULL) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s != '\0'; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

int ex_report_finish(struct ex_report *r)
{
	ex_report_string(r, "provider", provider());
	r->fields[r->nfields - 1].extra = false;
	ex_report_string(r, "invariants", r->violations == 0 ? "ok" : "violated");
	r->fields[r->nfields - 1].extra = false;

	switch (ex_settings->format) {
	case EX_TEXT: {
		printf("example=%s threads=%s seconds=%s\n", field(r, "example")->value,
		       field(r, "threads")->value, field(r, "seconds")->value);
		printf("throughput=%s\n", field(r, "throughput")->value);
		printf("per_thread_ops: total=%s min=%s max=%s mean=%s stddev=%s min/max=%s\n",
		       field(r, "ops")->value, field(r, "ops_min")->value,
		       field(r, "ops_max")->value, field(r, "ops_mean")->value,
		       field(r, "ops_stddev")->value, field(r, "fairness")->value);
		if (!ex_settings->no_latency)
			printf("latency_ns: p50=%s p90=%s p99=%s p99.9=%s max=%s samples=%s\n",
			       field(r, "lat_p50_ns")->value, field(r, "lat_p90_ns")->value,
			       field(r, "lat_p99_ns")->value, field(r, "lat_p999_ns")->value,
			       field(r, "lat_max_ns")->value, field(r, "lat_samples")->value);
		printf("%s:", r->example);
		for (int i = 0; i < r->nfields; i++)
			if (r->fields[i].extra)
				printf(" %s=%s", r->fields[i].key, r->fields[i].value);
		printf("\nprovider=%s\n", field(r, "provider")->value);
		if (r->violations == 0)
			printf("invariants=ok\n");
		else
			printf("invariants=violated (%d; first: %s)\n", r->violations,
			       r->first_violation);
		break;
	}
	case EX_CSV:
		for (int i = 0; i < r->nfields; i++)
			printf("%s%s", i ? "," : "", r->fields[i].key);
		putchar('\n');
		for (int i = 0; i < r->nfields; i++) {
			if (i)
				putchar(',');
			print_csv_value(r->fields[i].value);
		}
		putchar('\n');
		break;
	case EX_JSON:
		putchar('{');
		for (int i = 0; i < r->nfields; i++) {
			printf("%s", i ? ", " : "");
			print_json_string(r->fields[i].key);
			putchar(':');
			if (r->fields[i].number)
				fputs(r->fields[i].value, stdout);
			else
				print_json_string(r->fields[i].value);
		}
		printf("}\n");
		break;
	}
	fflush(stdout);
	return r->violations == 0 ? 0 : 1;
}
