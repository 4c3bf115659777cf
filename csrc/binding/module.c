/* module.c: the triple_py._triple extension module. */
#include "binding.h"

#include "../tri_handoff.h"
#include "../tri_libs.h"
#include "../tri_wire.h"

static struct PyModuleDef tri_module_def;

tri_module_state *tri_get_state_from_type(PyTypeObject *tp) {
  PyObject *m = PyType_GetModuleByDef(tp, &tri_module_def);
  return m ? (tri_module_state *)PyModule_GetState(m) : NULL;
}

int tri_add_type(PyObject *module, PyType_Spec *spec, PyTypeObject **slot,
                 const char *name) {
  return tri_add_subtype(module, spec, NULL, slot, name);
}

int tri_add_subtype(PyObject *module, PyType_Spec *spec, PyTypeObject *base,
                    PyTypeObject **slot, const char *name) {
  *slot = (PyTypeObject *)PyType_FromModuleAndSpec(module, spec, (PyObject *)base);
  if (!*slot) return -1;
  Py_INCREF(*slot);
  if (PyModule_AddObject(module, name, (PyObject *)*slot) < 0) {
    Py_DECREF(*slot);
    return -1;
  }
  return 0;
}

PyObject *tri_stats_to_dict(const tri_stats *st) {
  uint64_t v[32];
  int n = tri_stats_snapshot(st, v, 32);
  PyObject *d = PyDict_New();
  if (!d) return NULL;
  for (int i = 0; i < n && tri_stats_names[i]; i++) {
    PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
    if (!x || PyDict_SetItemString(d, tri_stats_names[i], x) < 0) {
      Py_XDECREF(x);
      Py_DECREF(d);
      return NULL;
    }
    Py_DECREF(x);
  }
  return d;
}

static int wait_done(tri_call *call, size_t unused, int64_t slice_ns) {
  (void)unused;
  return tri_call_wait(call, slice_ns);
}

int tri_wait_interruptible(tri_call *call, double timeout) {
  int rv = tri_wait_sliced(call, wait_done, 0, timeout < 0 ? -1 : (int64_t)(timeout * 1e9));
  if (rv < 0 && !tri_call_orphaned(call)) { /* cancelled by the signal: it ends at once */
    Py_BEGIN_ALLOW_THREADS
    tri_call_wait(call, -1);
    Py_END_ALLOW_THREADS
    tri_handoff_leave();
  }
  return rv;
}

int tri_refuse_orphaned(tri_call *call) {
  if (!tri_call_orphaned(call)) return 0;
  PyErr_SetString(PyExc_RuntimeError,
                  "this call was in flight when the process forked: it cannot complete in "
                  "the child (its channel's connection belongs to the parent)");
  return -1;
}

int tri_wait_sliced(tri_call *call, tri_slice_wait wait, size_t arg, int64_t timeout_ns) {
  const int64_t slice = TRI_PY_WAIT_SLICE_NS;
  int64_t left = timeout_ns;
  for (;;) {
    int64_t step = left < 0 || left > slice ? slice : left;
    int rv;
    Py_BEGIN_ALLOW_THREADS
    tri_handoff_yield(); /* about to block: a finished caller may run */
    rv = wait(call, arg, step);
    Py_END_ALLOW_THREADS
    if (rv == 0) {
      tri_handoff_leave(); /* back to Python code (tri_handoff.h) */
      return 1;
    }
    if (tri_refuse_orphaned(call) < 0) return -1;
    if (PyErr_CheckSignals() < 0) {
      tri_call_cancel(call, TRI_CODE_CANCELLED, "Cancelled by a signal");
      return -1;
    }
    if (left >= 0 && (left -= step) <= 0) return 0;
  }
}

static PyObject *mod_timeout_encode(PyObject *m, PyObject *arg) {
  (void)m;
  long long ns = PyLong_AsLongLong(arg);
  if (ns == -1 && PyErr_Occurred()) return NULL;
  char buf[TRI_TIMEOUT_MAX];
  int n = tri_grpc_timeout_encode(tri_timeout_round_up(ns), buf);
  return PyUnicode_FromStringAndSize(buf, n);
}

static PyObject *mod_retired_stats(PyObject *m, PyObject *unused) {
  (void)unused;
  tri_module_state *st = PyModule_GetState(m);
  return tri_stats_to_dict(&st->retired);
}

static PyObject *mod_parse_wrapper(PyObject *m, PyObject *arg) {
  (void)m;
  Py_buffer v;
  if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0) return NULL;
  const uint8_t *data;
  const char *type, *stype;
  size_t dl, tl, sl;
  PyObject *r = NULL;
  if (tri_pb_wrapper_response(v.buf, (size_t)v.len, &data, &dl, &type, &tl,
                              &stype, &sl) == 0)
    r = Py_BuildValue("(s#y#s#)", stype, (Py_ssize_t)sl, data, (Py_ssize_t)dl,
                      type, (Py_ssize_t)tl);
  else
    PyErr_SetString(PyExc_ValueError, "not a TripleResponseWrapper");
  PyBuffer_Release(&v);
  return r;
}

