/*
 * load.c: _triple.run_load, the C load generator (tri_load) for Python.
 *
 * The configuration is parsed with the GIL held; then the run happens with
 * the GIL released: the binding only takes it back every 50 ms for
 * PyErr_CheckSignals (so Ctrl-C stops the run: tri_load_stop, wait, and the
 * KeyboardInterrupt propagates).  The figures are converted to a dict once
 * the threads are joined.
 */
#include "binding.h"

#include "../tri_hist.h"
#include "../tri_load.h"

#define WAIT_SLICE_NS (50 * 1000000LL)

static const struct {
  const char *name;
  int mode;
} mode_names[] = {{"unary", TRI_LOAD_UNARY},
                  {"fastpath", TRI_LOAD_UNARY},
                  {"unary_stream_path", TRI_LOAD_UNARY_STREAM_PATH},
                  {"stream_path", TRI_LOAD_UNARY_STREAM_PATH},
                  {"bidi", TRI_LOAD_BIDI}};

static const char *mode_name(int mode) {
  switch (mode) {
  case TRI_LOAD_UNARY: return "unary";
  case TRI_LOAD_UNARY_STREAM_PATH: return "unary_stream_path";
  default: return "bidi";
  }
}

static int parse_mode(PyObject *o, int *mode) {
  if (PyLong_Check(o)) {
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    *mode = (int)v;
    return 0;
  }
  const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
  if (!s) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_TypeError, "mode must be str or int, not %.100s",
                   Py_TYPE(o)->tp_name);
    return -1;
  }
  for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
    if (strcmp(s, mode_names[i].name) == 0) {
      *mode = mode_names[i].mode;
      return 0;
    }
  PyErr_Format(PyExc_ValueError,
               "unknown mode %R (expected 'unary', 'unary_stream_path' or 'bidi')",
               o);
  return -1;
}

/* d[key] = v, stealing v; returns -1 (exception set) on failure. */
static int put(PyObject *d, const char *key, PyObject *v) {
  if (!v) return -1;
  int rv = PyDict_SetItemString(d, key, v);
  Py_DECREF(v);
  return rv;
}

#define PUT_U64(d, k, v) put(d, k, PyLong_FromUnsignedLongLong((unsigned long long)(v)))
#define PUT_I64(d, k, v) put(d, k, PyLong_FromLongLong((long long)(v)))
#define PUT_F(d, k, v) put(d, k, PyFloat_FromDouble((double)(v)))

/* {"count", "min", "max", "mean", "p50", ..., "p99.99", clamp counters}. */
static PyObject *latency_dict(const tri_hist *h) {
  static const struct {
    const char *key;
    double p;
  } ps[] = {{"p50", 50}, {"p90", 90}, {"p99", 99}, {"p99.9", 99.9}, {"p99.99", 99.99}};
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  uint64_t below, above;
  tri_hist_clamped(h, &below, &above);
  if (PUT_U64(d, "count", tri_hist_count(h)) < 0 ||
      PUT_I64(d, "min", tri_hist_min(h)) < 0 ||
      PUT_F(d, "mean", tri_hist_mean(h)) < 0)
    goto fail;
  for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
    if (PUT_I64(d, ps[i].key, tri_hist_percentile(h, ps[i].p)) < 0) goto fail;
  if (PUT_I64(d, "max", tri_hist_max(h)) < 0 ||
      PUT_U64(d, "clamped_below", below) < 0 ||
      PUT_U64(d, "clamped_above", above) < 0)
    goto fail;
  return d;
fail:
  Py_DECREF(d);
  return NULL;
}

/* [(value_ns, count), ...] over the non-empty buckets. */
PyObject *tri_py_hist_pairs(const tri_hist *h) {
  PyObject *l = PyList_New(0);
  if (!l) return NULL;
  size_t it = 0;
  int64_t v;
  uint64_t n;
  while (tri_hist_next(h, &it, &v, &n)) {
    PyObject *t = Py_BuildValue("(LK)", (long long)v, (unsigned long long)n);
    if (!t || PyList_Append(l, t) < 0) {
      Py_XDECREF(t);
      Py_DECREF(l);
      return NULL;
    }
    Py_DECREF(t);
  }
  return l;
}

static PyObject *u64_list(const uint64_t *a, size_t n) {
  PyObject *l = PyList_New((Py_ssize_t)n);
  if (!l) return NULL;
  for (size_t i = 0; i < n; i++) {
    PyObject *x = PyLong_FromUnsignedLongLong(a[i]);
    if (!x) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, x);
  }
  return l;
}

