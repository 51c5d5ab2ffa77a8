#include <sqlite3.h>

/// `sqlite3_config` is variadic, which Swift cannot call: a fixed-argument wrapper for the one
/// option the vault sets. Memory statistics take a process-wide mutex on every allocation
/// SQLite makes; with the event loops and the audit writer all reading and writing, that mutex
/// was the daemon's most contended lock. Effective only before SQLite initialises (the first
/// open); SQLITE_MISUSE after that.
static inline int tokenvault_sqlite3_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
