/*
 * tri_options.c: the table of channel options and its setters (see
 * tri_options.h).  The defaults below are the only place C writes them.
 */
#include "tri_options.h"

#include <string.h>

#include "tri_backoff.h"
#include "tri_error.h"
#include "tri_writer.h"

#define INT_MAX32 INT64_C(0x7fffffff)

#define FIELD_SIZE(field) sizeof(((tri_channel_opts *)0)->field)
#define AT(field) offsetof(tri_channel_opts, field), FIELD_SIZE(field), 0

/* One row per option: ROW_<TYPE>(key, name, field, ...).  The rows are kept
 * one per line where they fit, as a table, not as clang-format would wrap them. */
/* clang-format off */
#define ROW_NUM(type, key, name, field, lo, hi, def) \
  {key, name, type, 0, lo, hi, def, NULL, NULL, AT(field)}
#define ROW_INT(key, name, field, lo, hi, def) ROW_NUM(TRI_OPT_INT, key, name, field, lo, hi, def)
#define ROW_LIMIT(key, name, field, def) \
  ROW_NUM(TRI_OPT_LIMIT, key, name, field, 0, INT64_MAX, def)
#define ROW_MS(key, name, field, def) ROW_NUM(TRI_OPT_MS, key, name, field, 0, INT_MAX32, def)
#define ROW_COUNT(key, name, field, def) \
  ROW_NUM(TRI_OPT_COUNT, key, name, field, 0, INT_MAX32, def)
#define ROW_BOOL(key, name, field, flags) \
  {key, name, TRI_OPT_BOOL, flags, 0, 1, 0, NULL, NULL, AT(field)}
#define ROW_STR(key, name, field, def, flags) \
  {key, name, TRI_OPT_STR, flags, 0, 0, 0, def, NULL, AT(field)}
#define ROW_CHOICE(key, name, field, choices, def) \
  {key, name, TRI_OPT_CHOICE, 0, 0, sizeof(choices) / sizeof(choices[0]) - 2, def, NULL, \
   choices, AT(field)}
#define ROW_PEM(name, field, len_field)                                              \
  {NULL, name, TRI_OPT_PEM, TRI_OPT_FROM_CREDENTIALS, 0, 0, 0, NULL, NULL,           \
   offsetof(tri_channel_opts, field), FIELD_SIZE(field),                             \
   offsetof(tri_channel_opts, len_field)}

/* Index = TRI_WIRE_* / TRI_DIALECT_* (tri_channel.h). */
static const char *const wires[] = {"grpc", "triple", NULL};
static const char *const dialects[] = {"auto", "go", "spec", NULL};
/* Index = TRI_ADDRESS_*: the endpoint kinds of triple_py/_target.py. */
static const char *const address_kinds[] = {"tcp", "unix", "unix-abstract", NULL};

