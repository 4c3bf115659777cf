/*
 * tri_dial: connecting to the first address of a host that answers.
 *
 * A host name can resolve to several addresses (localhost: ::1 and 127.0.0.1,
 * in that order on Debian's stock hosts file), and the first may refuse or
 * never answer while a later one serves.  A dial tries every address of the
 * getaddrinfo list in order, happy-eyeballs style (RFC 8305): the next
 * attempt starts as soon as one fails, or TRI_DIAL_DELAY_NS after the last
 * one started if it has not answered yet, with up to TRI_DIAL_MAX attempts in
 * flight; the first to connect wins and the others are closed.  The dial
 * fails only once every address has failed.
 *
 * The dial does no waiting: the caller polls the descriptors it returns
 * (writable or error means the attempt ended), calls tri_dial_ready for each,
 * and tri_dial_next when tri_dial_next_at's time has come.  Sockets are
 * non-blocking and close-on-exec, with TCP_NODELAY.
 *
 * Ownership: the dial owns the sockets in flight and the address list
 * (tri_dial_begin_list's excepted); the winning socket passes to the caller.
 * One thread (the connection's I/O thread, or its driven loop's) uses a dial.
 */
#ifndef TRI_DIAL_H
#define TRI_DIAL_H

#include <netdb.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

#define TRI_DIAL_MAX 4                          /* attempts in flight at once */
#define TRI_DIAL_DELAY_NS (250 * 1000000LL)     /* RFC 8305's attempt delay */

typedef struct tri_dial {
  struct addrinfo *res;  /* owned (getaddrinfo's, or the caller's for
                            tri_dial_begin_list): every address */
  struct addrinfo *next; /* into res: the first address not tried yet */
  int own_res;           /* res came from getaddrinfo (freeaddrinfo it) */
  int fds[TRI_DIAL_MAX]; /* attempts in flight (owned); -1: free slot */
  int64_t started;       /* when the latest attempt started (ns) */
  int tried;             /* addresses tried so far */
  int err;               /* errno of the latest failed attempt */
  struct addrinfo unix_ai;     /* tri_dial_begin_unix: the one address */
  struct sockaddr_un unix_sa;  /* ...and its socket address */
} tri_dial;

/* An empty dial (nothing to free yet). */
void tri_dial_init(tri_dial *d);

/* Nonzero when `host` is an IPv4 or IPv6 address literal (nothing to look up). */
int tri_dial_is_ip(const char *host);

/* Resolves host:port for TCP (getaddrinfo: blocks for as long as the name
 * service takes).  Returns 0 and the list in *res (the caller's: freeaddrinfo
 * or tri_dial_begin_owned), or TRI_ERR_RESOLVE with the reason in errstr. */
int tri_dial_resolve(const char *host, const char *port, struct addrinfo **res,
                     char *errstr, size_t errlen);

/* Test hook (0 by default): every tri_dial_resolve first sleeps this many ms
 * (read once, as it starts), as a slow name server would make it wait. */
extern _Atomic int tri_dial_test_resolve_delay_ms;

/* Resolves host:port (tri_dial_resolve) and dials its addresses.  Returns 0,
 * or TRI_ERR_RESOLVE with the reason in errstr. */
int tri_dial_begin(tri_dial *d, const char *host, const char *port, char *errstr,
                   size_t errlen);

/* Dials the addresses of `res`, a list resolved elsewhere (tri_lookup.h);
 * the dial owns it from now on (freed by tri_dial_end). */
void tri_dial_begin_owned(tri_dial *d, struct addrinfo *res);

/* A Unix domain socket instead (gRPC's unix: and unix-abstract: targets):
 * `path` is a file system path, or with `abstract` a name in the abstract
 * namespace (no leading NUL: it is added here).  Returns 0, or TRI_ERR_RESOLVE
 * with the reason in errstr when the path does not fit a sockaddr_un. */
int tri_dial_begin_unix(tri_dial *d, const char *path, int abstract, char *errstr,
                        size_t errlen);

/* Dials the addresses of `list` (borrowed: it must outlive the dial). */
void tri_dial_begin_list(tri_dial *d, struct addrinfo *list);

/* Starts attempts with the next addresses until one is in flight or
 * connected (an address refused at once is skipped).  Returns its socket
 * (watch it for writability), or -1 when no address is left or
 * TRI_DIAL_MAX attempts are in flight. */
int tri_dial_next(tri_dial *d, int64_t now);

/* When the next attempt should start although none ended (ns), or 0 when no
 * address is left or the attempts in flight are at the cap. */
int64_t tri_dial_next_at(const tri_dial *d);

/* The attempt on `fd` became writable or failed.  Returns 1 when it is
 * connected: `fd` is the caller's from now on, every other attempt is closed.
 * Returns 0 when it failed (its socket closed; errno kept for
 * tri_dial_error), -1 when `fd` is not an attempt of this dial. */
int tri_dial_ready(tri_dial *d, int fd);

/* Attempts in flight. */
int tri_dial_pending(const tri_dial *d);

/* errno of the last failed attempt (0: none failed). */
int tri_dial_error(const tri_dial *d);

/* Closes the attempts in flight and frees the address list.  Idempotent. */
void tri_dial_end(tri_dial *d);

#endif
