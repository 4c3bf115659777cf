/* tri_dial.c: happy-eyeballs connection attempts (see tri_dial.h). */
#include "tri_dial.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tri_error.h"

void tri_dial_init(tri_dial *d) {
  memset(d, 0, sizeof(*d));
  for (int i = 0; i < TRI_DIAL_MAX; i++) d->fds[i] = -1;
}

int tri_dial_is_ip(const char *host) {
  unsigned char a[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

_Atomic int tri_dial_test_resolve_delay_ms;

int tri_dial_resolve(const char *host, const char *port, struct addrinfo **res,
                     char *errstr, size_t errlen) {
  struct addrinfo hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  *res = NULL;
  int delay = tri_dial_test_resolve_delay_ms;
  if (delay > 0) {
    struct timespec ts = {delay / 1000, (long)(delay % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  int rv = getaddrinfo(host, port, &hints, res);
  if (rv != 0) {
    snprintf(errstr, errlen, "failed to resolve %s:%s: %s", host, port, gai_strerror(rv));
    *res = NULL;
    return TRI_ERR_RESOLVE;
  }
  return 0;
}

int tri_dial_begin(tri_dial *d, const char *host, const char *port, char *errstr,
                   size_t errlen) {
  struct addrinfo *res;
  tri_dial_init(d);
  int rv = tri_dial_resolve(host, port, &res, errstr, errlen);
  if (rv) return rv;
  tri_dial_begin_owned(d, res);
  return 0;
}

void tri_dial_begin_owned(tri_dial *d, struct addrinfo *res) {
  tri_dial_init(d);
  d->res = d->next = res;
  d->own_res = 1;
}

int tri_dial_begin_unix(tri_dial *d, const char *path, int abstract, char *errstr,
                        size_t errlen) {
  tri_dial_init(d);
  size_t n = strlen(path), off = abstract ? 1 : 0;
  if (n == 0 || n + off >= sizeof(d->unix_sa.sun_path)) {
    snprintf(errstr, errlen, "unix socket path of %zu bytes: must be 1 to %zu", n,
             sizeof(d->unix_sa.sun_path) - 1 - off);
    return TRI_ERR_RESOLVE;
  }
  d->unix_sa.sun_family = AF_UNIX;
  memcpy(d->unix_sa.sun_path + off, path, n); /* abstract: sun_path[0] stays NUL */
  d->unix_ai.ai_family = AF_UNIX;
  d->unix_ai.ai_socktype = SOCK_STREAM;
  d->unix_ai.ai_addr = (struct sockaddr *)&d->unix_sa;
  /* The abstract name's length counts exactly: no trailing NUL. */
  d->unix_ai.ai_addrlen =
      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + off + n + (abstract ? 0 : 1));
  d->res = d->next = &d->unix_ai;
  return 0;
}

void tri_dial_begin_list(tri_dial *d, struct addrinfo *list) {
  tri_dial_init(d);
  d->res = d->next = list;
}

int tri_dial_pending(const tri_dial *d) {
  int n = 0;
  for (int i = 0; i < TRI_DIAL_MAX; i++) n += d->fds[i] >= 0;
  return n;
}

static int free_slot(const tri_dial *d) {
  for (int i = 0; i < TRI_DIAL_MAX; i++)
    if (d->fds[i] < 0) return i;
  return -1;
}

int tri_dial_next(tri_dial *d, int64_t now) {
  int slot = free_slot(d);
  while (slot >= 0 && d->next) {
    struct addrinfo *a = d->next;
    d->next = a->ai_next;
    d->tried++;
    int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      d->err = errno;
      continue;
    }
    int one = 1;
    if (a->ai_family != AF_UNIX) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS) {
      d->err = errno; /* refused at once: on to the next address */
      close(fd);
      continue;
    }
    d->fds[slot] = fd;
    d->started = now;
    return fd;
  }
  return -1;
}

int64_t tri_dial_next_at(const tri_dial *d) {
  if (!d->next || free_slot(d) < 0 || !tri_dial_pending(d)) return 0;
  return d->started + TRI_DIAL_DELAY_NS;
}

int tri_dial_ready(tri_dial *d, int fd) {
  int slot = -1;
  for (int i = 0; i < TRI_DIAL_MAX; i++)
    if (d->fds[i] == fd) slot = i;
  if (slot < 0) return -1;
  d->fds[slot] = -1;
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) err = errno;
  if (err) {
    d->err = err;
    close(fd);
    return 0;
  }
  for (int i = 0; i < TRI_DIAL_MAX; i++) { /* the others lost the race */
    if (d->fds[i] >= 0) close(d->fds[i]);
    d->fds[i] = -1;
  }
  return 1;
}

int tri_dial_error(const tri_dial *d) { return d->err; }

void tri_dial_end(tri_dial *d) {
  for (int i = 0; i < TRI_DIAL_MAX; i++) {
    if (d->fds[i] >= 0) close(d->fds[i]);
    d->fds[i] = -1;
  }
  if (d->own_res && d->res) freeaddrinfo(d->res);
  d->res = d->next = NULL;
  d->own_res = 0;
}
