/* The chaos lab's clock nemesis, preloaded (LD_PRELOAD) into the nodes and sentinels it runs:
 * the process's wall clock (CLOCK_REALTIME, and gettimeofday/time built on it) follows a control
 * file the lab rewrites at run time, so the lab can step it forward or back and make it run fast
 * or slow, per process, as NTP steps, `date -s` and VM resyncs do to real machines.
 *
 * Only the wall clock: CLOCK_MONOTONIC and CLOCK_BOOTTIME are never stepped by the kernel, and a
 * design that measures durations on them (fenced mode's assumption 1) must not be judged by a
 * fault that cannot happen. libfaketime (Debian `faketime`) cannot do this: it steps every clock
 * together, and told to leave the monotonic ones alone (FAKETIME_DONT_FAKE_MONOTONIC=1) it makes
 * Python's time.sleep fail with EINVAL (checked with libfaketime 0.9.10).
 *
 * The control file ($RILL_CHAOS_CLOCK) holds struct control, mapped shared: fake wall time =
 * base_fake + (real - base_real) * rate. The lab writes it as a seqlock (seq odd while writing),
 * so a reader never uses half an update. No file, or a file too short: the real clock.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct control {
    volatile uint64_t seq;     /* even: stable; odd: being written */
    volatile int64_t base_real; /* ns of the real wall clock */
    volatile int64_t base_fake; /* ns of the process's wall clock at base_real */
    volatile double rate;       /* fake seconds per real second */
};

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
static clock_gettime_fn real_clock_gettime;
static const struct control *control;
static int initialized;

static void init(void) {
    real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    const char *path = getenv("RILL_CHAOS_CLOCK");
    if (path != NULL) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            off_t size = lseek(fd, 0, SEEK_END);
            void *map = size >= (off_t)sizeof(struct control)
                ? mmap(NULL, sizeof(struct control), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
            close(fd);
            if (map != MAP_FAILED) control = (const struct control *)map;
        }
    }
    __atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
}

static int64_t fake_wall(int64_t real) {
    if (control == NULL) return real;
    for (int tries = 0; tries < 1000; tries++) {
        uint64_t seq = __atomic_load_n(&control->seq, __ATOMIC_ACQUIRE);
        if (seq & 1) continue;
        int64_t base_real = control->base_real, base_fake = control->base_fake;
        double rate = control->rate;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&control->seq, __ATOMIC_RELAXED) != seq) continue;
        if (seq == 0 || rate <= 0.0) return real; /* never written */
        return base_fake + (int64_t)((double)(real - base_real) * rate);
    }
    return real;
}

static int is_wall(clockid_t id) {
    return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    if (!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE)) init();
    int rc = real_clock_gettime(id, ts);
    if (rc == 0 && is_wall(id)) {
        int64_t ns = fake_wall((int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec);
        ts->tv_sec = ns / 1000000000;
        ts->tv_nsec = ns % 1000000000;
        if (ts->tv_nsec < 0) { ts->tv_nsec += 1000000000; ts->tv_sec -= 1; }
    }
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
    (void)tz;
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out != NULL) *out = ts.tv_sec;
    return ts.tv_sec;
}
