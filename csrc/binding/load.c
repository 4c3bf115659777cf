/*
 * load.c: _triple.run_load, the C load generator (tri_load) for Python.
 *
 * The configuration is parsed with the GIL held; then the run happens with
 * the GIL released: the binding only takes it back every 50 ms for
 * PyErr_CheckSignals (so Ctrl-C stops the run: tri_load_stop, wait, and the
 * KeyboardInterrupt propagates, carrying the figures of the run until the stop
 * as its `load_result` attribute).  The figures are converted to a dict once
 * the threads are joined, by the table of result keys (load_results.c).
 */
#include "binding.h"

#include "../tri_hist.h"
#include "../tri_load.h"
#include "../tri_options.h"

#define WAIT_SLICE_NS (50 * 1000000LL)
#define MAX_ENDPOINTS 256 /* tri_load_limits' "endpoints" */

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

/* Stops the load and waits for its threads (the GIL released). */
static void stop_released(tri_load *l) {
  tri_load_stop(l);
  Py_BEGIN_ALLOW_THREADS
  tri_load_wait(l, -1);
  Py_END_ALLOW_THREADS
}

/* Runs the load with the GIL released, checking signals and calling `stop`
 * (NULL or None: none; borrowed) between slices: a true answer stops the
 * load early and sets *stopped.  Returns 0, or -1 with an exception set (a
 * signal handler's or stop's; the load was stopped). */
static int run_released(tri_load *l, PyObject *stop, int *stopped) {
  int rv;
  *stopped = 0;
  if (stop == Py_None) stop = NULL;
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
      stop_released(l);
      return -1;
    }
    if (stop) {
      PyObject *answer = PyObject_CallNoArgs(stop);
      int yes = answer ? PyObject_IsTrue(answer) : -1;
      Py_XDECREF(answer);
      if (yes) {
        stop_released(l);
        *stopped = yes > 0;
        return yes > 0 ? 0 : -1;
      }
    }
  }
}

/* An endpoint's address kind: an int (TRI_ADDRESS_*, checked by the load) or
 * the name of one (the choices of the channel option address_kind). */
static int address_kind_of(PyObject *o, int *kind) {
  if (PyLong_Check(o)) return tri_py_int_arg(o, 0, kind);
  static const char name[] = "address_kind";
  const tri_option *row = tri_channel_option_find(name, sizeof(name) - 1);
  const char *s = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
  *kind = s && row ? tri_option_choice(row, s) : -1;
  if (*kind >= 0) return 0;
  if (!PyErr_Occurred())
    PyErr_Format(PyExc_ValueError, "run_load: unknown endpoint address kind %R",
                 o);
  return -1;
}

/* endpoints: NULL, or a list or tuple (of at most MAX_ENDPOINTS: the table's
 * walker checked the range) of (host, port, address_kind) tuples of str, str
 * and an int or a name.  The strings stay the list's (borrowed for the call). */
static int parse_endpoints(PyObject *list, tri_load_endpoint *out, int *n) {
  *n = 0;
  if (!list) return 0;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(list);
  if (len > MAX_ENDPOINTS) {
    PyErr_SetString(PyExc_ValueError, "run_load: too many endpoints");
    return -1;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject *t = PySequence_Fast_GET_ITEM(list, i), *kind;
    if (!PyTuple_Check(t) ||
        !PyArg_ParseTuple(t, "ssO", &out[i].host, &out[i].port, &kind)) {
      if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError,
                        "run_load: each endpoint is a (host, port, kind) tuple "
                        "of str, str and an int or a name");
      }
      return -1;
    }
    if (address_kind_of(kind, &out[i].address_kind) < 0) return -1;
  }
  *n = (int)len;
  return 0;
}

/* With the exception a signal handler raised (set, the load stopped and
 * joined): attaches the figures measured until the stop to it as
 * `load_result`, a result dict with "interrupted": True.  A failure to
 * build them leaves the exception as it was. */
static void keep_partial(tri_load *l) {
  const tri_load_result *r = tri_load_results(l);
  if (!r || tri_load_status(l, NULL)) return;
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  PyObject *d = tri_py_load_result_dict(tri_load_config_of(l), r, 1);
  if (d && value) PyObject_SetAttrString(value, "load_result", d);
  Py_XDECREF(d);
  PyErr_Clear();
  PyErr_Restore(type, value, tb);
}

static void del_released(tri_load *l) {
  Py_BEGIN_ALLOW_THREADS
  tri_load_del(l);
  Py_END_ALLOW_THREADS
}

/* Reads everything but the requests into `cfg` and `eps`: 0, or -1 with an
 * exception set.  Borrowed pointers point into kwargs, *channel_kw (the
 * caller's to release) and *port_str (a new reference, the caller's too);
 * PEM views go to `pems`. */
static int parse_config(PyObject *args, PyObject *kwargs, tri_load_config *cfg,
                        PyObject **objs, PyObject **channel_kw,
                        PyObject **port_str, tri_py_pems *pems,
                        tri_load_endpoint *eps) {
  const char *host;
  PyObject *port_obj;
  *channel_kw = *port_str = NULL;
  if (!PyArg_ParseTuple(args, "sO:run_load", &host, &port_obj) ||
      tri_py_load_options_parse(kwargs, cfg, objs, channel_kw) < 0 ||
      tri_py_set_channel_options("run_load", &cfg->channel, *channel_kw, pems) ||
      parse_endpoints(objs[TRI_PY_LOAD_OBJ_ENDPOINTS], eps, &cfg->nendpoints) < 0)
    return -1;
  cfg->endpoints = cfg->nendpoints ? eps : NULL;
  if (!(*port_str = PyObject_Str(port_obj))) return -1;
  cfg->host = host;
  cfg->port = PyUnicode_AsUTF8(*port_str);
  return cfg->port ? 0 : -1;
}

