/* Time every ioctl(2) a process makes (issue 27). LD_PRELOAD this library and each process
 * keeps, in four counters, how many ioctls its threads made and how long they took (all, and
 * those on the NVIDIA driver's files: the ones the driver's host-wide lock serialises).
 * Python reads them with ctypes (caiconform.runner.ioctls) around each example.
 * Build: gcc -O2 -shared -fPIC -o libioctlclock.so ioctl_clock.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

unsigned long long cai_ioctl_ns = 0, cai_ioctl_n = 0;
unsigned long long cai_nv_ioctl_ns = 0, cai_nv_ioctl_n = 0;
static char nv_fd[4096];  /* 0 unknown, 1 nvidia, 2 other */

static int (*real_ioctl)(int, unsigned long, void *);

static int is_nvidia(int fd) {
    if (fd < 0 || fd >= 4096) return 0;
    char seen = __atomic_load_n(&nv_fd[fd], __ATOMIC_RELAXED);
    if (seen == 0) {
        char link[64], target[256];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        target[n > 0 ? n : 0] = 0;
        seen = strncmp(target, "/dev/nvidia", 11) == 0 ? 1 : 2;
        __atomic_store_n(&nv_fd[fd], seen, __ATOMIC_RELAXED);
    }
    return seen == 1;
}

int ioctl(int fd, unsigned long request, ...) {
    va_list ap;
    va_start(ap, request);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!real_ioctl) real_ioctl = (int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT, "ioctl");
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int r = real_ioctl(fd, request, arg);
    clock_gettime(CLOCK_MONOTONIC, &b);
    unsigned long long ns = (b.tv_sec - a.tv_sec) * 1000000000ULL + b.tv_nsec - a.tv_nsec;
    __atomic_fetch_add(&cai_ioctl_ns, ns, __ATOMIC_RELAXED);
    __atomic_fetch_add(&cai_ioctl_n, 1, __ATOMIC_RELAXED);
    if (is_nvidia(fd)) {
        __atomic_fetch_add(&cai_nv_ioctl_ns, ns, __ATOMIC_RELAXED);
        __atomic_fetch_add(&cai_nv_ioctl_n, 1, __ATOMIC_RELAXED);
    }
    return r;
}
