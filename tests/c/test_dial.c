/* test_dial.c: every address is tried, attempts race, the first to connect wins.
 * Loopback only: listeners of this test on 127.0.0.1, and a port nobody listens on. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "tri_dial.h"
#include "tri_error.h"
#include "tri_test.h"

/* A listening socket on 127.0.0.1 (port in *sa); or, closed, a port that refuses. */
static int listener(struct sockaddr_in *sa, int keep_listening) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  memset(sa, 0, sizeof(*sa));
  sa->sin_family = AF_INET;
  sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(*sa);
  CHECK_EQ_INT(bind(fd, (struct sockaddr *)sa, len), 0);
  CHECK_EQ_INT(listen(fd, 8), 0);
  getsockname(fd, (struct sockaddr *)sa, &len);
  if (!keep_listening) {
    close(fd);
    return -1;
  }
  return fd;
}

static void link_addrs(struct addrinfo *ai, struct sockaddr_in *sa, int n) {
  for (int i = 0; i < n; i++) {
    memset(&ai[i], 0, sizeof(ai[i]));
    ai[i].ai_family = AF_INET;
    ai[i].ai_socktype = SOCK_STREAM;
    ai[i].ai_addr = (struct sockaddr *)&sa[i];
    ai[i].ai_addrlen = sizeof(sa[i]);
    ai[i].ai_next = i + 1 < n ? &ai[i + 1] : NULL;
  }
}

/* Polls the attempts until one connects (its fd) or every address failed (-1). */
static int run_dial(tri_dial *d) {
  int fd = tri_dial_next(d, 0);
  for (int rounds = 0; rounds < 100 && tri_dial_pending(d); rounds++) {
    struct pollfd p[TRI_DIAL_MAX];
    int n = 0;
    for (int i = 0; i < TRI_DIAL_MAX; i++)
      if (d->fds[i] >= 0) p[n++] = (struct pollfd){.fd = d->fds[i], .events = POLLOUT};
    CHECK(poll(p, (nfds_t)n, 5000) > 0);
    for (int i = 0; i < n; i++) {
      if (!p[i].revents) continue;
      int rv = tri_dial_ready(d, p[i].fd);
      if (rv == 1) return p[i].fd;
      CHECK_EQ_INT(rv, 0);
      if (!tri_dial_pending(d)) fd = tri_dial_next(d, 0);
    }
  }
  (void)fd;
  return -1;
}

static int peer_port(int fd) {
  struct sockaddr_in sa;
  socklen_t len = sizeof(sa);
  getpeername(fd, (struct sockaddr *)&sa, &len);
  return ntohs(sa.sin_port);
}

/* The first address refuses (as ::1 does when the server listens on 127.0.0.1
 * only): the second is tried and connects. */
static void refused_first_then_next(void) {
  struct sockaddr_in sa[2];
  struct addrinfo ai[2];
  listener(&sa[0], 0);
  int srv = listener(&sa[1], 1);
  link_addrs(ai, sa, 2);
  tri_dial d;
  tri_dial_begin_list(&d, ai);
  int fd = run_dial(&d);
  CHECK(fd >= 0);
  CHECK_EQ_INT(peer_port(fd), ntohs(sa[1].sin_port));
  CHECK_EQ_INT(d.tried, 2);
  CHECK_EQ_INT(tri_dial_pending(&d), 0);
  close(fd);
  tri_dial_end(&d);
  close(srv);
}

/* Every address refuses: the dial fails with the error, having tried all. */
static void all_refused(void) {
  struct sockaddr_in sa[3];
  struct addrinfo ai[3];
  for (int i = 0; i < 3; i++) listener(&sa[i], 0);
  link_addrs(ai, sa, 3);
  tri_dial d;
  tri_dial_begin_list(&d, ai);
  CHECK_EQ_INT(run_dial(&d), -1);
  CHECK_EQ_INT(d.tried, 3);
  CHECK_EQ_INT(tri_dial_error(&d), ECONNREFUSED);
  CHECK_EQ_INT(tri_dial_next_at(&d), 0); /* nothing left to start */
  tri_dial_end(&d);
}

/* While an attempt is in flight and addresses remain, the next one is due
 * TRI_DIAL_DELAY_NS after it started; started then, both race and the winner
 * closes the loser. */
static void attempts_race(void) {
  struct sockaddr_in sa[2];
  struct addrinfo ai[2];
  int srv0 = listener(&sa[0], 1), srv1 = listener(&sa[1], 1);
  link_addrs(ai, sa, 2);
  tri_dial d;
  tri_dial_begin_list(&d, ai);
  int a = tri_dial_next(&d, 1000);
  CHECK(a >= 0);
  if (tri_dial_pending(&d) == 1) { /* in flight (not connected within connect()) */
    CHECK_EQ_INT(tri_dial_next_at(&d), 1000 + TRI_DIAL_DELAY_NS);
  }
  int b = tri_dial_next(&d, 1000 + TRI_DIAL_DELAY_NS);
  CHECK(b >= 0 && b != a);
  CHECK_EQ_INT(tri_dial_pending(&d), 2);
  CHECK_EQ_INT(tri_dial_next_at(&d), 0); /* no address left */
  struct pollfd p = {.fd = b, .events = POLLOUT};
  CHECK_EQ_INT(poll(&p, 1, 5000), 1);
  CHECK_EQ_INT(tri_dial_ready(&d, b), 1);
  CHECK_EQ_INT(tri_dial_pending(&d), 0); /* the other attempt was closed */
  CHECK_EQ_INT(tri_dial_ready(&d, a), -1);
  CHECK_EQ_INT(peer_port(b), ntohs(sa[1].sin_port));
  close(b);
  tri_dial_end(&d);
  close(srv0);
  close(srv1);
}

/* unix: and unix-abstract: targets: a path and an abstract name connect to
 * listeners of this test; a path too long for sockaddr_un is refused up front. */
static void unix_sockets(void) {
  char dir[] = "/tmp/tri-dial-XXXXXX", path[64], err[128];
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof(path), "%s/s", dir);
  for (int abstract = 0; abstract <= 1; abstract++) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    socklen_t len;
    if (abstract) {
      snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "tri-dial-%d", (int)getpid());
      len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa.sun_path + 1));
    } else {
      snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
      len = sizeof(sa);
    }
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK_EQ_INT(bind(lfd, (struct sockaddr *)&sa, len), 0);
    CHECK_EQ_INT(listen(lfd, 4), 0);
    tri_dial d;
    CHECK_EQ_INT(tri_dial_begin_unix(&d, abstract ? sa.sun_path + 1 : path, abstract, err,
                                     sizeof(err)),
                 0);
    int fd = run_dial(&d);
    CHECK(fd >= 0);
    int peer = accept(lfd, NULL, NULL);
    CHECK(peer >= 0);
    close(peer);
    close(fd);
    close(lfd);
    tri_dial_end(&d);
  }
  unlink(path);
  rmdir(dir);
  char long_path[200];
  memset(long_path, 'x', sizeof(long_path) - 1);
  long_path[sizeof(long_path) - 1] = 0;
  tri_dial d;
  CHECK_EQ_INT(tri_dial_begin_unix(&d, long_path, 0, err, sizeof(err)), TRI_ERR_RESOLVE);
  CHECK(strstr(err, "unix socket path") != NULL);
  tri_dial_end(&d);
}

void test_dial(void) {
  refused_first_then_next();
  all_refused();
  attempts_race();
  unix_sockets();
}