/* Makes the load of `cfg` (requests: run_load's `requests`, NULL or None),
 * runs it with the GIL released and returns its figures: a new dict, or NULL
 * with an exception set. */
static PyObject *run_config(tri_load_config *cfg, PyObject *requests,
                            PyObject *stop, const char *channel_error) {
  tri_ring_entry *entries = NULL;
  if (requests && requests != Py_None &&
      tri_py_requests(requests, &entries, &cfg->nrequests) < 0)
    return NULL;
  cfg->requests = entries;
  const char *problem = tri_load_config_problem(cfg);
  if (problem) {
    PyErr_Format(PyExc_ValueError, "run_load: %s", problem);
    tri_py_free_requests(entries);
    return NULL;
  }
  tri_load *l;
  int rv;
  /* clang-format off */
  Py_BEGIN_ALLOW_THREADS
  rv = tri_load_new(&l, cfg);
  Py_END_ALLOW_THREADS
  tri_py_free_requests(entries); /* the load copied them into its ring */
  /* clang-format on */
  if (rv) {
    if (channel_error[0])
      PyErr_Format(rv == TRI_ERR_NOMEM ? PyExc_MemoryError : PyExc_ValueError,
                   "run_load: %s: %s", tri_strerror(rv), channel_error);
    else
      PyErr_Format(rv == TRI_ERR_NOMEM ? PyExc_MemoryError : PyExc_ValueError,
                   "run_load: %s", tri_strerror(rv));
    return NULL;
  }
  int stopped;
  if (run_released(l, stop, &stopped) < 0) {
    keep_partial(l);
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
    result = tri_py_load_result_dict(tri_load_config_of(l), tri_load_results(l),
                                     stopped);
  }
  del_released(l);
  return result;
}

PyObject *tri_py_run_load(PyObject *m, PyObject *args, PyObject *kwargs) {
  (void)m;
  tri_load_config cfg;
  tri_load_config_init(&cfg);
  PyObject *objs[TRI_PY_LOAD_NOBJS], *channel_kw, *port_str;
  tri_py_pems pems = {.n = 0};
  tri_load_endpoint eps[MAX_ENDPOINTS];
  char channel_error[256] = "";
  PyObject *result = NULL;
  if (parse_config(args, kwargs, &cfg, objs, &channel_kw, &port_str, &pems,
                   eps) < 0)
    goto out;
  cfg.channel.error_out = channel_error;
  cfg.channel.error_out_len = sizeof(channel_error);
  result = run_config(&cfg, objs[TRI_PY_LOAD_OBJ_REQUESTS],
                      objs[TRI_PY_LOAD_OBJ_STOP], channel_error);
out:
  tri_py_release_pems(&pems); /* the channels copied the PEM bytes */
  Py_XDECREF(channel_kw);     /* ... and the strings */
  Py_XDECREF(port_str);
  return result;
}

const char tri_run_load_doc[] =
    "run_load(host, port, /, **options) -> dict\n\n"
    "Runs the C load generator against host:port with the GIL released.\n"
    "options: the load's own keywords, the rows of LOAD_OPTIONS (name, type,\n"
    "min, max, default, choices, required, unit, doc: path, mode,\n"
    "payload_size, concurrency, connections, duration and warmup are\n"
    "required), and channel options, the names of CHANNEL_OPTIONS (wire,\n"
    "dialect, write_buffer_size, authority, compression, tls, ...) with the\n"
    "same types, ranges and defaults as Channel(): every connection of the\n"
    "load is made with them.  A value of the wrong type or out of its row's\n"
    "range is a TypeError or ValueError naming the keyword.\n"
    "`connections` channels (one connection and one C thread each) keep\n"
    "`concurrency` calls in flight each.  Closed-loop unary runs are driven\n"
    "from the connections' I/O threads (h2load's shape) unless "
    "driver_threads.\n"
    "rate > 0 makes the loop open, and latency is then also measured from the\n"
    "intended send time (the *_corrected figures).  requests: call i of the\n"
    "run sends entry i mod len(requests), body and metadata (\"-bin\" values\n"
    "raw; tri_ring.h).  Schedules: tri_sched.h.\n"
    "Returns every figure, one key per row of LOAD_RESULTS (name, type,\n"
    "unit, doc): counts, qps, latency percentiles in ns, one-second series,\n"
    "status_codes (indexed by code), cpu, counters and per-call ratios, and\n"
    "the raw histograms as [(value_ns, count), ...].\n"
    "Raises ValueError for a bad configuration and ConnectionError when the\n"
    "target is unavailable.  A signal handler's exception (KeyboardInterrupt)\n"
    "stops the run and propagates with the figures until then as its\n"
    "load_result attribute (the dict above, with interrupted True); so does a\n"
    "true answer of `stop`, asked every 50 ms from the calling thread.";
