/*
 * ts_codec: the grpc.testing messages of the embedded server's TestService,
 * hand-written (no protoc): the protobuf decoders of the three request types,
 * the protojson decoder of SimpleRequest (the Triple wire's
 * application/json, read with tri_tjson's reader) and the encoders of the
 * responses.  Only the fields the server uses are read, unknown fields are
 * skipped, and every output borrows from the input (except as said for
 * JSON).  The input is untrusted: the C tests and a fuzzer
 * (tests/fuzz/fuzz_server.c) call these directly.  No allocation, no state.
 */
#ifndef TRI_SERVER_TS_CODEC_H
#define TRI_SERVER_TS_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* The longest status message the server keeps (longer ones are cut). */
#define TRI_TS_MAX_STATUS_MSG 4096

/* What the server reads from a SimpleRequest, StreamingOutputCallRequest or
 * StreamingInputCallRequest (fields a message type lacks stay at defaults). */
typedef struct tri_ts_request {
  int32_t response_type;       /* PayloadType (0 COMPRESSABLE) */
  int32_t response_size;       /* SimpleRequest.response_size */
  size_t payload_len;          /* payload.body length */
  int response_compressed;     /* BoolValue: -1 absent, else its value */
  int expect_compressed;       /* BoolValue: -1 absent, else its value */
  int has_status;              /* response_status present */
  int32_t status_code;
  const uint8_t *status_msg;   /* response_status.message (UTF-8) */
  size_t status_msg_len;
  int fill_username, fill_oauth_scope;
  size_t nparams;              /* response_parameters seen */
} tri_ts_request;

/* One ResponseParameters. */
typedef struct tri_ts_params {
  int32_t size;
  int32_t interval_us;
  int compressed; /* BoolValue: -1 absent, else its value */
} tri_ts_params;

/* Each returns 0, or -1 when p[0..n) is not a valid message of that type. */
int tri_ts_decode_simple(const uint8_t *p, size_t n, tri_ts_request *r);
int tri_ts_decode_output(const uint8_t *p, size_t n, tri_ts_request *r);
int tri_ts_decode_input(const uint8_t *p, size_t n, tri_ts_request *r);
/* A SimpleRequest in protojson (the Triple wire's application/json): keys
 * by proto or lowerCamelCase name, unknown keys skipped.  status_msg then
 * points into thread-local storage, valid until the next call on the same
 * thread. */
int tri_ts_decode_simple_json(const uint8_t *p, size_t n, tri_ts_request *r);

/* The response_parameters of a StreamingOutputCallRequest, one per call
 * from *off (start at 0): 1 with *out, 0 after the last, -1 if malformed. */
int tri_ts_next_params(const uint8_t *p, size_t n, size_t *off,
                       tri_ts_params *out);

/* {1: Payload{1: type (when nonzero), 2: `size` zero bytes}}: a
 * SimpleResponse or StreamingOutputCallResponse.  _len gives its size;
 * _put writes it to out (that many bytes) and returns the size. */
size_t tri_ts_payload_msg_len(uint32_t size, int32_t type);
size_t tri_ts_payload_msg_put(uint8_t *out, uint32_t size, int32_t type);

/* StreamingInputCallResponse{1: aggregated_payload_size} into out (at most
 * 11 bytes); returns its size (0 for a zero total). */
size_t tri_ts_aggregated_put(uint8_t *out, int32_t total);

#endif
