#!/usr/bin/env sysbench
-- spinlock.lua - contended pthread spinlocks driven by sysbench 1.0.
--
--   sysbench spinlock.lua --threads=N --time=T [--locks=L] [--cs=C] [--think=K] run
--
-- sysbench itself never calls pthread_spin_*: this script calls them through
-- LuaJIT's ffi, so the library that provides them (glibc, or libticketspin.so
-- when LD_PRELOADed) is the one being measured.  Each sysbench worker has its
-- own Lua state; the locks are allocated once, in init() in the main thread,
-- and their address reaches the workers through an environment variable, so
-- all workers contend on the same locks.  Each lock shares its cache line
-- with the data it protects.
--
-- One event = one acquisition of one lock (chosen at random when --locks > 1),
-- a critical section of --cs writes to the lock's cache line, the unlock, and
-- --think iterations of private work.
--
-- sysbench's own report (General statistics, Latency (ms), Threads fairness)
-- is printed unchanged, so runs compare with any other sysbench run; after
-- it, done() prints this script's lines:
--   sysbench-spinlock: locks=L cs=C think=K threads=N
--   provider=<library that provides pthread_spin_lock>
--   per_thread_ops: total= min= max= mean= stddev= min/max=
--   invariants=ok | invariants=violated
-- It checks that no two threads were ever inside one lock and that the locks'
-- counts add up to the events the workers made, and exits with status 1
-- otherwise.

local ffi = require("ffi")

ffi.cdef[[
typedef int pthread_spinlock_t;
int pthread_spin_init(pthread_spinlock_t *lock, int pshared);
int pthread_spin_destroy(pthread_spinlock_t *lock);
int pthread_spin_lock(pthread_spinlock_t *lock);
int pthread_spin_unlock(pthread_spinlock_t *lock);
int posix_memalign(void **memptr, size_t alignment, size_t size);
int setenv(const char *name, const char *value, int overwrite);
char *getenv(const char *name);
typedef struct {
	const char *dli_fname;
	void *dli_fbase;
	const char *dli_sname;
	void *dli_saddr;
} ts_dl_info;
int dladdr(const void *addr, ts_dl_info *info);

typedef struct {
	pthread_spinlock_t lock;
	int32_t inside;          /* threads inside: must be exactly 1 */
	uint64_t count;          /* acquisitions, counted inside */
	uint64_t data[6];        /* the data the lock protects */
} ts_slot;                   /* one cache line */

typedef struct {
	uint64_t violations;     /* written by a worker that found another inside */
	uint64_t nthreads;
	uint64_t events[?];      /* per worker, written by thread_done() */
} ts_header;
]]

sysbench.cmdline.options = {
	locks = {"Number of spinlocks shared by all threads", 1},
	cs = {"Writes to the lock's cache line inside the critical section", 10},
	think = {"Iterations of private work after each unlock", 100},
	["no-lock"] = {"Skip the spinlocks, to see the invariant checks fail", false},
}

local ENV = "TICKETSPIN_SYSBENCH_SHARED"
local PTHREAD_PROCESS_PRIVATE = 0

local function check_options()
	local o = sysbench.opt
	if o.locks < 1 or o.cs < 0 or o.think < 0 then
		io.stderr:write("spinlock.lua: --locks must be >= 1, --cs and --think >= 0\n")
		os.exit(2)
	end
end

local function aligned(size)
	local p = ffi.new("void *[1]")
	if ffi.C.posix_memalign(p, 64, size) ~= 0 then
		io.stderr:write("spinlock.lua: out of memory\n")
		os.exit(2)
	end
	ffi.fill(p[0], size)
	return p[0]
end

-- The lock is the first member of its slot.
local function lock_of(slot)
	return ffi.cast("pthread_spinlock_t *", slot)
end

-- The shared state, found through the environment in every Lua state.
local function shared()
	local v = ffi.C.getenv(ENV)
	if v == nil then
		error("spinlock.lua: " .. ENV .. " is not set: init() did not run")
	end
	local slots_addr, header_addr = ffi.string(v):match("^(%d+):(%d+)$")
	local slots = ffi.cast("ts_slot *", ffi.cast("uintptr_t", tonumber(slots_addr)))
	local header = ffi.cast("ts_header *", ffi.cast("uintptr_t", tonumber(header_addr)))
	return slots, header
end