const tri_option tri_channel_options[] = {
    ROW_STR("grpc.default_authority", "authority", authority, NULL, 0),
    ROW_LIMIT("grpc.max_receive_message_length", "max_receive", max_recv_bytes, 4 << 20),
    ROW_LIMIT("grpc.max_send_message_length", "max_send", max_send_bytes, -1),
    /* HTTP/2 windows: 0 would let no byte through, 2**31 and above are
     * protocol errors; a connection window starts at 65535 (RFC 9113 6.9.2). */
    ROW_INT("triple.stream_window", "stream_window", stream_window, 1, INT_MAX32,
            (16 << 20) - 1),
    ROW_INT("triple.connection_window", "conn_window", conn_window, 65535, INT_MAX32,
            (1 << 30) - 1),
    ROW_INT("triple.max_frame_size", "max_frame_size", max_frame_size, 16384, 16777215,
            64 << 10), /* RFC 9113 6.5.2 */
    /* grpcio 1.51's default; a response header block over it fails its call. */
    ROW_INT("grpc.max_metadata_size", "max_metadata_size", max_metadata_size, 0, INT_MAX32,
            8 << 10),
    /* grpc.primary_user_agent is put in front of the default (triple_py). */
    ROW_STR("grpc.primary_user_agent", "user_agent", user_agent, TRI_USER_AGENT, 0),
    ROW_INT("triple.write_buffer_size", "write_buffer_size", write_buffer_size, 0,
            INT_MAX32, TRI_WRITER_DEFAULT_WATERMARK),
    ROW_INT("triple.write_buffer_delay_us", "write_buffer_delay_us", write_buffer_delay_us,
            0, INT_MAX32, 200),
    ROW_CHOICE("triple.wire", "wire", wire, wires, TRI_WIRE_GRPC),
    ROW_CHOICE("triple.dialect", "dialect", dialect, dialects, TRI_DIALECT_AUTO),
    ROW_INT(NULL, "compression", compress, TRI_COMPRESS_NONE, TRI_COMPRESS_GZIP,
            TRI_COMPRESS_NONE),
    /* How host is dialed: a name or address (TCP), a unix socket path or an
     * abstract socket name; set from the target's scheme (triple_py/_target.py). */
    ROW_CHOICE(NULL, "address_kind", address_kind, address_kinds, TRI_ADDRESS_TCP),
    ROW_STR("triple.service_group", "service_group", service_group, NULL, 0),
    ROW_STR("triple.service_version", "service_version", service_version, NULL, 0),
    ROW_STR("triple.codec", "codec", triple_codec, "proto", 0),
    ROW_BOOL(NULL, "tls", tls, TRI_OPT_FROM_CREDENTIALS),
    ROW_PEM("root_certificates", tls_roots, tls_roots_len),
    ROW_PEM("private_key", tls_key, tls_key_len),
    ROW_PEM("certificate_chain", tls_chain, tls_chain_len),
    ROW_STR("grpc.ssl_target_name_override", "ssl_target_name_override", tls_server_name,
            NULL, 0),
    ROW_BOOL("triple.tls_skip_verify", "tls_skip_verify", tls_skip_verify, 0),
    ROW_STR(NULL, "tls_verify_file", tls_verify_file, NULL, TRI_OPT_FROM_CREDENTIALS),
    ROW_STR(NULL, "tls_verify_dir", tls_verify_dir, NULL, TRI_OPT_FROM_CREDENTIALS),
    ROW_MS("triple.write_stall_timeout_ms", "write_stall_timeout_ms", write_stall_timeout_ms,
           10000),
    ROW_MS("grpc.keepalive_time_ms", "keepalive_time_ms", keepalive_time_ms, 0),
    ROW_MS("grpc.keepalive_timeout_ms", "keepalive_timeout_ms", keepalive_timeout_ms, 20000),
    ROW_BOOL("grpc.keepalive_permit_without_calls", "keepalive_permit_without_calls",
             keepalive_permit_without_calls, 0),
    ROW_COUNT("grpc.http2.max_pings_without_data", "max_pings_without_data",
              max_pings_without_data, 2),
    ROW_MS("grpc.initial_reconnect_backoff_ms", "initial_reconnect_backoff_ms",
           initial_reconnect_backoff_ms, TRI_BACKOFF_INITIAL_MS),
    ROW_MS("grpc.max_reconnect_backoff_ms", "max_reconnect_backoff_ms",
           max_reconnect_backoff_ms, TRI_BACKOFF_MAX_MS),
    ROW_MS("grpc.min_reconnect_backoff_ms", "min_reconnect_backoff_ms",
           min_connect_timeout_ms, TRI_BACKOFF_MIN_CONNECT_TIMEOUT_MS),
    /* In-place reads (tri_conn.h): on by default, so written out too. */
    {"triple.in_place_reads", "in_place_reads", TRI_OPT_BOOL, 0, 0, 1, 1, NULL, NULL,
     AT(in_place_reads)},
    /* Several backends on one I/O thread (tri_loop.h, docs/architecture.md): a
     * switch on by default, so written out (ROW_BOOL's default is off). */
    {"triple.shared_io_thread", "shared_io_thread", TRI_OPT_BOOL, 0, 0, 1, 1, NULL, NULL,
     AT(shared_io_thread)},
    /* An asyncio channel's I/O on its event loop's thread (tri_loop.h,
     * docs/architecture.md): on by default, as above. */
    {"triple.io_on_event_loop", "io_on_event_loop", TRI_OPT_BOOL, 0, 0, 1, 1, NULL, NULL,
     AT(io_on_event_loop)},
};
/* clang-format on */

