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