local function provider()
	local info = ffi.new("ts_dl_info[1]")
	local fn = ffi.cast("void *", ffi.C.pthread_spin_lock)
	if ffi.C.dladdr(fn, info) == 0 or info[0].dli_fname == nil then
		return "(unknown)"
	end
	return ffi.string(info[0].dli_fname)
end

function init()
	check_options()
	local nlocks = sysbench.opt.locks
	local nthreads = sysbench.opt.threads
	local slots = ffi.cast("ts_slot *", aligned(ffi.sizeof("ts_slot") * nlocks))
	local header_size = ffi.sizeof("ts_header", nthreads)
	local header = ffi.cast("ts_header *", aligned(header_size))
	header.nthreads = nthreads
	for i = 0, nlocks - 1 do
		ffi.C.pthread_spin_init(lock_of(slots + i), PTHREAD_PROCESS_PRIVATE)
	end
	ffi.C.setenv(ENV, string.format("%d:%d",
		tonumber(ffi.cast("uintptr_t", slots)),
		tonumber(ffi.cast("uintptr_t", header))), 1)
end

local slots, header, nlocks, cs, think, no_lock, events, sink

function thread_init()
	slots, header = shared()
	nlocks = sysbench.opt.locks
	cs = sysbench.opt.cs
	think = sysbench.opt.think
	no_lock = sysbench.opt.no_lock
	events = 0
	sink = 0
end

function event()
	local s = slots
	if nlocks > 1 then
		s = slots + sysbench.rand.uniform(0, nlocks - 1)
	end
	if not no_lock then
		ffi.C.pthread_spin_lock(lock_of(s))
	end
	s.inside = s.inside + 1
	if s.inside ~= 1 then
		header.violations = header.violations + 1
	end
	s.count = s.count + 1
	local d = s.data
	for i = 0, cs - 1 do
		d[i % 6] = d[i % 6] + i
	end
	s.inside = s.inside - 1
	if not no_lock then
		ffi.C.pthread_spin_unlock(lock_of(s))
	end
	events = events + 1
	local x = sink
	for i = 1, think do
		x = (x * 31 + i) % 1000003
	end
	sink = x
end

function thread_done()
	header.events[sysbench.tid] = events
end

-- Our lines, after sysbench's report (done() runs after it): the workers'
-- events, as counted by thread_done().
local function print_our_lines(h)
	local n = tonumber(h.nthreads)
	local min, max, sum, sq = math.huge, 0, 0, 0
	for i = 0, n - 1 do
		local e = tonumber(h.events[i])
		min = math.min(min, e)
		max = math.max(max, e)
		sum = sum + e
		sq = sq + e * e
	end
	local mean = sum / n
	local stddev = math.sqrt(math.max(0, sq / n - mean * mean))
	print()
	print(string.format("sysbench-spinlock: locks=%d cs=%d think=%d threads=%d%s",
		sysbench.opt.locks, sysbench.opt.cs, sysbench.opt.think, n,
		sysbench.opt.no_lock and " lock=none" or ""))
	print("provider=" .. provider())
	print(string.format("per_thread_ops: total=%d min=%d max=%d mean=%.1f stddev=%.1f min/max=%.3f",
		sum, min, max, mean, stddev, max > 0 and min / max or 0))
end

function done()
	local s, h = shared()
	local counted, made = 0, 0
	for i = 0, sysbench.opt.locks - 1 do
		counted = counted + tonumber(s[i].count)
	end
	for i = 0, tonumber(h.nthreads) - 1 do
		made = made + tonumber(h.events[i])
	end
	print_our_lines(h)
	local bad = {}
	if h.violations ~= 0 then
		bad[#bad + 1] = string.format("two threads inside one lock, %d times",
			tonumber(h.violations))
	end
	if counted ~= made then
		bad[#bad + 1] = string.format("the locks counted %d acquisitions, the workers %d",
			counted, made)
	end
	if #bad > 0 then
		for _, line in ipairs(bad) do
			io.stderr:write("sysbench-spinlock: INVARIANT VIOLATED: " .. line .. "\n")
		end
		print("invariants=violated")
		io.stdout:flush()
		-- error() in done() would still exit with status 0 in sysbench 1.0.20
		os.exit(1)
	end
	print("invariants=ok")
	for i = 0, sysbench.opt.locks - 1 do
		ffi.C.pthread_spin_destroy(lock_of(s + i))
	end
end
