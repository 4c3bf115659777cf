/* tri_lookup.c: a host name looked up on a thread of its own (tri_lookup.h). */
#include "tri_lookup.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "tri_dial.h"
#include "tri_error.h"
#include "tri_mem.h"
#include "tri_thread.h"

struct tri_lookup {
  atomic_int refs;  /* the owner and the thread: 2, then 1, then freed */
  atomic_int done;  /* the thread has answered (rv, res, errstr are set) */
  int fd;           /* eventfd, written once when done */
  int rv;           /* tri_dial_resolve's result */
  struct addrinfo *res; /* the answer, until taken */
  char errstr[256];
  char *host, *port; /* copies, in the same block as this struct */
};

static void unref(tri_lookup *l) {
  if (atomic_fetch_sub(&l->refs, 1) != 1) return;
  if (l->res) freeaddrinfo(l->res);
  close(l->fd);
  tri_mem_free(l);
}

static void *lookup_main(void *arg) {
  tri_lookup *l = arg;
  l->rv = tri_dial_resolve(l->host, l->port, &l->res, l->errstr, sizeof(l->errstr));
  atomic_store(&l->done, 1);
  uint64_t one = 1;
  ssize_t w = write(l->fd, &one, sizeof(one));
  (void)w; /* an eventfd's counter cannot overflow from one write */
  unref(l);
  return NULL;
}

int tri_lookup_start(tri_lookup **out, const char *host, const char *port) {
  size_t hn = strlen(host) + 1, pn = strlen(port) + 1;
  tri_lookup *l = tri_mem_alloc(NULL, sizeof(*l) + hn + pn);
  if (!l) return TRI_ERR_NOMEM;
  memset(l, 0, sizeof(*l));
  l->host = (char *)(l + 1);
  l->port = l->host + hn;
  memcpy(l->host, host, hn);
  memcpy(l->port, port, pn);
  atomic_init(&l->refs, 2);
  l->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (l->fd < 0) {
    tri_mem_free(l);
    return TRI_ERR_SYSTEM;
  }
  pthread_t t;
  /* Joinable until named (tri_thread_create names it after it may have
   * ended), then detached: nobody joins it. */
  int rv = tri_thread_create(&t, "tri-lookup", lookup_main, l);
  if (rv == 0) pthread_detach(t);
  if (rv) {
    close(l->fd);
    tri_mem_free(l);
    return TRI_ERR_SYSTEM;
  }
  *out = l;
  return 0;
}

int tri_lookup_fd(const tri_lookup *l) { return l->fd; }

int tri_lookup_take(tri_lookup *l, struct addrinfo **res, char *errstr, size_t errlen) {
  *res = NULL;
  if (!atomic_load(&l->done)) {
    snprintf(errstr, errlen, "name look-up of %s:%s not answered yet", l->host, l->port);
    return TRI_ERR_SYSTEM;
  }
  if (l->rv) {
    snprintf(errstr, errlen, "%s", l->errstr);
    return l->rv;
  }
  *res = l->res;
  l->res = NULL;
  return 0;
}

void tri_lookup_drop(tri_lookup *l) {
  if (l) unref(l);
}
