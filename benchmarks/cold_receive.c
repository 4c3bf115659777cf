/*
 * cold_receive.c: what keeping a received megabyte costs on this machine,
 * against reading it through a small buffer and keeping nothing.
 *
 * A writer thread sends 1 MiB messages over a loopback TCP connection; the
 * reader receives them in one of three ways, in interleaved rounds:
 *
 *   warm      the reads go into one 64 KiB buffer in turn, which stays in
 *             cache: what the C load generator does (it checks a response's
 *             length and status and keeps no body);
 *   keep N    each message is received into a 1 MiB buffer of its own, N of
 *             them in rotation, 16 KiB at a time across the N (as a server
 *             that sends its N responses' frames in turn is read by a client
 *             that keeps every body: 50 calls in flight keep 50);
 *   keep N huge   the same, the buffers advised for transparent huge pages.
 *
 * Every way reads 16 KiB at a time, so they make the same system calls and
 * differ only in where the bytes land.  It prints the reader thread's CPU time (user + system) per MiB received for
 * each way, the median over rounds, and what keeping costs over `warm`.  The
 * writer's CPU is not counted.  Loopback only.
 *
 *     cc -O2 -pthread benchmarks/cold_receive.c -o /tmp/cold_receive
 *     /tmp/cold_receive [rounds] [messages per round]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)
#define CHUNK ((size_t)16 << 10) /* one HTTP/2 DATA frame of grpc-go */
#define WARM ((size_t)64 << 10)
#define HUGE_PAGE ((size_t)2 << 20)
#define MAX_KEEP 64

static int rx, tx;
static long total_messages;

/* Sends total_messages messages of 1 MiB, then closes its end. */
static void *writer(void *arg) {
  (void)arg;
  char *src = malloc(MIB);
  memset(src, 7, MIB);
  for (long m = 0; m < total_messages; m++)
    for (size_t off = 0; off < MIB;) {
      ssize_t n = write(tx, src + off, MIB - off);
      if (n <= 0) goto out;
      off += (size_t)n;
    }
out:
  free(src);
  close(tx);
  return NULL;
}

/* Reads exactly `len` bytes into `dst`. */
static int receive(char *dst, size_t len) {
  for (size_t off = 0; off < len;) {
    ssize_t n = read(rx, dst + off, len - off);
    if (n <= 0) return -1;
    off += (size_t)n;
  }
  return 0;
}

static double thread_cpu_us(void) {
  struct rusage r;
  getrusage(RUSAGE_THREAD, &r);
  return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e6 + r.ru_utime.tv_usec +
         r.ru_stime.tv_usec;
}

static char *keep_buffers(int n, int huge) {
  size_t each = HUGE_PAGE; /* one 2 MiB-aligned slot per message */
  char *p = NULL;
  if (posix_memalign((void **)&p, HUGE_PAGE, each * (size_t)n)) return NULL;
  madvise(p, each * (size_t)n, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  memset(p, 0, each * (size_t)n); /* faulted in once, before any round */
  return p;
}

/* Receives `messages` messages the given way; returns reader CPU us per MiB. */
static double run(const char *way, char *keep, int n, char *warm, long messages) {
  double t0 = thread_cpu_us();
  if (strcmp(way, "warm") == 0) { /* the same 16 KiB reads, into 64 KiB in turn */
    for (long m = 0; m < messages; m++)
      for (size_t off = 0; off < MIB; off += CHUNK)
        if (receive(warm + off % WARM, CHUNK)) return -1;
  } else {
    for (long m = 0; m < messages; m += n) /* n messages in turn, a chunk each */
      for (size_t off = 0; off < MIB; off += CHUNK)
        for (int k = 0; k < n; k++)
          if (receive(keep + (size_t)k * HUGE_PAGE + off, CHUNK)) return -1;
  }
  return (thread_cpu_us() - t0) / (double)messages;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 9;
  long per = argc > 2 ? atol(argv[2]) : 1000;
  enum { WAYS = 4 };
  const char *names[WAYS] = {"warm", "keep 8", "keep 50", "keep 50 huge"};
  int keep_n[WAYS] = {0, 8, 50, 50}, huge[WAYS] = {0, 0, 0, 1};
  if (rounds < 1 || rounds > 99 || per < 50 || per % 200 != 0) {
    fprintf(stderr, "rounds 1-99, messages per round a multiple of 200\n");
    return 2;
  }
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1) ||
      getsockname(ls, (struct sockaddr *)&a, &alen))
    return perror("listen"), 1;
  tx = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(tx, (struct sockaddr *)&a, sizeof(a))) return perror("connect"), 1;
  rx = accept(ls, NULL, NULL);
  close(ls);
  total_messages = (long)rounds * WAYS * per;
  char *warm = malloc(WARM), *keep[WAYS];
  memset(warm, 0, WARM);
  for (int w = 0; w < WAYS; w++)
    if (keep_n[w] && !(keep[w] = keep_buffers(keep_n[w], huge[w]))) return 1;
  pthread_t t;
  pthread_create(&t, NULL, writer, NULL);
  double us[WAYS][99];
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < WAYS; i++) {
      int w = (i + r) % WAYS; /* each way takes every position in turn */
      us[w][r] = run(names[w], keep[w], keep_n[w], warm, per);
      if (us[w][r] < 0) return fprintf(stderr, "short read\n"), 1;
    }
  pthread_join(t, NULL);
  printf("# %d rounds x %ld messages of 1 MiB per way, loopback TCP, reader CPU us per MiB\n",
         rounds, per);
  double warm_median = 0;
  for (int w = 0; w < WAYS; w++) {
    printf("%-13s", names[w]);
    for (int r = 0; r < rounds; r++) printf(" %6.1f", us[w][r]);
    qsort(us[w], (size_t)rounds, sizeof(double), cmp);
    double median = us[w][rounds / 2];
    if (w == 0) warm_median = median;
    printf("   min %6.1f  median %6.1f  over warm %+6.1f\n", us[w][0], median,
           median - warm_median);
  }
  return 0;
}
