/* The chaos lab's clock nemesis, preloaded (LD_PRELOAD) into the nodes and sentinels it runs. Two
 * faults, each following a control file the lab rewrites at run time, per process:
 *
 * - the wall clock (CLOCK_REALTIME, and gettimeofday/time built on it) steps forward or back and
 *   runs fast or slow, as NTP steps, `date -s` and VM resyncs do to real machines;
 * - the monotonic clocks (CLOCK_MONOTONIC, its _COARSE variant, CLOCK_BOOTTIME) run at a rate,
 *   continuously and never backwards: a machine whose oscillator is fast or slow (rate drift).
 *   They are never stepped: the kernel never steps them, and a design that measures durations on
 *   them (fenced mode's assumption 1) must not be judged by a fault that cannot happen. The rate
 *   is what that assumption bounds (±ρ), so a rate beyond ρ shows the documented edge.
 *
 * libfaketime (Debian `faketime`) cannot do this: it steps every clock together, and told to leave
 * the monotonic ones alone (FAKETIME_DONT_FAKE_MONOTONIC=1) it makes Python's time.sleep fail with
 * EINVAL (checked with libfaketime 0.9.10).
 *
 * What the fault models: the process's *readings* of its clocks. Timeouts stay kernel-timed in real
 * durations: a relative timeout (nanosleep, select, poll, epoll_wait) lasts its real length, and a
 * deadline given on a faked clock (clock_nanosleep TIMER_ABSTIME, pthread_cond_timedwait,
 * pthread_cond_clockwait, sem_timedwait, sem_clockwait: CPython's time.sleep, lock and condition
 * timeouts and the GIL's switch interval compute theirs from a reading) is moved to the real clock
 * keeping what remained of it, so that a waiting process is neither woken at once nor stalled by
 * the clock's accumulated offset. So a process at rate r that sleeps X seconds measures r·X. An
 * event loop that re-reads the clock when its timeout ends and waits again if its timer is not due
 * (asyncio) fires its timers when the process's clock says so, never sooner. Not modeled: timers
 * armed in the kernel on a clock (timerfd, POSIX timers), other processes' view of this one, and
 * the kernel's own timers (TCP's) running at the skewed rate as on a real drifting machine.
 *
 * The control file ($RILL_CHAOS_CLOCK) holds struct control, mapped shared: fake wall time =
 * base_fake + (real - base_real) * rate; fake monotonic time = mono_base_fake + (real monotonic -
 * mono_base_real) * mono_rate, and the same for CLOCK_BOOTTIME with its own bases and the same
 * rate. The lab writes it as a seqlock (seq odd while writing), so a reader never uses half an
 * update. No file, or a file too short: the real clocks; a rate of 0: that clock never set, real.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct control {
    volatile uint64_t seq;          /* even: stable; odd: being written */
    volatile int64_t base_real;     /* ns of the real wall clock */
    volatile int64_t base_fake;     /* ns of the process's wall clock at base_real */
    volatile double rate;           /* fake wall seconds per real second */
    volatile int64_t mono_base_real; /* ns of the real CLOCK_MONOTONIC */
    volatile int64_t mono_base_fake; /* ns of the process's CLOCK_MONOTONIC at mono_base_real */
    volatile int64_t boot_base_real; /* the same for CLOCK_BOOTTIME */
    volatile int64_t boot_base_fake;
    volatile double mono_rate;      /* fake monotonic seconds per real second (0: never set) */
};

/* A consistent copy of the control file, or of what the real clocks are (valid == 0). */
struct snapshot {
    int valid;
    int64_t base[2], fake[2];
    double rate;
};

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*clock_nanosleep_fn)(clockid_t, int, const struct timespec *, struct timespec *);
typedef int (*cond_timedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*cond_clockwait_fn)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
typedef int (*sem_timedwait_fn)(sem_t *, const struct timespec *);
typedef int (*sem_clockwait_fn)(sem_t *, clockid_t, const struct timespec *);

