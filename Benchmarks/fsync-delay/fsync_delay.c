// An LD_PRELOAD shim that makes fsync(2) and fdatasync(2) take at least FSYNC_DELAY_US
// microseconds (default 1000), then counts them: a stand-in for a disk whose flush costs what a
// network block device or a SATA SSD's does, on a VM whose virtual disk acknowledges a flush in
// about 140 us. Used by scripts/bench-writes.sh (FSYNC_DELAY_US=...), never by the daemon itself.
// The count is written to FSYNC_COUNT_FILE (if set) at exit.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_long calls;

static void delay(void) {
    static long micros = -1;
    if (micros < 0) {
        const char *text = getenv("FSYNC_DELAY_US");
        micros = text ? atol(text) : 1000;
    }
    struct timespec wait = {micros / 1000000, (micros % 1000000) * 1000};
    while (nanosleep(&wait, &wait) != 0) {}
    atomic_fetch_add(&calls, 1);
}

int fsync(int descriptor) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    int result = real(descriptor);
    delay();
    return result;
}

int fdatasync(int descriptor) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    int result = real(descriptor);
    delay();
    return result;
}

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("FSYNC_COUNT_FILE");
    if (!path) return;
    FILE *file = fopen(path, "w");
    if (!file) return;
    fprintf(file, "%ld\n", atomic_load(&calls));
    fclose(file);
}
