/* The configurations every lock test runs under: each delay mode of the seed
 * series, each delay table, each waiting policy, the default park without
 * the doze before queueing, and with the active set off (on by default). */
#ifndef TICKETSPIN_TEST_MODES_H
#define TICKETSPIN_TEST_MODES_H

#define MODE_ENV(...) ((const char *const[]){ __VA_ARGS__, NULL })

#define FOR_EACH_MODE(X)                                                                  \
	X(off_spin, MODE_ENV("TICKET_DELAY=off", "TICKET_WAIT=spin"))                     \
	X(fixed_50, MODE_ENV("TICKET_DELAY=50", "TICKET_WAIT=spin"))                      \
	X(auto_hashed, MODE_ENV("TICKET_DELAY=auto", "TICKET_DELAY_TABLE=hashed"))        \
	X(auto_single, MODE_ENV("TICKET_DELAY=auto", "TICKET_DELAY_TABLE=single"))        \
	X(auto_yield, MODE_ENV("TICKET_DELAY=auto", "TICKET_WAIT=yield"))                 \
	X(auto_park, MODE_ENV("TICKET_DELAY=auto", "TICKET_WAIT=park", "TICKET_SPIN=50")) \
	X(auto_no_doze, MODE_ENV("TICKET_DELAY=auto", "TICKET_DOZE_US=0"))                \
	X(active_1, MODE_ENV("TICKET_ACTIVE=1", "TICKET_ACTIVE_US=200"))                  \
	X(active_off, MODE_ENV("TICKET_ACTIVE=off"))                                      \
	X(defaults, MODE_ENV("TICKET_DELAY="))

#endif