static clock_gettime_fn real_clock_gettime;
static clock_nanosleep_fn real_clock_nanosleep;
static cond_timedwait_fn real_cond_timedwait;
static cond_clockwait_fn real_cond_clockwait;
static sem_timedwait_fn real_sem_timedwait;
static sem_clockwait_fn real_sem_clockwait;
static const struct control *control;
static size_t control_size;
static int initialized;
/* The last reading returned of each monotonic clock (MONOTONIC, MONOTONIC_COARSE, BOOTTIME):
 * a rate change racing with a reading must not make the clock go back, even by a nanosecond. */
static int64_t last_mono[3];

static void init(void) {
    real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    real_clock_nanosleep = (clock_nanosleep_fn)dlsym(RTLD_NEXT, "clock_nanosleep");
    /* the current condition variables (dlsym alone finds glibc's pre-2.3.2 compatibility ones) */
    real_cond_timedwait = (cond_timedwait_fn)dlvsym(RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2");
    if (real_cond_timedwait == NULL)
        real_cond_timedwait = (cond_timedwait_fn)dlsym(RTLD_NEXT, "pthread_cond_timedwait");
    real_cond_clockwait = (cond_clockwait_fn)dlsym(RTLD_NEXT, "pthread_cond_clockwait");
    real_sem_timedwait = (sem_timedwait_fn)dlsym(RTLD_NEXT, "sem_timedwait");
    real_sem_clockwait = (sem_clockwait_fn)dlsym(RTLD_NEXT, "sem_clockwait");
    const char *path = getenv("RILL_CHAOS_CLOCK");
    if (path != NULL) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            off_t size = lseek(fd, 0, SEEK_END);
            /* a file of the first layout (wall clock only) is still used for the wall clock */
            size_t mapped = size >= (off_t)sizeof(struct control) ? sizeof(struct control)
                : size >= (off_t)offsetof(struct control, mono_base_real) ? offsetof(struct control, mono_base_real)
                : 0;
            void *map = mapped ? mmap(NULL, mapped, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
            close(fd);
            if (map != MAP_FAILED) {
                control = (const struct control *)map;
                control_size = mapped;
            }
        }
    }
    __atomic_store_n(&initialized, 1, __ATOMIC_RELEASE);
}

static void ensure_init(void) {
    if (!__atomic_load_n(&initialized, __ATOMIC_ACQUIRE)) init();
}

static int is_wall(clockid_t id) {
    return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE;
}

/* Which monotonic clock: 0 MONOTONIC, 1 MONOTONIC_COARSE, 2 BOOTTIME; -1 none we fake. */
static int mono_index(clockid_t id) {
    return id == CLOCK_MONOTONIC ? 0 : id == CLOCK_MONOTONIC_COARSE ? 1 : id == CLOCK_BOOTTIME ? 2 : -1;
}

/* The last parameters read of the wall clock, CLOCK_MONOTONIC(_COARSE), CLOCK_BOOTTIME, per
 * thread: what a reader uses if the lab stopped in the middle of a write (it was killed). */
static __thread struct snapshot last_read[3];

/* The control file's parameters for clock `id`, read under the seqlock. A reader finding a write
 * under way waits for it (the lab, a Python process, takes microseconds to write the fields): the
 * real clock instead would make a clock the lab moved jump back to real time for one reading. */
static struct snapshot read_control(clockid_t id) {
    struct snapshot s = {0, {0, 0}, {0, 0}, 0.0};
    int mono = mono_index(id) >= 0;
    if (control == NULL || (!mono && !is_wall(id)) || (mono && control_size < sizeof(struct control)))
        return s;
    int kind = !mono ? 0 : id == CLOCK_BOOTTIME ? 2 : 1;
    for (long tries = 0; tries < 100000; tries++) {
        uint64_t seq = __atomic_load_n(&control->seq, __ATOMIC_ACQUIRE);
        if (seq & 1) {
            if (tries > 100) sched_yield();
            continue;
        }
        struct snapshot read = {1, {0, 0}, {0, 0}, 0.0};
        if (mono) {
            int boot = id == CLOCK_BOOTTIME;
            read.base[0] = boot ? control->boot_base_real : control->mono_base_real;
            read.fake[0] = boot ? control->boot_base_fake : control->mono_base_fake;
            read.rate = control->mono_rate;
        } else {
            read.base[0] = control->base_real;
            read.fake[0] = control->base_fake;
            read.rate = control->rate;
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&control->seq, __ATOMIC_RELAXED) != seq) continue;
        if (seq == 0 || read.rate <= 0.0) read = s; /* never written */
        last_read[kind] = read;
        return read;
    }
    return last_read[kind];
}

