/*
 * tri_wire: the protocol facts of the gRPC and Triple wires that are pure
 * functions: status codes, timeout encodings, grpc-message percent coding,
 * HTTP-status and RST_STREAM mappings, metadata validation and base64.
 * See docs/triple-wire.md (§3 gRPC, §1 Triple, §5 status tables).
 * Nothing here allocates; outputs go into caller-provided memory.
 */
#ifndef TRI_WIRE_H
#define TRI_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* gRPC status codes (same numbers as grpc.StatusCode). */
typedef enum {
  TRI_CODE_OK = 0,
  TRI_CODE_CANCELLED = 1,
  TRI_CODE_UNKNOWN = 2,
  TRI_CODE_INVALID_ARGUMENT = 3,
  TRI_CODE_DEADLINE_EXCEEDED = 4,
  TRI_CODE_NOT_FOUND = 5,
  TRI_CODE_ALREADY_EXISTS = 6,
  TRI_CODE_PERMISSION_DENIED = 7,
  TRI_CODE_RESOURCE_EXHAUSTED = 8,
  TRI_CODE_FAILED_PRECONDITION = 9,
  TRI_CODE_ABORTED = 10,
  TRI_CODE_OUT_OF_RANGE = 11,
  TRI_CODE_UNIMPLEMENTED = 12,
  TRI_CODE_INTERNAL = 13,
  TRI_CODE_UNAVAILABLE = 14,
  TRI_CODE_DATA_LOSS = 15,
  TRI_CODE_UNAUTHENTICATED = 16
} tri_code;

/* Longest grpc-timeout value we produce, with its NUL. */
#define TRI_TIMEOUT_MAX 16

/* Encodes a remaining time for the grpc-timeout header: at most 8 digits and
 * the finest unit (n, u, m, S, M, H) that fits, truncating; <= 0 gives "0n".
 * Returns the string length. */
int tri_grpc_timeout_encode(int64_t ns, char out[TRI_TIMEOUT_MAX]);

/* Rounds a remaining time up to three significant decimal digits (at most
 * 1 % later), so that calls made with the same timeout send the same
 * grpc-timeout value, which HPACK then sends as one byte from its table
 * instead of a new literal per call that would evict the entries every call
 * reuses.  The client enforces its own exact deadline; the server's copy is
 * only a hint.  Values <= 0 are returned unchanged. */
int64_t tri_timeout_round_up(int64_t ns);

/* The timeout value of a request header, remembered for the requests that
 * follow: calls made with one timeout round (tri_timeout_round_up) to the
 * same value, which the memo then gives without redoing the rounding and
 * the digits.  Plain value type; all-zero bytes are an empty memo.  Not
 * thread-safe: one per I/O thread. */
typedef struct tri_timeout_memo {
  int kind;       /* 1 + TRI_TIMEOUT_* of `text`; 0: empty */
  int64_t lo, hi; /* remaining times in (lo, hi] give `text` */
  int len;
  char text[TRI_TIMEOUT_MAX];
} tri_timeout_memo;

#define TRI_TIMEOUT_GRPC 0   /* grpc-timeout */
#define TRI_TIMEOUT_TRIPLE 1 /* triple-timeout-ms, tri-service-timeout */

/* The header value for `ns` left, rounded up by tri_timeout_round_up:
 * tri_grpc_timeout_encode of it (TRI_TIMEOUT_GRPC; "0n" for ns <= 0), or
 * tri_triple_timeout_encode of it (TRI_TIMEOUT_TRIPLE; 0, the header left
 * out, for less than 1 ms).  Returns the length; `out` is NUL-terminated. */
int tri_timeout_memo_text(tri_timeout_memo *m, int kind, int64_t ns,
                          char out[TRI_TIMEOUT_MAX]);

/* Parses a grpc-timeout value into nanoseconds.  Returns 0, or -1 when the
 * value is malformed (no digits, more than 8 digits, unknown unit).  Hours
 * that overflow give INT64_MAX ("no timeout"). */
int tri_grpc_timeout_decode(const char *s, size_t n, int64_t *ns);

/* Encodes the Triple-Timeout-Ms value (floor of milliseconds).  Returns the
 * length, or 0 when ns < 1 ms: the header is then omitted. */
int tri_triple_timeout_encode(int64_t ns, char out[TRI_TIMEOUT_MAX]);

/* Percent-decodes a grpc-message value into out (at least n bytes).  Invalid
 * escapes pass through unchanged, as the gRPC spec asks.  Returns out length. */
size_t tri_percent_decode(const char *in, size_t n, char *out);

/* Percent-encodes (bytes < 0x20, > 0x7E and '%') into out, which must hold
 * 3*n bytes.  Returns the output length. */
size_t tri_percent_encode(const char *in, size_t n, char *out);

/* Parses a grpc-status value: 1 to 10 ASCII digits.  Returns the code, or -1. */
int tri_parse_status(const char *s, size_t n);

/* Maps an HTTP status to a gRPC code when no grpc-status came
 * (grpc/doc/http-grpc-status-mapping.md). */
tri_code tri_code_from_http(int http_status);

/* Maps an HTTP status to a code for a Triple unary error whose JSON body was
 * missing or unreadable (docs/triple-wire.md §5 table B). */
tri_code tri_code_from_http_triple(int http_status);

/* Maps an RST_STREAM error code (RFC 9113 §7) to a gRPC code. */
tri_code tri_code_from_rst(uint32_t h2_error);

/* Static upper-case name of a code ("OK", "CANCELLED", ...); "UNKNOWN" when
 * out of range. */
const char *tri_code_name(int code);

/* Nonzero when `key` is a legal metadata key: 1+ chars of 0-9 a-z _ - . */
int tri_md_key_valid(const char *key, size_t n);
/* Nonzero when `key` ends in "-bin" (binary value, base64 on the wire). */
int tri_md_key_is_bin(const char *key, size_t n);
/* Nonzero when a non-binary value is legal: printable ASCII 0x20-0x7E. */
int tri_md_value_valid(const char *v, size_t n);
/* Nonzero for keys the transport owns (pseudo-headers, grpc-*, te,
 * content-type, user-agent...), which callers may not send. */
int tri_md_key_reserved(const char *key, size_t n);

/* Bytes needed to base64-encode n bytes without padding. */
static inline size_t tri_base64_len(size_t n) { return (n / 3) * 4 + ((n % 3) ? (n % 3) + 1 : 0); }
/* Unpadded standard base64.  Returns the output length. */
size_t tri_base64_encode(const uint8_t *in, size_t n, char *out);
/* Decodes padded or unpadded standard base64 (also the URL alphabet) into
 * out (at least 3*n/4+3 bytes).  Returns the length or -1 when invalid. */
long tri_base64_decode(const char *in, size_t n, uint8_t *out);

#endif