static PyObject *mod_library_versions(PyObject *m, PyObject *unused) {
  (void)m;
  (void)unused;
  tri_lib_version libs[TRI_LIB_COUNT];
  tri_lib_versions(libs);
  PyObject *out = PyDict_New();
  for (int i = 0; out && i < TRI_LIB_COUNT; i++) {
    PyObject *row = Py_BuildValue("{ssss}", "compiled", libs[i].compiled,
                                  "linked", libs[i].linked);
    if (!row || PyDict_SetItemString(out, libs[i].name, row) < 0) Py_CLEAR(out);
    Py_XDECREF(row);
  }
  return out;
}

/* metadata_legal(key: str, value: str | bytes) -> bool: the core's own rule
 * for a pair a call may send (tri_call_add_metadata): a legal key that the
 * transport does not own, and a printable ASCII value unless the key ends in
 * "-bin" (binary, base64 on the wire). */
static PyObject *mod_metadata_legal(PyObject *m, PyObject *args) {
  (void)m;
  const char *key, *v;
  Py_ssize_t kn, vn;
  PyObject *value;
  if (!PyArg_ParseTuple(args, "s#O", &key, &kn, &value)) return NULL;
  if (!tri_md_key_valid(key, (size_t)kn) || tri_md_key_reserved(key, (size_t)kn))
    Py_RETURN_FALSE;
  if (tri_md_key_is_bin(key, (size_t)kn)) Py_RETURN_TRUE;
  if (PyBytes_Check(value)) {
    v = PyBytes_AS_STRING(value);
    vn = PyBytes_GET_SIZE(value);
  } else if (PyUnicode_Check(value)) {
    v = PyUnicode_AsUTF8AndSize(value, &vn);
    if (!v) return NULL;
  } else {
    Py_RETURN_FALSE;
  }
  return PyBool_FromLong(tri_md_value_valid(v, (size_t)vn));
}

/* handoff_stats() -> {queued, handed, started, restarted}: the process's
 * wake-ups of finished blocking callers (tri_handoff.h). */
static PyObject *mod_handoff_stats(PyObject *m, PyObject *unused) {
  (void)m;
  (void)unused;
  tri_handoff_stats st;
  tri_handoff_stats_get(&st);
  return Py_BuildValue("{sKsKsKsKsK}", "queued", (unsigned long long)st.queued,
                       "handed", (unsigned long long)st.handed, "started",
                       (unsigned long long)st.started, "lapsed",
                       (unsigned long long)st.lapsed, "restarted",
                       (unsigned long long)st.restarted);
}

static PyMethodDef mod_methods[] = {
    {"wakeup_step_now", tri_py_wakeup_step_now, METH_O,
     "wakeup_step_now(flag) -> bool (the previous flag): while set (the aio reactor "
     "draining from its reader callback, outside any task), Wakeup.set_result steps "
     "the awaiting task at once instead of scheduling it, and the I/O threads of the "
     "calls those tasks start are woken at most twice: by the first, and when the flag "
     "is cleared."},
    {"handoff_stats", mod_handoff_stats, METH_NOARGS,
     "handoff_stats() -> {'queued', 'handed', 'started', 'lapsed', 'restarted'}: "
     "finished blocking calls whose waiter was queued, then woken by a caller's "
     "hand-off, by the I/O thread (no turn live, or its holder away too long), or by "
     "the I/O thread's stall check."},
    {"run_load", (PyCFunction)(void (*)(void))tri_py_run_load,
     METH_VARARGS | METH_KEYWORDS, tri_run_load_doc},
    {"parse_wrapper_response", mod_parse_wrapper, METH_O,
     "parse_wrapper_response(bytes) -> (serialize_type, data, type)."},
    {"library_versions", mod_library_versions, METH_NOARGS,
     "library_versions() -> {name: {'compiled': str, 'linked': str}}:\n"
     "nghttp2, openssl, zlib and protobuf-c as built against and as\n"
     "running (the bundled copies in a self-contained wheel, the system's\n"
     "otherwise)."},
    {"metadata_legal", mod_metadata_legal, METH_VARARGS,
     "metadata_legal(key, value) -> bool: whether a call may send the pair\n"
     "(the core's metadata rules)."},
    {"retired_stats", mod_retired_stats, METH_NOARGS,
     "Counters summed over channels that no longer exist."},
    {"grpc_timeout", mod_timeout_encode, METH_O,
     "grpc_timeout(ns) -> str: the grpc-timeout header value a call sends with\n"
     "ns left (rounded up to three significant digits, as every call does)."},
    {NULL, NULL, 0, NULL}};

