#include "tri_error.h"

const char *tri_strerror(int err) {
  switch (err) {
  case TRI_OK: return "success";
  case TRI_ERR_INVALID: return "invalid argument";
  case TRI_ERR_NOMEM: return "out of memory";
  case TRI_ERR_TOO_LARGE: return "message larger than the limit";
  case TRI_ERR_FRAME: return "malformed message envelope";
  case TRI_ERR_CLOSED: return "closed";
  case TRI_ERR_TIMEOUT: return "timed out";
  case TRI_ERR_AGAIN: return "try again";
  case TRI_ERR_BACKOFF: return "connection attempts are backing off";
  case TRI_ERR_FORKED: return "inherited across fork()";
  case TRI_ERR_RESOLVE: return "name resolution failed";
  case TRI_ERR_CONNECT: return "connect failed";
  case TRI_ERR_IO: return "socket I/O failed";
  case TRI_ERR_HTTP2: return "HTTP/2 session error";
  case TRI_ERR_SYSTEM: return "system call failed";
  default: return "unknown error";
  }
}

int tri_is_fatal(int err) { return err <= TRI_ERR_FATAL; }
