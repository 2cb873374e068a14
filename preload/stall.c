/*
 * stall.c - one line on stderr for a wait that lasts longer than
 * TICKET_STALL_MS; see stall.h.
 */
#include "stall.h"

#include "log.h"
#include "maps.h"
#include "ticket_lock.h"

static struct ts_rate_limit stall_rate = TS_RATE_LIMIT(TS_STALL_BURST);

void ts_stall_check(struct ts_stall_watch *watch, const struct ts_config *cfg,
                    const void *lock, const void *caller, unsigned ahead, uint32_t word,
                    bool outside, uint64_t now_ns)
{
	char where[160], from[160], note[96];
	uint64_t waited_ms, skipped;

	if (cfg->stall_ms == 0 || watch->reported)
		return;
	if (watch->since_ns == 0) {
		watch->since_ns = now_ns;
		return;
	}
	waited_ms = (now_ns - watch->since_ns) / 1000000u;
	if (waited_ms < cfg->stall_ms)
		return;
	watch->reported = true; /* once per wait, printed or suppressed */
	if (!ts_rate_allows(&stall_rate, &skipped))
		return;
	/* Not dladdr(): we hold a ticket (maps.h) */
	ts_maps_describe(where, sizeof(where), lock);
	ts_maps_describe(from, sizeof(from), caller);
	ts_suppressed_note(note, sizeof(note), skipped);
	if (outside)
		ts_log("stall: pthread_spin_lock(%s) called from %s has waited %llu ms, "
		       "outside a full line (%u tickets in line, word 0x%08x); still "
		       "waiting (TICKET_STALL_MS=%u)%s",
		       where, from, (unsigned long long)waited_ms,
		       ts_queued(word), word, cfg->stall_ms, note);
	else
		ts_log("stall: pthread_spin_lock(%s) called from %s has waited %llu ms, "
		       "%u ticket%s ahead (word 0x%08x); still waiting "
		       "(TICKET_STALL_MS=%u)%s",
		       where, from, (unsigned long long)waited_ms, ahead, ahead == 1 ? "" : "s",
		       word, cfg->stall_ms, note);
}