static PyObject *i64_list(const int64_t *a, size_t n) {
  PyObject *l = PyList_New((Py_ssize_t)n);
  if (!l) return NULL;
  for (size_t i = 0; i < n; i++) {
    PyObject *x = PyLong_FromLongLong(a[i]);
    if (!x) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, x);
  }
  return l;
}

/* {name: value / per} for every counter; per == 0 gives 0.0. */
static PyObject *ratios(const tri_load_result *r, double per) {
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  for (int i = 0; i < r->ncounters && tri_stats_names[i]; i++)
    if (PUT_F(d, tri_stats_names[i], per > 0 ? (double)r->counters[i] / per : 0.0) < 0) {
      Py_DECREF(d);
      return NULL;
    }
  return d;
}

static PyObject *result_dict(const tri_load_config *cfg, const tri_load_result *r) {
  PyObject *d = PyDict_New(), *x = NULL;
  if (!d) return NULL;
  double elapsed = (double)r->elapsed_ns / 1e9;
  int bidi = cfg->mode == TRI_LOAD_BIDI;
  double cpu = r->cpu_user_s + r->cpu_sys_s;

  /* What ran. */
  if (put(d, "mode", PyUnicode_FromString(mode_name(cfg->mode))) < 0 ||
      put(d, "target", PyUnicode_FromFormat("%s:%s", cfg->host, cfg->port)) < 0 ||
      put(d, "path", PyUnicode_FromString(cfg->path)) < 0 ||
      PUT_U64(d, "payload_size", cfg->payload_size) < 0 ||
      PUT_I64(d, "connections", cfg->connections) < 0 ||
      PUT_I64(d, "concurrency", cfg->concurrency) < 0 ||
      PUT_I64(d, "stream_messages", bidi ? cfg->stream_messages : 1) < 0 ||
      PUT_U64(d, "write_buffer_size", cfg->write_buffer_size) < 0 ||
      PUT_U64(d, "write_buffer_delay_us", cfg->write_buffer_delay_us) < 0 ||
      put(d, "open_loop", PyBool_FromLong(cfg->rate > 0)) < 0 ||
      PUT_F(d, "target_rate", cfg->rate) < 0 ||
      put(d, "shared_request", PyBool_FromLong(cfg->shared_request)) < 0 ||
      PUT_I64(d, "hist_digits", tri_hist_sig_digits(r->latency)) < 0)
    goto fail;

  /* Counts and rates. */
  if (PUT_F(d, "elapsed_s", elapsed) < 0 ||
      PUT_F(d, "warmup_s", (double)r->warmup_ns / 1e9) < 0 ||
      PUT_U64(d, "calls", r->calls) < 0 ||
      PUT_U64(d, "errors", r->errors) < 0 ||
      PUT_F(d, "qps", r->qps) < 0 ||
      PUT_U64(d, "warmup_calls", r->warmup_calls) < 0 ||
      PUT_U64(d, "warmup_errors", r->warmup_errors) < 0 ||
      PUT_U64(d, "missed", r->missed) < 0 ||
      PUT_U64(d, "response_bytes", r->response_bytes) < 0 ||
      PUT_U64(d, "streams", bidi ? r->calls : 0) < 0 ||
      PUT_U64(d, "messages_sent", r->messages_sent) < 0 ||
      PUT_U64(d, "messages_received", r->messages_received) < 0 ||
      PUT_F(d, "messages_per_s", elapsed > 0 ? (double)r->messages_received / elapsed : 0) < 0 ||
      PUT_U64(d, "short_streams", r->short_streams) < 0 ||
      PUT_I64(d, "start_monotonic_ns", r->start_ns) < 0 ||
      PUT_I64(d, "late_ns", r->late_ns) < 0)
    goto fail;

  /* Latency. */
  if (put(d, "latency_ns", latency_dict(r->latency)) < 0 ||
      put(d, "latency_corrected_ns", latency_dict(r->latency_corrected)) < 0 ||
      put(d, "warmup_latency_ns", latency_dict(r->warmup_latency)) < 0 ||
      put(d, "warmup_latency_corrected_ns", latency_dict(r->warmup_latency_corrected)) < 0 ||
      put(d, "histogram", tri_py_hist_pairs(r->latency)) < 0 ||
      put(d, "histogram_corrected", tri_py_hist_pairs(r->latency_corrected)) < 0 ||
      put(d, "warmup_histogram", tri_py_hist_pairs(r->warmup_latency)) < 0 ||
      put(d, "warmup_histogram_corrected", tri_py_hist_pairs(r->warmup_latency_corrected)) < 0)
    goto fail;

  /* The one-second series. */
  if (!(x = PyDict_New())) goto fail;
  if (put(x, "calls", u64_list(r->series_calls, r->seconds)) < 0 ||
      put(x, "errors", u64_list(r->series_errors, r->seconds)) < 0 ||
      put(x, "p99_ns", i64_list(r->series_p99_ns, r->seconds)) < 0) {
    Py_DECREF(x);
    goto fail;
  }
  if (put(d, "series", x) < 0) goto fail;

  /* Status codes: a list indexed by code. */
  if (put(d, "status_codes", u64_list(r->codes, TRI_LOAD_CODES)) < 0) goto fail;

  /* CPU. */
  if (!(x = PyDict_New())) goto fail;
  if (PUT_F(x, "process_user_s", r->cpu_user_s) < 0 ||
      PUT_F(x, "process_sys_s", r->cpu_sys_s) < 0 ||
      PUT_F(x, "process_s", cpu) < 0 ||
      PUT_F(x, "driver_s", r->driver_cpu_s) < 0 ||
      PUT_F(x, "process_us_per_call", r->calls ? cpu * 1e6 / (double)r->calls : 0) < 0 ||
      PUT_F(x, "process_cores", elapsed > 0 ? cpu / elapsed : 0) < 0) {
    Py_DECREF(x);
    goto fail;
  }
  if (put(d, "cpu", x) < 0) goto fail;

  /* Counters over the measured part, and per operation. */
  if (!(x = PyDict_New())) goto fail;
  for (int i = 0; i < r->ncounters && tri_stats_names[i]; i++)
    if (PUT_U64(x, tri_stats_names[i], r->counters[i]) < 0) {
      Py_DECREF(x);
      goto fail;
    }
  if (put(d, "counters", x) < 0 ||
      put(d, "per_call", ratios(r, (double)r->calls)) < 0 ||
      put(d, "per_message", ratios(r, (double)r->messages_sent)) < 0)
    goto fail;
  return d;
fail:
  Py_DECREF(d);
  return NULL;
}

