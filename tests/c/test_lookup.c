/* tri_lookup: a host name looked up on a thread of its own, and a driven
 * loop's connection that waits for it without blocking the loop's turns. */
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tri_call.h"
#include "tri_channel.h"
#include "tri_dial.h"
#include "tri_error.h"
#include "tri_lookup.h"
#include "tri_loop.h"
#include "tri_server.h"
#include "tri_test.h"
#include "loopback.h"
#include "tri_wire.h"

#define WAIT_MS 10000

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int answered(const tri_lookup *l, int timeout_ms) {
  struct pollfd p = {.fd = tri_lookup_fd(l), .events = POLLIN};
  return poll(&p, 1, timeout_ms) == 1;
}

static int open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

/* Look-up threads still running ("tri-lookup": named before tri_lookup_start
 * returns, gone only after the thread has let go of its look-up). */
static int lookup_threads(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char path[300], name[32] = "";
    snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (fgets(name, sizeof(name), f) && strncmp(name, "tri-lookup", 10) == 0) n++;
    fclose(f);
  }
  if (d) closedir(d);
  return n;
}

/* Waits (bounded) until every look-up thread has ended, so that every look-up
 * dropped so far is freed, its descriptor closed. */
static void lookups_ended(void) {
  int64_t end = now_ms() + WAIT_MS;
  while (lookup_threads() && now_ms() < end) poll(NULL, 0, 5);
  CHECK_EQ_INT(lookup_threads(), 0);
}

static int port_of(const struct addrinfo *a) {
  if (a->ai_family == AF_INET) return ntohs(((struct sockaddr_in *)a->ai_addr)->sin_port);
  if (a->ai_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)a->ai_addr)->sin6_port);
  return -1;
}

/* localhost comes from the hosts file: no name server is asked. */
static void answers_a_name(void) {
  tri_lookup *l;
  CHECK_EQ_INT(tri_lookup_start(&l, "localhost", "8080"), 0);
  CHECK(answered(l, WAIT_MS));
  struct addrinfo *res = NULL;
  char err[256] = "";
  CHECK_EQ_INT(tri_lookup_take(l, &res, err, sizeof(err)), 0);
  CHECK(res != NULL);
  for (struct addrinfo *a = res; a; a = a->ai_next) CHECK_EQ_INT(port_of(a), 8080);
  /* Taken once: a second take has nothing to give. */
  struct addrinfo *again = (struct addrinfo *)1;
  CHECK_EQ_INT(tri_lookup_take(l, &again, err, sizeof(err)), 0);
  CHECK(again == NULL);
  if (res) freeaddrinfo(res);
  tri_lookup_drop(l);
}

/* A service the services file does not know fails at once, with the reason. */
static void a_failure_says_why(void) {
  tri_lookup *l;
  CHECK_EQ_INT(tri_lookup_start(&l, "localhost", "no-such-service"), 0);
  CHECK(answered(l, WAIT_MS));
  struct addrinfo *res = (struct addrinfo *)1;
  char err[256] = "";
  CHECK_EQ_INT(tri_lookup_take(l, &res, err, sizeof(err)), TRI_ERR_RESOLVE);
  CHECK(res == NULL);
  CHECK(strstr(err, "failed to resolve localhost:no-such-service") != NULL);
  tri_lookup_drop(l);
}

/* A slow name server: the start returns at once, nothing is answered yet,
 * and the answer comes later. */
static void start_does_not_wait(void) {
  tri_dial_test_resolve_delay_ms = 300;
  int64_t t0 = now_ms();
  tri_lookup *l;
  CHECK_EQ_INT(tri_lookup_start(&l, "localhost", "80"), 0);
  CHECK(now_ms() - t0 < 250);
  CHECK(!answered(l, 0));
  struct addrinfo *res = NULL;
  char err[256] = "";
  CHECK_EQ_INT(tri_lookup_take(l, &res, err, sizeof(err)), TRI_ERR_SYSTEM);
  CHECK(strstr(err, "not answered yet") != NULL);
  CHECK(answered(l, WAIT_MS));
  CHECK_EQ_INT(tri_lookup_take(l, &res, err, sizeof(err)), 0);
  if (res) freeaddrinfo(res);
  tri_lookup_drop(l);
  tri_dial_test_resolve_delay_ms = 0;
}

/* Owners that let go before the answer: each thread frees its look-up when
 * it answers, descriptors included (ASan's leak check sees the memory). */
static void dropped_before_the_answer(void) {
  lookups_ended(); /* the earlier cases' threads may still be letting go */
  int before = open_fds();
  tri_dial_test_resolve_delay_ms = 50;
  for (int i = 0; i < 20; i++) {
    tri_lookup *l;
    CHECK_EQ_INT(tri_lookup_start(&l, "localhost", "80"), 0);
    tri_lookup_drop(l);
  }
  lookups_ended();
  CHECK_EQ_INT(open_fds(), before);
  tri_dial_test_resolve_delay_ms = 0;
}

static tri_channel *named_channel(tri_loop *loop, const char *port, int64_t connect_ms) {
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  o.host = "localhost";
  o.port = port;
  o.io_loop = loop;
  if (connect_ms) /* the attempt's budget: the larger of the two */
    o.min_connect_timeout_ms = o.initial_reconnect_backoff_ms = (uint32_t)connect_ms;
  tri_channel *ch = NULL;
  CHECK_EQ_INT(tri_channel_new(&ch, &o), 0);
  return ch;
}

