/*
 * tri_options: the one table of channel options.
 *
 * Every field of tri_channel_opts that a caller may set (all but host, port,
 * error_out and the derived ones) has one row here: the key a user writes in
 * grpcio-style options ("grpc.max_send_message_length"), the name the binding
 * takes as a keyword and ChannelOptions uses as a field ("max_send"), its type,
 * its range, its default and where it lives in tri_channel_opts.  What reads
 * the table:
 *   - tri_channel_opts_init writes every row's default (no default is written
 *     anywhere else in C);
 *   - the binding's _triple.Channel(host, port, **options) walks it to parse
 *     its keyword arguments (csrc/binding/channel_type.c) and exposes it as
 *     _triple.CHANNEL_OPTIONS;
 *   - triple_py/_options.py takes the keys, defaults and range checks from
 *     _triple.CHANNEL_OPTIONS, and the bench harness and docs take defaults
 *     from there.
 *
 * Adding a channel option:
 *   1. add the field to tri_channel_opts (tri_channel.h) and use it in the core;
 *   2. add one row to tri_channel_options[] in tri_options.c (ROW_INT and
 *      friends; keep it next to its neighbours in the struct).
 * Nothing else: the binding, _triple.CHANNEL_OPTIONS, ChannelOptions (field,
 * default, range check, core_kwargs) and the option key follow from the row.
 * A row with key NULL is set through another API (Channel(compression=...),
 * channel credentials), not through options.
 *
 * The table is constant data: it may be read from any thread.
 */
#ifndef TRI_OPTIONS_H
#define TRI_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "tri_channel.h"

typedef enum tri_option_type {
  TRI_OPT_INT,   /* an integer in [min, max] (uint32_t or int field) */
  TRI_OPT_LIMIT, /* a byte limit in [min, max] or -1: unlimited (int64_t field) */
  TRI_OPT_MS,    /* a duration in ms >= min; above max means max (uint32_t) */
  TRI_OPT_COUNT, /* a count >= min; above max means max (uint32_t) */
  TRI_OPT_BOOL,  /* 0 or 1 (int field) */
  TRI_OPT_STR, /* const char * field, copied by tri_channel_new; NULL: unset */
  TRI_OPT_CHOICE, /* int field: the index of one of `choices` */
  TRI_OPT_PEM,    /* const char * + size_t at len_offset: PEM bytes, borrowed
                     during tri_channel_new only */
} tri_option_type;

/* The type's name as _triple.CHANNEL_OPTIONS spells it ("int", "limit", "ms",
 * "count", "bool", "str", "choice", "pem"); a static string. */
const char *tri_option_type_name(tri_option_type type);

/* Where a row's value comes from in triple_py (flags of a row). */
#define TRI_OPT_FROM_CREDENTIALS 1 /* channel credentials (TLS), not options */

typedef struct tri_option {
  const char *key;  /* as the user writes it; NULL: set through another API */
  const char *name; /* binding keyword and ChannelOptions field */
  tri_option_type type;
  int flags;           /* TRI_OPT_FROM_* */
  int64_t min, max;    /* integer types: the range (see the type) */
  int64_t def;         /* integer types: the default; CHOICE: its index */
  const char *def_str; /* STR: the default (NULL: none) */
  const char *const *choices; /* CHOICE: names, NULL-terminated, index = value */
  size_t offset;              /* of the field in tri_channel_opts */
  size_t size;                /* of the field */
  size_t len_offset;          /* PEM: of its size_t length field */
} tri_option;

/* The rows, in tri_channel_opts order; tri_channel_option_count() of them. */
extern const tri_option tri_channel_options[];
size_t tri_channel_option_count(void);

/* The row called `name` (its first `len` bytes), or NULL. */
const tri_option *tri_channel_option_find(const char *name, size_t len);

/* Writes every row's default into `o` (tri_channel_opts_init does this). */
void tri_channel_options_defaults(tri_channel_opts *o);

/* Sets an integer row (INT, LIMIT, MS, COUNT, BOOL, CHOICE) to `v` by its
 * type's rule: INT and CHOICE out of range, BOOL other than 0/1, a negative MS
 * or COUNT, a LIMIT below -1 or above max: TRI_ERR_INVALID and `o` unchanged;
 * MS and COUNT above max become max; a negative LIMIT is -1.  Returns 0. */
int tri_option_set_int(tri_channel_opts *o, const tri_option *opt, int64_t v);

/* An integer row's value in `o`. */
int64_t tri_option_get_int(const tri_channel_opts *o, const tri_option *opt);

/* Sets a STR row to `s` (borrowed: it must stay valid until tri_channel_new
 * copied it) or a PEM row to `len` bytes at `s` (borrowed during
 * tri_channel_new).  Other rows: TRI_ERR_INVALID.  Returns 0. */
int tri_option_set_str(tri_channel_opts *o, const tri_option *opt,
                       const char *s, size_t len);

/* A STR or PEM row's pointer in `o` (borrowed). */
const char *tri_option_get_str(const tri_channel_opts *o, const tri_option *opt);

/* The index of `name` among a CHOICE row's choices, or -1. */
int tri_option_choice(const tri_option *opt, const char *name);

#endif