/* Runs the load with the GIL released, checking signals between slices.
 * Returns 0, or -1 with an exception set (the run was stopped). */
static int run_released(tri_load *l) {
  int rv;
  Py_BEGIN_ALLOW_THREADS
  rv = tri_load_start(l);
  Py_END_ALLOW_THREADS
  (void)rv; /* a failed start still ends; its status says why */
  for (;;) {
    Py_BEGIN_ALLOW_THREADS
    rv = tri_load_wait(l, WAIT_SLICE_NS);
    Py_END_ALLOW_THREADS
    if (rv == 0) return 0;
    if (PyErr_CheckSignals() < 0) {
      tri_load_stop(l);
      Py_BEGIN_ALLOW_THREADS
      tri_load_wait(l, -1);
      Py_END_ALLOW_THREADS
      return -1;
    }
  }
}

/* None, or (kind, start, step, end, step_s, max_s): kind 0 const, 1 step,
 * 2 line (tri_sched.h).  Returns 0, or -1 with an exception set. */
static int parse_schedule(PyObject *o, tri_sched *s) {
  if (o == Py_None) return 0;
  if (!PyArg_ParseTuple(o, "iddddd;a schedule is (kind, start, step, end, step_s, max_s)",
                        &s->kind, &s->start, &s->step, &s->end, &s->step_s, &s->max_s))
    return -1;
  const char *problem = tri_sched_problem(s);
  if (problem) {
    PyErr_Format(PyExc_ValueError, "run_load: %s", problem);
    return -1;
  }
  return 0;
}

/* endpoints: None, or a list of (host, port, address_kind) tuples of str, str,
 * int (at most 256).  The strings stay the list's (borrowed for the call). */
static int parse_endpoints(PyObject *list, tri_load_endpoint *out, int *n) {
  *n = 0;
  if (list == Py_None) return 0;
  if (!PyList_Check(list) || PyList_GET_SIZE(list) > 256) {
    PyErr_SetString(PyExc_ValueError,
                    "run_load: endpoints must be a list of at most 256 (host, port, kind)");
    return -1;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
    PyObject *t = PyList_GET_ITEM(list, i);
    if (!PyTuple_Check(t) || !PyArg_ParseTuple(t, "ssi", &out[i].host, &out[i].port,
                                              &out[i].address_kind)) {
      if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError,
                        "run_load: each endpoint is a (host, port, kind) tuple of str, str, int");
      }
      return -1;
    }
  }
  *n = (int)PyList_GET_SIZE(list);
  return 0;
}

static void del_released(tri_load *l) {
  Py_BEGIN_ALLOW_THREADS
  tri_load_del(l);
  Py_END_ALLOW_THREADS
}