static int mod_exec(PyObject *m) {
  tri_module_state *st = PyModule_GetState(m);
  if (tri_channel_type_init(m, st) < 0) return -1;
  if (tri_call_type_init(m, st) < 0) return -1;
  if (tri_server_type_init(m, st) < 0) return -1;
  if (tri_hist_type_init(m, st) < 0) return -1;
  if (tri_ioloop_type_init(m, st) < 0) return -1;
  if (tri_wakeup_type_init(m, st) < 0) return -1;
  if (tri_received_bytes_type_init(m, st) < 0) return -1;
  if (PyModule_AddStringConstant(m, "CORE_VERSION", TRIPLE_VERSION) < 0 ||
      PyModule_AddStringConstant(m, "USER_AGENT", TRI_USER_AGENT) < 0 ||
      PyModule_AddIntConstant(m, "CLIENT_STREAMING", TRI_CALL_CLIENT_STREAMING) < 0 ||
      PyModule_AddIntConstant(m, "SERVER_STREAMING", TRI_CALL_SERVER_STREAMING) < 0 ||
      PyModule_AddIntConstant(m, "UNARY_BODY", TRI_CALL_UNARY_BODY) < 0 ||
      PyModule_AddIntConstant(m, "RECEIVED_BYTES_MIN", (long)TRI_CALL_OWNABLE_MIN) < 0 ||
      PyModule_AddIntConstant(m, "EV_DONE", TRI_EV_DONE) < 0 ||
      PyModule_AddIntConstant(m, "EV_MESSAGE", TRI_EV_MESSAGE) < 0 ||
      PyModule_AddIntConstant(m, "EV_HEADERS", TRI_EV_HEADERS) < 0 ||
      PyModule_AddIntConstant(m, "EV_WRITABLE", TRI_EV_WRITABLE) < 0 ||
      PyModule_AddIntConstant(m, "QUIET_START", TRI_EV_QUIET_START) < 0)
    return -1;
  PyObject *table = tri_py_channel_options_table();
  if (!table || PyModule_AddObject(m, "CHANNEL_OPTIONS", table) < 0) {
    Py_XDECREF(table);
    return -1;
  }
  PyObject *load = tri_py_load_options_table();
  if (!load || PyModule_AddObject(m, "LOAD_OPTIONS", load) < 0) {
    Py_XDECREF(load);
    return -1;
  }
  PyObject *results = tri_py_load_results_table();
  if (!results || PyModule_AddObject(m, "LOAD_RESULTS", results) < 0) {
    Py_XDECREF(results);
    return -1;
  }
  PyObject *limits = tri_py_load_limits();
  if (!limits || PyModule_AddObject(m, "LOAD_LIMITS", limits) < 0) {
    Py_XDECREF(limits);
    return -1;
  }
  Py_ssize_t count = 0;
  while (tri_stats_names[count]) count++;
  PyObject *names = PyTuple_New(count);
  if (!names) return -1;
  for (Py_ssize_t i = 0; i < count; i++) {
    PyObject *s = PyUnicode_FromString(tri_stats_names[i]);
    if (!s) {
      Py_DECREF(names);
      return -1;
    }
    PyTuple_SET_ITEM(names, i, s);
  }
  if (PyModule_AddObject(m, "STATS_NAMES", names) < 0) {
    Py_DECREF(names);
    return -1;
  }
  return 0;
}

static int mod_traverse(PyObject *m, visitproc visit, void *arg) {
  tri_module_state *st = PyModule_GetState(m);
  Py_VISIT(st->channel_type);
  Py_VISIT(st->call_type);
  Py_VISIT(st->echo_server_type);
  Py_VISIT(st->hist_type);
  Py_VISIT(st->ioloop_type);
  Py_VISIT(st->wakeup_type);
  Py_VISIT(st->received_bytes_type);
  return 0;
}

static int mod_clear(PyObject *m) {
  tri_module_state *st = PyModule_GetState(m);
  Py_CLEAR(st->channel_type);
  Py_CLEAR(st->call_type);
  Py_CLEAR(st->echo_server_type);
  Py_CLEAR(st->hist_type);
  Py_CLEAR(st->ioloop_type);
  Py_CLEAR(st->wakeup_type);
  Py_CLEAR(st->received_bytes_type);
  return 0;
}

static PyModuleDef_Slot mod_slots[] = {{Py_mod_exec, mod_exec}, {0, NULL}};

static struct PyModuleDef tri_module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "triple_py._triple",
    .m_doc = "C core of triple_py: HTTP/2 gRPC/Triple client on nghttp2.",
    .m_size = sizeof(tri_module_state),
    .m_methods = mod_methods,
    .m_slots = mod_slots,
    .m_traverse = mod_traverse,
    .m_clear = mod_clear,
};

PyMODINIT_FUNC PyInit__triple(void) { return PyModuleDef_Init(&tri_module_def); }
