/*
 * tri_error: the one error enum of the C core.
 *
 * Every fallible function returns 0 (or a count) on success and a negative
 * TRI_ERR_* on failure.  Codes at or below TRI_ERR_FATAL mean the object that
 * returned them (a connection, usually) can only be torn down.  Objects that
 * fail keep a human-readable cause next to the code (see tri_conn's errstr).
 */
#ifndef TRI_ERROR_H
#define TRI_ERROR_H

typedef enum {
  TRI_OK = 0,
  TRI_ERR_INVALID = -501,     /* bad argument from the caller */
  TRI_ERR_NOMEM = -502,       /* an allocation failed */
  TRI_ERR_TOO_LARGE = -503,   /* a message is over a configured size limit */
  TRI_ERR_FRAME = -504,       /* malformed length-prefixed envelope */
  TRI_ERR_CLOSED = -505,      /* the channel or call was closed */
  TRI_ERR_TIMEOUT = -506,     /* a wait ran out of time (not an RPC status) */
  TRI_ERR_AGAIN = -507,       /* nothing to do yet; try again later */
  TRI_ERR_BACKOFF = -508,     /* connection attempts are backing off */
  TRI_ERR_FORKED = -509,      /* the object was made before a fork() (tri_fork.h) */
  TRI_ERR_FATAL = -900,       /* everything at or below this is fatal */
  TRI_ERR_RESOLVE = -901,     /* host name did not resolve */
  TRI_ERR_CONNECT = -902,     /* TCP connect failed */
  TRI_ERR_IO = -903,          /* read/write on the socket failed */
  TRI_ERR_HTTP2 = -904,       /* nghttp2 reported a session error */
  TRI_ERR_SYSTEM = -905       /* a system call other than socket I/O failed */
} tri_err;

/* Returns a static, never-NULL description of `err`. */
const char *tri_strerror(int err);

/* Nonzero when `err` is at or below TRI_ERR_FATAL. */
int tri_is_fatal(int err);

#endif