PyObject *tri_py_run_load(PyObject *m, PyObject *args, PyObject *kwargs) {
  (void)m;
  static char *kw[] = {"host", "port", "path", "mode", "payload_size",
                       "concurrency", "connections", "duration", "warmup",
                       "count", "rate", "stream_messages", "write_buffer_size",
                       "write_buffer_delay_us", "timeout", "shared_request",
                       "hist_digits", "driver_threads", "start_at_ns", "phase_ns",
                       "wire", "dialect", "requests", "authority", "compress",
                       "tls", "tls_roots", "tls_key", "tls_chain",
                       "tls_server_name", "tls_skip_verify", "rate_schedule",
                       "concurrency_schedule", "endpoints", NULL};
  tri_load_config cfg;
  tri_load_config_init(&cfg);
  const char *host, *path;
  PyObject *port_obj, *mode_obj, *port_str = NULL;
  Py_ssize_t payload;
  int concurrency, connections, shared = 0, digits = 0, driver_threads = 0;
  double duration, warmup;
  unsigned long long count = 0;
  long long wbs = cfg.write_buffer_size, wbd = cfg.write_buffer_delay_us;
  long long start_at = 0, phase = 0;
  int k = 1;
  PyObject *requests = Py_None, *rate_sched = Py_None, *conc_sched = Py_None;
  PyObject *endpoints = Py_None;
  tri_load_endpoint eps[256];
  Py_ssize_t roots_len = 0, key_len = 0, chain_len = 0;
  if (!PyArg_ParseTupleAndKeywords(
          args, kwargs, "sOzOniidd|KdiLLd$pipLLiiOzipz#z#z#zpOOO:run_load", kw, &host,
          &port_obj, &path, &mode_obj, &payload, &concurrency, &connections,
          &duration, &warmup, &count, &cfg.rate, &k, &wbs, &wbd, &cfg.timeout_s,
          &shared, &digits, &driver_threads, &start_at, &phase, &cfg.wire,
          &cfg.dialect, &requests, &cfg.authority, &cfg.compress, &cfg.tls,
          &cfg.tls_roots, &roots_len, &cfg.tls_key, &key_len, &cfg.tls_chain,
          &chain_len, &cfg.tls_server_name, &cfg.tls_skip_verify, &rate_sched,
          &conc_sched, &endpoints))
    return NULL;
  if (parse_endpoints(endpoints, eps, &cfg.nendpoints) < 0) return NULL;
  cfg.endpoints = cfg.nendpoints ? eps : NULL;
  if (parse_schedule(rate_sched, &cfg.rate_schedule) < 0 ||
      parse_schedule(conc_sched, &cfg.concurrency_schedule) < 0)
    return NULL;
  cfg.tls_roots_len = (size_t)roots_len;
  cfg.tls_key_len = (size_t)key_len;
  cfg.tls_chain_len = (size_t)chain_len;
  char channel_error[256] = "";
  cfg.error_out = channel_error;
  cfg.error_out_len = sizeof(channel_error);
  if (parse_mode(mode_obj, &cfg.mode) < 0) return NULL;
  if (payload < 0 || wbs < 0 || wbs > UINT32_MAX || wbd < 0 || wbd > UINT32_MAX) {
    PyErr_SetString(PyExc_ValueError,
                    "payload_size, write_buffer_size and write_buffer_delay_us "
                    "must be non-negative");
    return NULL;
  }
  port_str = PyObject_Str(port_obj);
  if (!port_str) return NULL;
  cfg.host = host;
  cfg.port = PyUnicode_AsUTF8(port_str);
  if (!cfg.port) {
    Py_DECREF(port_str);
    return NULL;
  }
  cfg.path = path;
  cfg.payload_size = (size_t)payload;
  cfg.concurrency = concurrency;
  cfg.connections = connections;
  cfg.duration_s = duration;
  cfg.warmup_s = warmup;
  cfg.count = count;
  cfg.stream_messages = k;
  cfg.write_buffer_size = (uint32_t)wbs;
  cfg.write_buffer_delay_us = (uint32_t)wbd;
  cfg.shared_request = shared;
  cfg.hist_digits = digits;
  cfg.driver_threads = driver_threads;
  cfg.start_at_ns = start_at;
  cfg.phase_ns = phase;
  tri_ring_entry *entries = NULL;
  if (requests != Py_None &&
      tri_py_requests(requests, &entries, &cfg.nrequests) < 0) {
    Py_DECREF(port_str);
    return NULL;
  }
  cfg.requests = entries;
  const char *problem = tri_load_config_problem(&cfg);
  if (problem) {
    PyErr_Format(PyExc_ValueError, "run_load: %s", problem);
    tri_py_free_requests(entries);
    Py_DECREF(port_str);
    return NULL;
  }
  tri_load *l;
  int rv;
  Py_BEGIN_ALLOW_THREADS
  rv = tri_load_new(&l, &cfg);
  Py_END_ALLOW_THREADS
  tri_py_free_requests(entries); /* the load copied them into its ring */
  Py_DECREF(port_str); /* tri_load_new copied the strings */
  if (rv) {
    if (channel_error[0])
      PyErr_Format(rv == TRI_ERR_NOMEM ? PyExc_MemoryError : PyExc_ValueError,
                   "run_load: %s: %s", tri_strerror(rv), channel_error);
    else
      PyErr_Format(rv == TRI_ERR_NOMEM ? PyExc_MemoryError : PyExc_ValueError,
                   "run_load: %s", tri_strerror(rv));
    return NULL;
  }
  if (run_released(l) < 0) {
    del_released(l);
    return NULL;
  }
  const char *why;
  rv = tri_load_status(l, &why);
  PyObject *result = NULL;
  if (rv) {
    PyErr_Format(rv == TRI_ERR_CONNECT ? PyExc_ConnectionError
                 : rv == TRI_ERR_NOMEM ? PyExc_MemoryError
                                       : PyExc_RuntimeError,
                 "run_load: %s", why);
  } else {
    result = result_dict(tri_load_config_of(l), tri_load_results(l));
  }
  del_released(l);
  return result;
}

