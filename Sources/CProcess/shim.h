#include <malloc.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>

/// `prctl` is variadic, which Swift cannot call: fixed-argument wrappers for the two uses the
/// daemon has. A process that is not dumpable writes no core file on a crash (its memory holds
/// tokens) and cannot be attached to with ptrace by other processes of its user.
static inline int tokenvault_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

static inline int tokenvault_is_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+): <spawn.h> declares it only under
/// _GNU_SOURCE, which this module cannot define without its system headers disagreeing with
/// Swift's Glibc module. Its prototype, as glibc has it; the spawned child closes every
/// descriptor from `from` up.
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *, int);

static inline int tokenvault_spawn_close_from(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

/// `mallopt(M_ARENA_MAX, count)`: how many malloc arenas glibc may create (default 8 per core).
static inline int tokenvault_limit_malloc_arenas(int count) {
    return mallopt(M_ARENA_MAX, count);
}
