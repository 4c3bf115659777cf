/*
 * load_results.c: the table of run_load's result keys.
 *
 * Every key of the dict _triple.run_load returns has one row here: its name,
 * where its value comes from (a field of tri_load_result or tri_load_config,
 * or a function of both), its unit and a one-line description.  What reads
 * the table:
 *   - run_load builds its result dict by walking it
 *     (tri_py_load_result_dict), so the dict has exactly these keys, in this
 *     order;
 *   - it is exported as _triple.LOAD_RESULTS, from which the Python side
 *     carries every figure into its results (and their files and frames).
 *
 * Adding a figure: the field in tri_load_result (filled by the load) and one
 * row in load_results[] below; a counter is a RES_COUNT row.
 */
#include "binding.h"

#include "../tri_hist.h"
#include "../tri_load.h"
#include "../tri_stats.h"

typedef enum {
  RES_COUNT,   /* uint64_t field: a counter (adds up over loads side by side) */
  RES_I64,     /* int64_t field */
  RES_DOUBLE,  /* double field */
  RES_SECONDS, /* int64_t field of nanoseconds, given in seconds */
  RES_LATENCY, /* const tri_hist * field: {count, min, mean, p50.., max..} */
  RES_PAIRS,   /* const tri_hist * field: [(value_ns, count), ...] */
  RES_FN,      /* computed by the row's function */
} result_kind;

/* A computed value: a new reference, or NULL with an exception set.
 * `stopped`: the run was ended early (a stop callback or a signal). */
typedef PyObject *(*result_fn)(const tri_load_config *cfg,
                               const tri_load_result *r, int stopped);

typedef struct {
  const char *name; /* the result key */
  result_kind kind;
  const char *type; /* RES_FN: what LOAD_RESULTS calls its type */
  size_t at;        /* offset in tri_load_result */
  result_fn fn;     /* RES_FN only */
  const char *unit; /* "" when none */
  const char *doc;  /* one line */
} load_result;