size_t tri_channel_option_count(void) {
  return sizeof(tri_channel_options) / sizeof(tri_channel_options[0]);
}

const char *tri_option_type_name(tri_option_type type) {
  static const char *const names[] = {"int",  "limit", "ms",     "count",
                                      "bool", "str",   "choice", "pem"};
  return (size_t)type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

const tri_option *tri_channel_option_find(const char *name, size_t len) {
  for (size_t i = 0; i < tri_channel_option_count(); i++) {
    const tri_option *opt = &tri_channel_options[i];
    if (strlen(opt->name) == len && memcmp(opt->name, name, len) == 0)
      return opt;
  }
  return NULL;
}

static void *field(tri_channel_opts *o, const tri_option *opt) {
  return (char *)o + opt->offset;
}

static const void *cfield(const tri_channel_opts *o, const tri_option *opt) {
  return (const char *)o + opt->offset;
}

/* Writes `v` (already in range) with the field's width: the 4-byte fields are
 * uint32_t or int, and every value fits both. */
static void put(tri_channel_opts *o, const tri_option *opt, int64_t v) {
  if (opt->size == sizeof(int64_t)) {
    memcpy(field(o, opt), &v, sizeof(v));
  } else {
    int32_t v32 = (int32_t)v;
    memcpy(field(o, opt), &v32, sizeof(v32));
  }
}

int64_t tri_option_get_int(const tri_channel_opts *o, const tri_option *opt) {
  if (opt->size == sizeof(int64_t)) {
    int64_t v;
    memcpy(&v, cfield(o, opt), sizeof(v));
    return v;
  }
  if (opt->type == TRI_OPT_MS || opt->type == TRI_OPT_COUNT ||
      opt->type == TRI_OPT_INT) {
    uint32_t u; /* uint32_t fields, or an int holding a small non-negative value */
    memcpy(&u, cfield(o, opt), sizeof(u));
    return opt->type == TRI_OPT_INT && opt->min < 0 ? (int32_t)u : (int64_t)u;
  }
  int32_t v32;
  memcpy(&v32, cfield(o, opt), sizeof(v32));
  return v32;
}

int tri_option_set_int(tri_channel_opts *o, const tri_option *opt, int64_t v) {
  switch (opt->type) {
    case TRI_OPT_INT:
    case TRI_OPT_BOOL:
    case TRI_OPT_CHOICE:
      if (v < opt->min || v > opt->max) return TRI_ERR_INVALID;
      break;
    case TRI_OPT_LIMIT:
      if (v > opt->max) return TRI_ERR_INVALID;
      if (v < 0) v = -1;
      break;
    case TRI_OPT_MS:
    case TRI_OPT_COUNT:
      if (v < opt->min) return TRI_ERR_INVALID;
      if (v > opt->max) v = opt->max;
      break;
    default: return TRI_ERR_INVALID;
  }
  put(o, opt, v);
  return 0;
}

int tri_option_set_str(tri_channel_opts *o, const tri_option *opt,
                       const char *s, size_t len) {
  if (opt->type != TRI_OPT_STR && opt->type != TRI_OPT_PEM)
    return TRI_ERR_INVALID;
  memcpy(field(o, opt), &s, sizeof(s));
  if (opt->type == TRI_OPT_PEM)
    memcpy((char *)o + opt->len_offset, &len, sizeof(len));
  return 0;
}

const char *tri_option_get_str(const tri_channel_opts *o, const tri_option *opt) {
  const char *s;
  memcpy(&s, cfield(o, opt), sizeof(s));
  return s;
}

int tri_option_choice(const tri_option *opt, const char *name) {
  if (opt->type != TRI_OPT_CHOICE) return -1;
  for (int i = 0; opt->choices[i]; i++)
    if (strcmp(opt->choices[i], name) == 0) return i;
  return -1;
}

void tri_channel_options_defaults(tri_channel_opts *o) {
  for (size_t i = 0; i < tri_channel_option_count(); i++) {
    const tri_option *opt = &tri_channel_options[i];
    if (opt->type == TRI_OPT_STR) tri_option_set_str(o, opt, opt->def_str, 0);
    else if (opt->type != TRI_OPT_PEM) put(o, opt, opt->def);
  }
}