/* Turns a driven loop until `c` is done; returns the longest single turn (ms). */
static int64_t turn_until_done(tri_loop *loop, tri_call *c) {
  int64_t longest = 0, end = now_ms() + WAIT_MS;
  while (!tri_call_done(c) && now_ms() < end) {
    struct pollfd p = {.fd = tri_loop_fd(loop), .events = POLLIN};
    poll(&p, 1, 20);
    int64_t t0 = now_ms();
    tri_loop_turn(loop, 0, NULL);
    if (now_ms() - t0 > longest) longest = now_ms() - t0;
  }
  return longest;
}

/* Nonzero when the call's status message contains `needle`. */
static int message_has(const tri_call *c, const char *needle) {
  const char *p;
  size_t n;
  tri_call_message(c, &p, &n);
  char buf[512];
  snprintf(buf, sizeof(buf), "%.*s", (int)n, p ? p : "");
  return strstr(buf, needle) != NULL;
}

static tri_call *start_unary(tri_channel *ch) {
  tri_call *c = empty_unary(ch, (int64_t)WAIT_MS * 1000000);
  if (c) tri_call_start(c);
  return c;
}

/* A driven loop's connection to a host name: the loop's turns go on while the
 * name is looked up (300 ms), and the call then succeeds. */
static void driven_connection_to_a_name(void) {
  tri_server *srv = loopback_server();
  if (!srv) return;
  char port[16];
  snprintf(port, sizeof(port), "%d", tri_server_port(srv));
  tri_loop *loop;
  CHECK_EQ_INT(tri_loop_new_driven(&loop), 0);
  tri_channel *ch = named_channel(loop, port, 0);
  tri_dial_test_resolve_delay_ms = 300;
  tri_call *c = start_unary(ch);
  int64_t t0 = now_ms();
  int64_t longest = turn_until_done(loop, c);
  tri_dial_test_resolve_delay_ms = 0;
  CHECK(tri_call_done(c));
  CHECK_EQ_INT(tri_call_code(c), TRI_CODE_OK);
  CHECK(now_ms() - t0 >= 250); /* the answer was waited for... */
  CHECK(longest < 200);        /* ...by no turn */
  tri_call_release(c);
  /* A name that does not resolve: UNAVAILABLE, with the name service's reason. */
  tri_channel *bad = named_channel(loop, "no-such-service", 0);
  c = start_unary(bad);
  turn_until_done(loop, c);
  CHECK_EQ_INT(tri_call_code(c), TRI_CODE_UNAVAILABLE);
  CHECK(message_has(c, "failed to resolve localhost:no-such-service"));
  tri_call_release(c);
  tri_loop_unref(loop);
  tri_channel_del(bad);
  tri_channel_del(ch);
  tri_server_del(srv);
}

/* A look-up slower than the connect timeout: the attempt fails with the
 * stage it was in, and the look-up's late answer harms nothing. */
static void a_slow_name_meets_the_connect_timeout(void) {
  tri_loop *loop;
  CHECK_EQ_INT(tri_loop_new_driven(&loop), 0);
  tri_channel *ch = named_channel(loop, "1", 100);
  tri_dial_test_resolve_delay_ms = 1500;
  tri_call *c = start_unary(ch);
  turn_until_done(loop, c);
  tri_dial_test_resolve_delay_ms = 0;
  CHECK_EQ_INT(tri_call_code(c), TRI_CODE_UNAVAILABLE);
  CHECK(message_has(c, "(looking up the name)"));
  tri_call_release(c);
  tri_loop_unref(loop);
  tri_channel_del(ch);
}

/* The channel closed while its name is looked up: the call fails at once
 * (CANCELLED), the connection goes without waiting for the answer, and the
 * look-up's late answer frees it and its descriptor. */
static void closed_while_looking_up(void) {
  lookups_ended();
  int before = open_fds();
  tri_loop *loop;
  CHECK_EQ_INT(tri_loop_new_driven(&loop), 0);
  tri_channel *ch = named_channel(loop, "1", 0);
  tri_dial_test_resolve_delay_ms = 500;
  tri_call *c = start_unary(ch);
  tri_loop_turn(loop, 0, NULL); /* the connection starts its look-up */
  int64_t t0 = now_ms();
  tri_channel_close(ch);
  turn_until_done(loop, c);
  CHECK(tri_call_done(c));
  CHECK_EQ_INT(tri_call_code(c), TRI_CODE_CANCELLED);
  tri_call_release(c);
  tri_loop_unref(loop);
  tri_channel_del(ch); /* its connection leaves on this thread's turns */
  CHECK(now_ms() - t0 < 400); /* nobody waited for the answer */
  lookups_ended();
  CHECK_EQ_INT(open_fds(), before);
  tri_dial_test_resolve_delay_ms = 0;
}

void test_lookup(void) {
  answers_a_name();
  a_failure_says_why();
  start_does_not_wait();
  dropped_before_the_answer();
  driven_connection_to_a_name();
  a_slow_name_meets_the_connect_timeout();
  closed_while_looking_up();
}