static int64_t apply(const struct snapshot *s, int64_t real) {
    return s->valid ? s->fake[0] + (int64_t)((double)(real - s->base[0]) * s->rate) : real;
}

static int64_t never_back(int index, int64_t ns) {
    int64_t last = __atomic_load_n(&last_mono[index], __ATOMIC_RELAXED);
    while (ns > last) {
        if (__atomic_compare_exchange_n(&last_mono[index], &last, ns, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return ns;
    }
    return ns > last ? ns : last;
}

static int64_t to_ns(const struct timespec *ts) {
    return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static struct timespec from_ns(int64_t ns) {
    struct timespec ts;
    if (ns < 0) ns = 0;
    ts.tv_sec = ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    return ts;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    ensure_init();
    int rc = real_clock_gettime(id, ts);
    if (rc != 0) return rc;
    struct snapshot s = read_control(id);
    int index = mono_index(id);
    /* monotonic readings go through never_back from the start: the first rate the lab sets
     * starts from its own reading of the real clock, which a reading here may have passed */
    if (!s.valid && (index < 0 || control == NULL)) return rc;
    int64_t ns = apply(&s, to_ns(ts));
    if (index >= 0) ns = never_back(index, ns);
    *ts = from_ns(ns);
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

/* A deadline the process computed on its faked clock `id`, as a deadline of the real clock with
 * the same time left: the wait lasts what the process meant, in real time. `*out` is left alone
 * (and 0 returned) when the clock is not faked. */
static int real_deadline(clockid_t id, const struct timespec *deadline, struct timespec *out) {
    ensure_init();
    if (deadline == NULL) return 0;
    struct snapshot s = read_control(id);
    if (!s.valid) return 0;
    struct timespec now;
    if (real_clock_gettime(id, &now) != 0) return 0;
    int64_t real_now = to_ns(&now);
    *out = from_ns(real_now + (to_ns(deadline) - apply(&s, real_now)));
    return 1;
}

int clock_nanosleep(clockid_t id, int flags, const struct timespec *request, struct timespec *remain) {
    struct timespec moved;
    if ((flags & TIMER_ABSTIME) && real_deadline(id, request, &moved))
        return real_clock_nanosleep(id, flags, &moved, remain);
    ensure_init();
    return real_clock_nanosleep(id, flags, request, remain);
}

/* glibc keeps a condition variable's clock in bit 1 of __wrefs (nptl/pthread_cond_common.c). */
static clockid_t cond_clock(const pthread_cond_t *cond) {
    return (__atomic_load_n(&cond->__data.__wrefs, __ATOMIC_RELAXED) & 2) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *deadline) {
    struct timespec moved;
    if (real_deadline(cond_clock(cond), deadline, &moved)) return real_cond_timedwait(cond, mutex, &moved);
    return real_cond_timedwait(cond, mutex, deadline);
}

int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t id,
                           const struct timespec *deadline) {
    struct timespec moved;
    if (real_deadline(id, deadline, &moved)) return real_cond_clockwait(cond, mutex, id, &moved);
    if (real_cond_clockwait == NULL) return EINVAL;
    return real_cond_clockwait(cond, mutex, id, deadline);
}

int sem_timedwait(sem_t *sem, const struct timespec *deadline) {
    struct timespec moved;
    if (real_deadline(CLOCK_REALTIME, deadline, &moved)) return real_sem_timedwait(sem, &moved);
    return real_sem_timedwait(sem, deadline);
}

int sem_clockwait(sem_t *sem, clockid_t id, const struct timespec *deadline) {
    struct timespec moved;
    if (real_deadline(id, deadline, &moved)) return real_sem_clockwait(sem, id, &moved);
    if (real_sem_clockwait == NULL) {
        errno = EINVAL;
        return -1;
    }
    return real_sem_clockwait(sem, id, deadline);
}
