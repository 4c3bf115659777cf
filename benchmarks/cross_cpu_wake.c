/*
 * cross_cpu_wake.c: what one thread waking another costs on this machine, when
 * the two run on the same CPU and when they may not.  Two threads hand a turn
 * back and forth 200,000 times through futexes (wake the other, then sleep
 * until woken), as a Python caller hands the GIL-side turn to the next one.
 * Prints CPU time (user + system, both threads) and wall time per hand-off,
 * and voluntary context switches per hand-off.
 *
 *     cc -O2 -pthread benchmarks/cross_cpu_wake.c -o /tmp/cross_cpu_wake
 *     /tmp/cross_cpu_wake                 # the scheduler places the threads
 *     taskset -c 0 /tmp/cross_cpu_wake    # both on CPU 0
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HANDOFFS 200000

static _Atomic int turn[2];

static void sleep_until_woken(int i) {
  while (!atomic_exchange(&turn[i], 0))
    syscall(SYS_futex, &turn[i], FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

static void wake(int i) {
  atomic_store(&turn[i], 1);
  syscall(SYS_futex, &turn[i], FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *other(void *arg) {
  (void)arg;
  for (int k = 0; k < HANDOFFS / 2; k++) {
    sleep_until_woken(1);
    wake(0);
  }
  return NULL;
}

static double us(struct timeval t) { return t.tv_sec * 1e6 + t.tv_usec; }

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, other, NULL);
  struct rusage a, b;
  struct timespec s, e;
  getrusage(RUSAGE_SELF, &a);
  clock_gettime(CLOCK_MONOTONIC, &s);
  for (int k = 0; k < HANDOFFS / 2; k++) {
    wake(1);
    sleep_until_woken(0);
  }
  pthread_join(t, NULL);
  clock_gettime(CLOCK_MONOTONIC, &e);
  getrusage(RUSAGE_SELF, &b);
  double cpu = us(b.ru_utime) - us(a.ru_utime) + us(b.ru_stime) - us(a.ru_stime);
  double wall = ((e.tv_sec - s.tv_sec) * 1e9 + (e.tv_nsec - s.tv_nsec)) / 1e3;
  printf("per hand-off: cpu %.2f us, wall %.2f us, voluntary switches %.2f\n",
         cpu / HANDOFFS, wall / HANDOFFS, (double)(b.ru_nvcsw - a.ru_nvcsw) / HANDOFFS);
  return 0;
}
