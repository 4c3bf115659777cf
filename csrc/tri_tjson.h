/*
 * tri_tjson: the Triple (Connect-style) JSON error body reader.
 *
 * A Triple unary error is an HTTP status with a JSON body.  Every Dubbo
 * implementation's form is read:
 *  - dubbo-go (Connect): {"code":"<name>","message":"...","details":[...]}
 *    (docs/triple-wire.md §1.4); names as in Connect, "code_N" as N;
 *    anything outside 1..16 other than 17 becomes UNKNOWN;
 *  - dubbo-js: {"status":<gRPC code as a number>,"message":...,"details":[...]}
 *    (a number outside 1..16 becomes UNKNOWN);
 *  - Dubbo Java: {"status":"<HTTP status as a string>","message":...}, the
 *    code from the HTTP status (Java's own code->HTTP table inverted where it
 *    is one to one: 499, 404, 409, 429, 500, 501, 504; the Triple HTTP table
 *    otherwise).
 * A "code" wins over a "status" in the same body.  Details are
 * {"type":"pkg.Msg","value":"<b64>"} in every form.  This reader turns the
 * body into a gRPC status: the code, the message as UTF-8, and the details
 * re-encoded as a
 * google.rpc.Status protobuf (type URLs get "type.googleapis.com/"), which is
 * what gRPC callers find in grpc-status-details-bin.  Unknown keys (such as
 * "debug") are skipped.  It never allocates; every output goes into caller
 * memory sized from the input.
 *
 * Its reader of untrusted JSON is the library's only one: the embedded
 * server reads protojson requests with the same functions (below), so the
 * fuzzer of this file covers both.
 */
#ifndef TRI_TJSON_H
#define TRI_TJSON_H

#include <stddef.h>
#include <stdint.h>

/* Output capacities for an input of n bytes. */
#define TRI_TJSON_MSG_CAP(n) ((n) + 1)
#define TRI_TJSON_PB_CAP(n) (6 * (n) + 256)

/* Parses json[0..n).  On success returns 0 with *code set, the message in
 * msg[0..*msg_len) (msg holds TRI_TJSON_MSG_CAP(n) bytes) and the
 * google.rpc.Status encoding in pb[0..*pb_len) (pb holds TRI_TJSON_PB_CAP(n)
 * bytes).  Returns -1 when the input is not such an object (then the caller
 * falls back to the HTTP status table). */
int tri_tjson_error_parse(const char *json, size_t n, int *code, char *msg,
                          size_t *msg_len, uint8_t *pb, size_t *pb_len);

/* The Connect name of a code ("canceled", "invalid_argument", ...). */
const char *tri_tjson_code_name(int code);

/* ---- the reader: a cursor over untrusted JSON ---------------------------
 * Each function reads one token or value at c->p and moves past it; on -1
 * the input is not valid there and c->p is anywhere in [start, end].
 * Nothing allocates; the cursor borrows the text. */
typedef struct tri_tjson_cur {
  const char *p, *end;
} tri_tjson_cur;

/* Longest object key tri_tjson_object hands to `member` (longer: klen 0). */
#define TRI_TJSON_KEY_MAX 64

/* Skips blanks (space, tab, CR, LF). */
void tri_tjson_ws(tri_tjson_cur *c);
/* The exact bytes `lit` (no blanks skipped): 0, or -1 with c unmoved. */
int tri_tjson_lit(tri_tjson_cur *c, const char *lit);
/* A string: its UTF-8 into out[0..cap) (truncated; out may be NULL) and the
 * full decoded length in *len (len may be NULL).  A decoded string is never
 * longer than its source. */
int tri_tjson_string(tri_tjson_cur *c, char *out, size_t cap, size_t *len);
/* Skips one value of any kind (nesting deeper than 64 is refused). */
int tri_tjson_skip(tri_tjson_cur *c, int depth);
/* An int32 as protojson writes it: a number or a decimal string. */
int tri_tjson_int32(tri_tjson_cur *c, int32_t *out);
/* true (1), false (0) or null (-1: a BoolValue left unset). */
int tri_tjson_bool(tri_tjson_cur *c, int *out);
/* An object: member(c, key, klen, arg) reads each member's value (klen 0
 * for keys over TRI_TJSON_KEY_MAX bytes); member returns 0 or -1. */
int tri_tjson_object(tri_tjson_cur *c,
                     int (*member)(tri_tjson_cur *c, const char *key,
                                   size_t klen, void *arg),
                     void *arg);

#endif