const char tri_run_load_doc[] =
    "run_load(host, port, path, mode, payload_size, concurrency, connections,\n"
    "         duration, warmup, count=0, rate=0.0, stream_messages=1,\n"
    "         write_buffer_size=32768, write_buffer_delay_us=200, timeout=10.0,\n"
    "         *, shared_request=False, hist_digits=3, driver_threads=False,\n"
    "         start_at_ns=0, phase_ns=0, wire=0, dialect=0, requests=None,\n"
    "         authority=None, compress=0, tls=False, tls_roots=None,\n"
    "         tls_key=None, tls_chain=None, tls_server_name=None,\n"
    "         tls_skip_verify=False, rate_schedule=None,\n"
    "         concurrency_schedule=None, endpoints=None)\n"
    "         -> dict\n\n"
    "endpoints: a list of (host, port, address_kind) to spread the connections\n"
    "over (connection i -> endpoint i % n; host and port are then only named in\n"
    "the result's target).\n"
    "Runs the C load generator against host:port with the GIL released:\n"
    "`connections` channels (one connection and one C thread each) with\n"
    "`concurrency` calls in flight on each.  mode: 'unary' (fast path),\n"
    "'unary_stream_path' (the same call through the streaming machinery) or\n"
    "'bidi' (streams of stream_messages messages each way).  path None picks\n"
    "BenchmarkService UnaryCall (StreamCall for bidi).  duration seconds are\n"
    "measured after `warmup` seconds; count > 0 caps the measured calls.\n"
    "rate > 0 makes the loop open (calls/s in total) and latency is then also\n"
    "measured from the intended send time (the *_corrected figures).\n"
    "Closed-loop unary runs are driven from the connections' I/O threads\n"
    "(h2load's shape); driver_threads=True drives them from separate threads.\n"
    "start_at_ns (time.monotonic_ns() clock) starts the warm-up at that time\n"
    "once the connections are primed (result: start_monotonic_ns, and late_ns\n"
    "when priming ended after it); phase_ns shifts an open loop's schedule.\n"
    "requests: a ring of pre-encoded requests [(body, [(key, value), ...]),\n"
    "...] (all bytes; \"-bin\" values raw): call i of the run sends entry\n"
    "i mod len(requests), body and metadata (tri_ring.h).  authority,\n"
    "compress (0 none, 2 gzip) and tls, tls_roots/tls_key/tls_chain (PEM),\n"
    "tls_server_name, tls_skip_verify are the channels' options.\n"
    "rate_schedule / concurrency_schedule: (kind, start, step, end, step_s,\n"
    "max_s), kind 0 const, 1 step, 2 line (tri_sched.h): the open-loop rate\n"
    "or the calls in flight over time.\n"
    "Returns every figure: counts, qps, latency percentiles in ns,\n"
    "one-second series, status_codes (indexed by code), cpu, counters and\n"
    "per-call ratios, and the raw histograms as [(value_ns, count), ...].\n"
    "Raises ValueError for a bad configuration and ConnectionError when the\n"
    "target is unavailable.";
