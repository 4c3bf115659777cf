/*
 * tri_lookup: a host name looked up on a thread of its own.
 *
 * getaddrinfo blocks for as long as the name service takes (a DNS server
 * that does not answer: seconds).  A connection on a driven loop (tri_loop.h)
 * runs on the thread of a language's event loop, where that wait would stall
 * every other task, so it looks the name up here instead: tri_lookup_start
 * starts a short-lived thread ("tri-lookup") that calls tri_dial_resolve and
 * then makes the look-up's descriptor readable.  The owner watches that
 * descriptor with its other events and takes the answer when it is readable.
 *
 * Ownership: a look-up is shared by its owner and its thread.  The owner
 * lets go with tri_lookup_drop, before or after the answer; the thread lets go
 * when it has answered; whichever is last frees the look-up (and an answer
 * nobody took).  So an owner never waits for the name service, and a thread
 * that answers after its owner is gone touches nothing but the look-up.
 * One owner thread uses a look-up; `host` and `port` are copied.
 */
#ifndef TRI_LOOKUP_H
#define TRI_LOOKUP_H

#include <netdb.h>
#include <stddef.h>

typedef struct tri_lookup tri_lookup;

/* Starts looking up host:port (TCP).  Returns 0 and the look-up in *out, or
 * TRI_ERR_NOMEM / TRI_ERR_SYSTEM (no memory, descriptor or thread). */
int tri_lookup_start(tri_lookup **out, const char *host, const char *port);

/* The descriptor that becomes readable once the answer is in.  The look-up
 * owns it: remove it from any epoll set before tri_lookup_drop. */
int tri_lookup_fd(const tri_lookup *l);

/* Once tri_lookup_fd is readable (earlier it returns TRI_ERR_SYSTEM as if
 * nothing was asked): 0 and the address list in *res (the caller's), or
 * TRI_ERR_RESOLVE with the reason in errstr.  The answer is taken once. */
int tri_lookup_take(tri_lookup *l, struct addrinfo **res, char *errstr, size_t errlen);

/* The owner lets go (NULL is ignored); l is not used after this. */
void tri_lookup_drop(tri_lookup *l);

#endif