/* {"count", "min", "mean", "p50", ..., "p99.99", "max", clamp counters}. */
static PyObject *latency_dict(const tri_hist *h) {
  static const struct {
    const char *key;
    double p;
  } ps[] = {
      {"p50", 50}, {"p90", 90}, {"p99", 99}, {"p99.9", 99.9}, {"p99.99", 99.99}};
  uint64_t below, above;
  tri_hist_clamped(h, &below, &above);
  PyObject *d = Py_BuildValue(
      "{sKsLsd}", "count", (unsigned long long)tri_hist_count(h), "min",
      (long long)tri_hist_min(h), "mean", tri_hist_mean(h));
  for (size_t i = 0; d && i < sizeof(ps) / sizeof(ps[0]); i++) {
    PyObject *v =
        PyLong_FromLongLong((long long)tri_hist_percentile(h, ps[i].p));
    if (!v || PyDict_SetItemString(d, ps[i].key, v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  PyObject *tail = Py_BuildValue("{sLsKsK}", "max", (long long)tri_hist_max(h),
                                 "clamped_below", (unsigned long long)below,
                                 "clamped_above", (unsigned long long)above);
  if (d && (!tail || PyDict_Update(d, tail) < 0)) Py_CLEAR(d);
  Py_XDECREF(tail);
  return d;
}

static PyObject *u64_list(const uint64_t *a, size_t n) {
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    PyObject *x = PyLong_FromUnsignedLongLong(a[i]);
    if (!x) Py_CLEAR(l);
    else PyList_SET_ITEM(l, (Py_ssize_t)i, x);
  }
  return l;
}

static PyObject *i64_list(const int64_t *a, size_t n) {
  PyObject *l = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; l && i < n; i++) {
    PyObject *x = PyLong_FromLongLong(a[i]);
    if (!x) Py_CLEAR(l);
    else PyList_SET_ITEM(l, (Py_ssize_t)i, x);
  }
  return l;
}

/* {name: value} for every tri_stats counter: the counter, or with `ratio`
 * the counter / per (0.0 when per is 0). */
static PyObject *counter_dict(const tri_load_result *r, int ratio, double per) {
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < r->ncounters && tri_stats_names[i]; i++) {
    PyObject *v =
        ratio ? PyFloat_FromDouble(per > 0 ? (double)r->counters[i] / per : 0.0)
              : PyLong_FromUnsignedLongLong(r->counters[i]);
    if (!v || PyDict_SetItemString(d, tri_stats_names[i], v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

static double elapsed_s(const tri_load_result *r) {
  return (double)r->elapsed_ns / 1e9;
}

/* The computed rows: what ran (from the configuration), derived rates, and
 * the structured figures. */
#define FN(fname, expr)                                                        \
  static PyObject *fname(const tri_load_config *cfg, const tri_load_result *r, \
                         int stopped) {                                        \
    (void)cfg, (void)r, (void)stopped;                                         \
    return expr;                                                               \
  }
FN(mode_of, PyUnicode_FromString(tri_py_load_mode_name(cfg->mode)))
FN(target_of, PyUnicode_FromFormat("%s:%s", cfg->host, cfg->port))
FN(path_of, PyUnicode_FromString(cfg->path))
FN(payload_size_of, PyLong_FromSize_t(cfg->payload_size))
FN(connections_of, PyLong_FromLong(cfg->connections))
FN(concurrency_of, PyLong_FromLong(cfg->concurrency))
FN(stream_messages_of,
   PyLong_FromLong(cfg->mode == TRI_LOAD_BIDI ? cfg->stream_messages : 1))
FN(write_buffer_size_of, PyLong_FromUnsignedLong(cfg->channel.write_buffer_size))
FN(write_buffer_delay_of,
   PyLong_FromUnsignedLong(cfg->channel.write_buffer_delay_us))
FN(open_loop_of, PyBool_FromLong(cfg->rate > 0))
FN(target_rate_of, PyFloat_FromDouble(cfg->rate))
FN(shared_request_of, PyBool_FromLong(cfg->shared_request))
FN(verify_of, PyBool_FromLong(cfg->verify))
FN(hist_digits_of, PyLong_FromLong(tri_hist_sig_digits(r->latency)))
FN(streams_of,
   PyLong_FromUnsignedLongLong(cfg->mode == TRI_LOAD_BIDI ? r->calls : 0))
FN(messages_per_s_of,
   PyFloat_FromDouble(elapsed_s(r) > 0
                          ? (double)r->messages_received / elapsed_s(r)
                          : 0))
FN(status_codes_of, u64_list(r->codes, TRI_LOAD_CODES))
FN(counters_of, counter_dict(r, 0, 0))
FN(per_call_of, counter_dict(r, 1, (double)r->calls))
FN(per_message_of, counter_dict(r, 1, (double)r->messages_sent))
FN(interrupted_of, PyBool_FromLong(stopped))
#undef FN

static PyObject *series_of(const tri_load_config *cfg, const tri_load_result *r,
                           int stopped) {
  (void)cfg, (void)stopped;
  PyObject *calls = u64_list(r->series_calls, r->seconds);
  PyObject *errors = u64_list(r->series_errors, r->seconds);
  PyObject *p99 = i64_list(r->series_p99_ns, r->seconds);
  PyObject *d = calls && errors && p99
                    ? Py_BuildValue("{sOsOsO}", "calls", calls, "errors",
                                    errors, "p99_ns", p99)
                    : NULL;
  Py_XDECREF(calls);
  Py_XDECREF(errors);
  Py_XDECREF(p99);
  return d;
}

static PyObject *cpu_of(const tri_load_config *cfg, const tri_load_result *r,
                        int stopped) {
  (void)cfg, (void)stopped;
  double cpu = r->cpu_user_s + r->cpu_sys_s, elapsed = elapsed_s(r);
  return Py_BuildValue("{sdsdsdsdsdsd}", "process_user_s", r->cpu_user_s,
                       "process_sys_s", r->cpu_sys_s, "process_s", cpu,
                       "driver_s", r->driver_cpu_s, "process_us_per_call",
                       r->calls ? cpu * 1e6 / (double)r->calls : 0.0,
                       "process_cores", elapsed > 0 ? cpu / elapsed : 0.0);
}

/* clang-format off */
#define FIELD(kind, name, field, unit, doc) \
  {name, kind, NULL, offsetof(tri_load_result, field), NULL, unit, doc}
#define COMPUTED(name, type, fn, unit, doc) {name, RES_FN, type, 0, fn, unit, doc}

static const load_result load_results[] = {
    /* What ran. */
    COMPUTED("mode", "str", mode_of, "",
             "unary, unary_stream_path or bidi (LOAD_OPTIONS' names)"),
    COMPUTED("target", "str", target_of, "", "host:port of the first connection"),
    COMPUTED("path", "str", path_of, "", "the method path called"),
    COMPUTED("payload_size", "int", payload_size_of, "bytes",
             "BenchmarkRequest payload"),
    COMPUTED("connections", "int", connections_of, "", "connections (and threads)"),
    COMPUTED("concurrency", "int", concurrency_of, "calls",
             "calls (streams) in flight on each connection"),
    COMPUTED("stream_messages", "int", stream_messages_of, "messages",
             "messages each way per stream (1 in the unary modes)"),
    COMPUTED("write_buffer_size", "int", write_buffer_size_of, "bytes",
             "the channels' write coalescing watermark"),
    COMPUTED("write_buffer_delay_us", "int", write_buffer_delay_of, "us",
             "the channels' longest wait of a partial chunk"),
    COMPUTED("open_loop", "bool", open_loop_of, "", "a rate was given"),
    COMPUTED("target_rate", "float", target_rate_of, "calls/s",
             "the open loop's rate; 0: closed loop"),
    COMPUTED("shared_request", "bool", shared_request_of, "",
             "one packed request was lent to every call"),
    COMPUTED("hist_digits", "int", hist_digits_of, "digits",
             "significant digits of the latency histograms"),
    COMPUTED("verify", "bool", verify_of, "",
             "each response was compared with its request"),
    /* Counts and rates. */
    FIELD(RES_SECONDS, "elapsed_s", elapsed_ns, "s",
          "warm-up end to the stop or the last completion"),
    FIELD(RES_SECONDS, "warmup_s", warmup_ns, "s", "the configured warm-up"),
    FIELD(RES_COUNT, "calls", calls, "calls",
          "measured calls (streams in bidi) completed"),
    FIELD(RES_COUNT, "errors", errors, "calls",
          "... of them with a status other than OK"),
    FIELD(RES_DOUBLE, "qps", qps, "calls/s", "calls / elapsed_s"),
    FIELD(RES_COUNT, "warmup_calls", warmup_calls, "calls",
          "calls completed during the warm-up"),
    FIELD(RES_COUNT, "warmup_errors", warmup_errors, "calls",
          "... of them with a status other than OK"),
    FIELD(RES_COUNT, "missed", missed, "calls",
          "open loop: intended sends never made"),
    FIELD(RES_COUNT, "response_bytes", response_bytes, "bytes",
          "unary modes: response message bytes of OK calls"),
    COMPUTED("streams", "count", streams_of, "streams",
             "bidi: measured streams (calls); 0 in the unary modes"),
    FIELD(RES_COUNT, "messages_sent", messages_sent, "messages",
          "streaming modes, measured: messages written"),
    FIELD(RES_COUNT, "messages_received", messages_received, "messages",
          "bidi, measured: messages read"),
    COMPUTED("messages_per_s", "float", messages_per_s_of, "messages/s",
             "messages_received / elapsed_s"),
    FIELD(RES_COUNT, "short_streams", short_streams, "streams",
          "bidi: OK streams with fewer than stream_messages responses"),
    FIELD(RES_COUNT, "mismatches", mismatches, "calls",
          "verify: calls that ended OK with other bytes than their request's "
          "(counted in errors, not in status_codes)"),
    FIELD(RES_I64, "start_monotonic_ns", start_ns, "ns",
          "time.monotonic_ns() at which the warm-up started"),
    FIELD(RES_I64, "late_ns", late_ns, "ns",
          "how late that was after start_at_ns (0: on time)"),
    /* Latency. */
    FIELD(RES_LATENCY, "latency_ns", latency, "ns",
          "measured calls from the actual send: count, min, mean, p50..p99.99, max"),
    FIELD(RES_LATENCY, "latency_corrected_ns", latency_corrected, "ns",
          "... from the intended send (open loop; else the same)"),
    FIELD(RES_LATENCY, "warmup_latency_ns", warmup_latency, "ns",
          "the warm-up's calls from the actual send"),
    FIELD(RES_LATENCY, "warmup_latency_corrected_ns", warmup_latency_corrected, "ns",
          "... from the intended send"),
    FIELD(RES_PAIRS, "histogram", latency, "ns",
          "latency_ns' histogram as [(value_ns, count), ...]"),
    FIELD(RES_PAIRS, "histogram_corrected", latency_corrected, "ns",
          "latency_corrected_ns' histogram"),
    FIELD(RES_PAIRS, "warmup_histogram", warmup_latency, "ns",
          "warmup_latency_ns' histogram"),
    FIELD(RES_PAIRS, "warmup_histogram_corrected", warmup_latency_corrected, "ns",
          "warmup_latency_corrected_ns' histogram"),
    /* Over time, by status, costs. */
    COMPUTED("series", "series", series_of, "",
             "per second after the warm-up: {calls, errors, p99_ns} lists"),
    COMPUTED("status_codes", "codes", status_codes_of, "calls",
             "measured calls by status code (a list indexed by code)"),
    COMPUTED("cpu", "cpu", cpu_of, "s",
             "process_user_s, process_sys_s, process_s, driver_s, "
             "process_us_per_call, process_cores"),
    COMPUTED("counters", "counters", counters_of, "",
             "the channels' STATS_NAMES counters over the measured part"),
    COMPUTED("per_call", "ratios", per_call_of, "",
             "counters / calls"),
    COMPUTED("per_message", "ratios", per_message_of, "",
             "counters / messages_sent"),
    COMPUTED("interrupted", "bool", interrupted_of, "",
             "the run was stopped early (stop, or a signal): the figures until then"),
};
/* clang-format on */

#define NLOAD_RESULTS (sizeof(load_results) / sizeof(load_results[0]))

static const char *type_name(const load_result *row) {
  switch (row->kind) {
    case RES_COUNT: return "count";
    case RES_I64: return "int";
    case RES_DOUBLE:
    case RES_SECONDS: return "float";
    case RES_LATENCY: return "latency";
    case RES_PAIRS: return "histogram";
    default: return row->type;
  }
}

static PyObject *value_of(const load_result *row, const tri_load_config *cfg,
                          const tri_load_result *r, int stopped) {
  const void *f = (const char *)r + row->at;
  switch (row->kind) {
    case RES_COUNT: return PyLong_FromUnsignedLongLong(*(const uint64_t *)f);
    case RES_I64: return PyLong_FromLongLong(*(const int64_t *)f);
    case RES_DOUBLE: return PyFloat_FromDouble(*(const double *)f);
    case RES_SECONDS:
      return PyFloat_FromDouble((double)*(const int64_t *)f / 1e9);
    case RES_LATENCY: return latency_dict(*(const tri_hist *const *)f);
    case RES_PAIRS: return tri_py_hist_pairs(*(const tri_hist *const *)f);
    default: return row->fn(cfg, r, stopped);
  }
}

PyObject *tri_py_load_result_dict(const tri_load_config *cfg,
                                  const tri_load_result *r, int stopped) {
  PyObject *d = PyDict_New();
  for (size_t i = 0; d && i < NLOAD_RESULTS; i++) {
    PyObject *v = value_of(&load_results[i], cfg, r, stopped);
    if (!v || PyDict_SetItemString(d, load_results[i].name, v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

PyObject *tri_py_load_results_table(void) {
  PyObject *t = PyTuple_New((Py_ssize_t)NLOAD_RESULTS);
  for (size_t i = 0; t && i < NLOAD_RESULTS; i++) {
    const load_result *row = &load_results[i];
    PyObject *tuple =
        Py_BuildValue("(ssss)", row->name, type_name(row), row->unit, row->doc);
    if (!tuple) Py_CLEAR(t);
    else PyTuple_SET_ITEM(t, (Py_ssize_t)i, tuple);
  }
  return t;
}
