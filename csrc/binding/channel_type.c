/* channel_type.c: _triple.Channel, a thin owner of a tri_channel. */
#include "binding.h"
#include "../tri_connectivity.h"
#include "../tri_handoff.h"

/* Channel(host, port, /, io_loop=None, **options): the options are the rows
 * of the table (csrc/tri_options.h, _triple.CHANNEL_OPTIONS), by name; None
 * keeps a default.  io_loop, an IoLoop, runs the connections on that shared
 * thread (the channel holds a reference of the loop). */
static int channel_init(ChannelObject *self, PyObject *args, PyObject *kw) {
  const char *host, *port;
  if (!PyArg_ParseTuple(args, "ss:Channel", &host, &port)) return -1;
  if (self->ch) {
    PyErr_SetString(PyExc_RuntimeError, "Channel already initialised");
    return -1;
  }
  tri_channel_opts o;
  tri_channel_opts_init(&o);
  tri_py_pems pems = {.n = 0};
  int rv = -1;
  PyObject *loop_obj =
      kw ? PyDict_GetItemString(kw, "io_loop") : NULL; /* borrowed */
  if (loop_obj) {
    kw = PyDict_Copy(kw); /* the table's walk must not see it */
    if (!kw || PyDict_DelItemString(kw, "io_loop") < 0) goto out;
    if (loop_obj != Py_None &&
        !(o.io_loop =
              tri_py_ioloop(tri_get_state_from_type(Py_TYPE(self)), loop_obj)))
      goto out;
  }
  if (tri_py_set_channel_options("Channel", &o, kw, &pems) < 0) goto out;
  char err[256] = "";
  o.error_out = err;
  o.error_out_len = sizeof(err);
  o.host = host;
  o.port = port;
  int err_code = tri_channel_new(&self->ch, &o);
  if (err_code) {
    PyErr_Format(err_code == TRI_ERR_NOMEM ? PyExc_MemoryError : PyExc_ValueError,
                 "cannot create channel: %s", err[0] ? err : tri_strerror(err_code));
    goto out;
  }
  rv = 0;
out:
  /* The PEM bytes were copied into OpenSSL objects (or not needed). */
  tri_py_release_pems(&pems);
  if (loop_obj) Py_XDECREF(kw); /* our copy */
  return rv;
}

static void channel_dealloc(ChannelObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  if (self->weakrefs) PyObject_ClearWeakRefs((PyObject *)self);
  if (self->ch) {
    tri_channel *ch = self->ch;
    self->ch = NULL;
    Py_BEGIN_ALLOW_THREADS
    tri_channel_close(ch); /* joins I/O threads; they never need the GIL */
    Py_END_ALLOW_THREADS
    tri_module_state *st = tri_get_state_from_type(tp);
    if (st) tri_stats_accumulate(&st->retired, tri_channel_stats(ch));
    tri_channel_del(ch);
  }
  tp->tp_free(self);
  Py_DECREF(tp);
}

static int check_open(ChannelObject *self) {
  if (!self->ch) {
    PyErr_SetString(PyExc_ValueError, "Channel is not initialised");
    return -1;
  }
  return 0;
}

/* Raises ValueError naming the offending key only: values (tokens, say) never go
 * into exception text. */
static void invalid_metadata(PyObject *key) {
  if (key && PyUnicode_Check(key))
    PyErr_Format(PyExc_ValueError, "metadata was invalid: key %R (values are not shown)",
                 key);
  else
    PyErr_SetString(PyExc_ValueError,
                    "metadata was invalid: it must be a sequence of (str key, value) pairs");
}

/* Adds the (key, value) pairs of `md` to the call, as grpcio validates them:
 * ValueError for an illegal key or value, TypeError for a str "-bin" value.
 * The sequence and each pair are copied into tuples first, so objects that
 * change (or make new items) while being read cannot pull memory away. */
static int add_metadata(tri_call *call, PyObject *md) {
  if (md == Py_None) return 0;
  PyObject *seq = PySequence_Tuple(md); /* TypeError when not a sequence */
  if (!seq) return -1;
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  PyObject *pair = NULL;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PyTuple_GET_ITEM(seq, i);
    Py_CLEAR(pair);
    pair = PySequence_Check(item) ? PySequence_Tuple(item) : NULL;
    if (!pair || PyTuple_GET_SIZE(pair) != 2) {
      PyErr_Clear();
      invalid_metadata(NULL);
      goto fail;
    }
    PyObject *k = PyTuple_GET_ITEM(pair, 0), *v = PyTuple_GET_ITEM(pair, 1);
    Py_ssize_t kn, vn;
    const char *ks, *vs;
    if (!PyUnicode_Check(k) || !(ks = PyUnicode_AsUTF8AndSize(k, &kn))) {
      PyErr_Clear();
      invalid_metadata(NULL);
      goto fail;
    }
    int bin = tri_md_key_is_bin(ks, (size_t)kn);
    if (PyBytes_Check(v)) {
      vs = PyBytes_AS_STRING(v);
      vn = PyBytes_GET_SIZE(v);
    } else if (PyUnicode_Check(v) && !bin) {
      if (!(vs = PyUnicode_AsUTF8AndSize(v, &vn))) goto fail;
    } else if (bin) {
      PyErr_Format(PyExc_TypeError,
                   "Binary metadata key=\"%s\" expected bytes, got %R", ks,
                   (PyObject *)Py_TYPE(v));
      goto fail;
    } else {
      invalid_metadata(k);
      goto fail;
    }
    int rv = tri_call_add_metadata(call, ks, (size_t)kn, vs, (size_t)vn);
    if (rv == TRI_ERR_NOMEM) {
      PyErr_NoMemory();
      goto fail;
    }
    if (rv) {
      invalid_metadata(k);
      goto fail;
    }
  }
  Py_XDECREF(pair);
  Py_DECREF(seq);
  return 0;
fail:
  Py_XDECREF(pair);
  Py_DECREF(seq);
  return -1;
}

/* Seconds (None: no deadline) to nanoseconds; ValueError for NaN. */
static int timeout_to_ns(PyObject *timeout, int64_t *ns) {
  *ns = -1;
  if (timeout == Py_None) return 0;
  double t = PyFloat_AsDouble(timeout);
  if (t == -1.0 && PyErr_Occurred()) return -1;
  if (t != t) {
    PyErr_SetString(PyExc_ValueError, "timeout must be a number of seconds, not NaN");
    return -1;
  }
  *ns = t <= 0 ? 0 : (t > 9e9 ? (int64_t)9e18 : (int64_t)(t * 1e9));
  return 0;
}

/* call(path, request=None, timeout=None, metadata=None, *, wait=False,
 *      notify=0, flags=0, compression=-1): the per-call path, so METH_FASTCALL
 * (no argument tuple or keyword dict per call). */
static PyObject *channel_call(ChannelObject *self, PyObject *const *args,
                              Py_ssize_t nargs, PyObject *kwnames) {
  static const tri_py_kw names[] = {
      TRI_PY_KW("path"),     TRI_PY_KW("request"),    TRI_PY_KW("timeout"),
      TRI_PY_KW("metadata"), TRI_PY_KW("wait"),       TRI_PY_KW("notify"),
      TRI_PY_KW("flags"),    TRI_PY_KW("compression")};
  PyObject *a[8];
  if (tri_py_fastcall_args("call", args, nargs, kwnames, names, 8, 4, 1, a) < 0)
    return NULL;
  Py_ssize_t path_len;
  const char *path =
      PyUnicode_Check(a[0]) ? PyUnicode_AsUTF8AndSize(a[0], &path_len) : NULL;
  if (!path) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_TypeError,
                   "call() argument 'path' must be str, not %.100s",
                   Py_TYPE(a[0])->tp_name);
    return NULL;
  }
  PyObject *request = a[1] ? a[1] : Py_None, *timeout = a[2] ? a[2] : Py_None,
           *md = a[3] ? a[3] : Py_None;
  int wait = a[4] ? PyObject_IsTrue(a[4]) : 0, notify, flags, compress;
  if (wait < 0 || tri_py_int_arg(a[5], 0, &notify) < 0 ||
      tri_py_int_arg(a[6], 0, &flags) < 0 ||
      tri_py_int_arg(a[7], -1, &compress) < 0)
    return NULL;
  if ((flags & TRI_CALL_CLIENT_STREAMING) && request != Py_None) {
    PyErr_SetString(PyExc_ValueError,
                    "a client-streaming call takes its messages from write()");
    return NULL;
  }
  if (check_open(self) < 0) return NULL;
  if (tri_channel_closed(self->ch)) {
    PyErr_SetString(PyExc_ValueError, "Cannot invoke RPC on closed channel!");
    return NULL;
  }
  int64_t timeout_ns;
  if (timeout_to_ns(timeout, &timeout_ns) < 0) return NULL;
  if (!(flags & TRI_CALL_CLIENT_STREAMING) && request == Py_None) {
    PyErr_SetString(PyExc_TypeError,
                    "request must be bytes-like (did the serializer return bytes?), "
                    "got None");
    return NULL;
  }
  tri_call *call;
  /* Large responses are received where they become the Python object (ReceivedBytes). */
  int rv = tri_call_new(self->ch, &call, path, (size_t)path_len, timeout_ns,
                        flags | TRI_CALL_OWNABLE_RESPONSES);
  if (rv) {
    PyErr_Format(rv == TRI_ERR_NOMEM ? PyExc_MemoryError : PyExc_ValueError,
                 "cannot create call to %s: %s", path, tri_strerror(rv));
    return NULL;
  }
  if (compress >= 0) tri_call_set_compression(call, compress);
  tri_call_set_handoff(call); /* Python threads wake in turn for the GIL */
  tri_module_state *st = tri_get_state_from_type(Py_TYPE(self));
  CallObject *co = tri_call_object_new(st, (PyObject *)self, call);
  if (!co) return NULL;
  if (add_metadata(call, md) < 0) goto fail;
  if (request != Py_None) {
    if (PyObject_GetBuffer(request, &co->request, PyBUF_SIMPLE) < 0) {
      PyErr_Format(PyExc_TypeError,
                   "request must be bytes-like (did the serializer return "
                   "bytes?), got %R",
                   (PyObject *)Py_TYPE(request));
      goto fail;
    }
    tri_call_set_request_borrowed(call, co->request.buf,
                                  (size_t)co->request.len);
  }
  if (notify) {
    /* The token's reference: kept until poll_completions sees the call done. */
    Py_INCREF(co);
    co->notified = 1;
    tri_call_set_notify_events(call, co, notify); /* 1 == TRI_EV_DONE */
  }
  int ended_at_start, done = 0;
  if (co->request.obj && co->request.len >= 8192) {
    /* Large requests may be gzip-compressed inside start: not under the GIL.
     * The request buffer is pinned by `co`, so it stays valid meanwhile.  A
     * blocking call waits its first slice in the same release of the GIL
     * (one release per call), as tri_wait_sliced would. */
    Py_BEGIN_ALLOW_THREADS
    ended_at_start = tri_call_start(call);
    if (wait) done = tri_call_wait(call, TRI_PY_WAIT_SLICE_NS) == 0;
    Py_END_ALLOW_THREADS
  } else {
    ended_at_start = tri_call_start(call);
  }
  if (ended_at_start && (notify & TRI_EV_QUIET_START) && co->notified) {
    co->notified = 0; /* no notification comes: drop the token's reference */
    tri_call_object_release_request(co);
    Py_DECREF(co);
  }
  if (wait) {
    if (!done && tri_wait_interruptible(call, -1) < 0) goto fail;
    tri_call_object_release_request(co);
    if (done) tri_handoff_leave(); /* back to Python code (tri_handoff.h) */
  }
  return (PyObject *)co;
fail:
  Py_DECREF(co);
  return NULL;
}

/* generic(path, args, arg_types, serialization, timeout=None, metadata=None)
 * -> Call: a unary call whose request is a TripleRequestWrapper packed from
 * the caller's encoded arguments (the wrapper codec, non-IDL calls). */
static PyObject *channel_generic(ChannelObject *self, PyObject *a, PyObject *kw) {
  static char *kwlist[] = {"path", "args", "arg_types", "serialization",
                           "timeout", "metadata", NULL};
  const char *path, *stype;
  Py_ssize_t path_len;
  PyObject *args, *types, *timeout = Py_None, *md = Py_None;
  if (!PyArg_ParseTupleAndKeywords(a, kw, "s#OOs|OO", kwlist, &path, &path_len,
                                   &args, &types, &stype, &timeout, &md))
    return NULL;
  if (check_open(self) < 0) return NULL;
  if (tri_channel_closed(self->ch)) {
    PyErr_SetString(PyExc_ValueError, "Cannot invoke RPC on closed channel!");
    return NULL;
  }
  PyObject *aseq = PySequence_Fast(args, "args must be a sequence of bytes");
  PyObject *tseq = aseq ? PySequence_Fast(types, "arg_types must be a sequence of str") : NULL;
  PyObject *result = NULL;
  Py_ssize_t n = 0, got = 0;
  Py_buffer *views = NULL;
  const uint8_t **ptrs = NULL;
  size_t *lens = NULL;
  const char **tnames = NULL;
  if (!tseq) goto out;
  n = PySequence_Fast_GET_SIZE(aseq);
  if (PySequence_Fast_GET_SIZE(tseq) != n) {
    PyErr_SetString(PyExc_ValueError, "args and arg_types differ in length");
    goto out;
  }
  views = PyMem_Calloc((size_t)n + 1, sizeof(Py_buffer));
  ptrs = PyMem_Calloc((size_t)n + 1, sizeof(*ptrs));
  lens = PyMem_Calloc((size_t)n + 1, sizeof(*lens));
  tnames = PyMem_Calloc((size_t)n + 1, sizeof(*tnames));
  if (!views || !ptrs || !lens || !tnames) {
    PyErr_NoMemory();
    goto out;
  }
  for (; got < n; got++) {
    if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(aseq, got), &views[got],
                           PyBUF_SIMPLE) < 0)
      goto out;
    ptrs[got] = views[got].buf;
    lens[got] = (size_t)views[got].len;
    PyObject *t = PySequence_Fast_GET_ITEM(tseq, got);
    if (!PyUnicode_Check(t) || !(tnames[got] = PyUnicode_AsUTF8(t))) {
      PyErr_SetString(PyExc_TypeError, "arg_types must be str");
      got++;
      goto out;
    }
  }
  int64_t timeout_ns;
  if (timeout_to_ns(timeout, &timeout_ns) < 0) goto out;
  tri_buf *req;
  if (tri_pb_pack_wrapper_request(tri_channel_pool(self->ch), stype, ptrs, lens,
                                  tnames, (size_t)n, TRI_FRAME_PREFIX, &req)) {
    PyErr_NoMemory();
    goto out;
  }
  tri_call *call;
  if (tri_call_new(self->ch, &call, path, (size_t)path_len, timeout_ns, 0)) {
    tri_pool_put(tri_channel_pool(self->ch), req);
    PyErr_Format(PyExc_ValueError, "cannot create call to %s", path);
    goto out;
  }
  tri_call_set_request_buf(call, req);
  tri_call_set_handoff(call);
  tri_module_state *st = tri_get_state_from_type(Py_TYPE(self));
  CallObject *co = tri_call_object_new(st, (PyObject *)self, call);
  if (!co) goto out;
  if (add_metadata(call, md) < 0) {
    Py_DECREF(co);
    goto out;
  }
  tri_call_start(call);
  if (tri_wait_interruptible(call, -1) < 0) {
    Py_DECREF(co);
    goto out;
  }
  result = (PyObject *)co;
out:
  for (Py_ssize_t i = 0; i < got; i++)
    if (views[i].obj) PyBuffer_Release(&views[i]);
  PyMem_Free(views);
  PyMem_Free(ptrs);
  PyMem_Free(lens);
  PyMem_Free(tnames);
  Py_XDECREF(aseq);
  Py_XDECREF(tseq);
  return result;
}

static PyObject *channel_close(ChannelObject *self, PyObject *unused) {
  (void)unused;
  if (self->ch) {
    Py_BEGIN_ALLOW_THREADS
    tri_channel_close(self->ch);
    Py_END_ALLOW_THREADS
  }
  Py_RETURN_NONE;
}

static PyObject *channel_stats(ChannelObject *self, PyObject *unused) {
  (void)unused;
  if (check_open(self) < 0) return NULL;
  return tri_stats_to_dict(tri_channel_stats(self->ch));
}

static PyObject *channel_poll(ChannelObject *self, PyObject *args) {
  double timeout = -1;
  if (!PyArg_ParseTuple(args, "|d", &timeout)) return NULL;
  if (check_open(self) < 0) return NULL;
  void *tokens[256];
  int n;
  int64_t ns = timeout < 0 ? -1 : (int64_t)(timeout * 1e9);
  Py_BEGIN_ALLOW_THREADS
  tri_handoff_yield(); /* about to block: a finished caller may run */
  n = tri_channel_poll_completions(self->ch, tokens, 256, ns);
  Py_END_ALLOW_THREADS
  if (n < 0) Py_RETURN_NONE; /* closed and drained */
  PyObject *list = PyList_New(n);
  if (!list) return NULL; /* tokens leak only under MemoryError */
  for (int i = 0; i < n; i++) {
    CallObject *co = tokens[i];
    Py_INCREF(co);
    PyList_SET_ITEM(list, i, (PyObject *)co);
    if (co->notified && tri_call_notify_final(co->call)) {
      co->notified = 0; /* its last token: drop the token's reference */
      tri_call_object_release_request(co);
      Py_DECREF(co);
    }
  }
  return list;
}

static PyObject *channel_wake_pollers(ChannelObject *self, PyObject *unused) {
  (void)unused;
  if (check_open(self) < 0) return NULL;
  if (!tri_channel_inherited(self->ch)) /* its notify fd is the parent's too */
    tri_channel_wake_pollers(self->ch);
  Py_RETURN_NONE;
}

static PyObject *channel_notify_fd(ChannelObject *self, PyObject *unused) {
  (void)unused;
  if (check_open(self) < 0) return NULL;
  return PyLong_FromLong(tri_channel_notify_fd(self->ch));
}

static PyObject *channel_state(ChannelObject *self, PyObject *args) {
  int try_to_connect = 0;
  if (!PyArg_ParseTuple(args, "|p", &try_to_connect)) return NULL;
  if (check_open(self) < 0) return NULL;
  int state;
  Py_BEGIN_ALLOW_THREADS
  state = tri_channel_state(self->ch, try_to_connect);
  Py_END_ALLOW_THREADS
  return PyLong_FromLong(state);
}

static PyObject *channel_is_closed(ChannelObject *self, void *closure) {
  (void)closure;
  return PyBool_FromLong(!self->ch || tri_channel_closed(self->ch));
}

static PyMethodDef channel_methods[] = {
    {"call", (PyCFunction)(void (*)(void))channel_call,
     METH_FASTCALL | METH_KEYWORDS,
     "call(path, request=None, timeout=None, metadata=None, *, wait=False, "
     "notify=0, flags=0, compression=-1) -> Call\n\nStarts a call.  Without "
     "CLIENT_STREAMING in flags, `request` (bytes-like) is the one request "
     "message, sent without a copy on the unary fast path.  With wait, "
     "blocks (GIL released) until the call completes."},
    {"generic", (PyCFunction)(void (*)(void))channel_generic,
     METH_VARARGS | METH_KEYWORDS,
     "generic(path, args, arg_types, serialization, timeout=None, "
     "metadata=None) -> Call: a wrapper-codec (non-IDL) unary call."},
    {"close", (PyCFunction)channel_close, METH_NOARGS,
     "Fails pending calls with CANCELLED and joins the I/O threads."},
    {"stats", (PyCFunction)channel_stats, METH_NOARGS,
     "Counters of this channel as a dict."},
    {"poll_completions", (PyCFunction)channel_poll, METH_VARARGS,
     "poll_completions(timeout=-1) -> list of Call, or None once closed.\n\n"
     "Each call that asked for events (notify=mask) appears when one of them "
     "happened; look at its state (done, read_nowait, initial_metadata)."},
    {"wake_pollers", (PyCFunction)channel_wake_pollers, METH_NOARGS,
     "Makes a waiting (or the next) poll_completions() return [] at once."},
    {"state", (PyCFunction)channel_state, METH_VARARGS,
     "state(try_to_connect=False) -> int: grpcio's ChannelConnectivity value "
     "(0 IDLE, 1 CONNECTING, 2 READY, 3 TRANSIENT_FAILURE, 4 SHUTDOWN)."},
    {"notify_fd", (PyCFunction)channel_notify_fd, METH_NOARGS,
     "An eventfd that is readable when notified calls completed."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef channel_getset[] = {
    {"closed", (getter)channel_is_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMemberDef channel_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(ChannelObject, weakrefs),
     READONLY, NULL},
    {NULL, 0, 0, 0, NULL}};

static PyType_Slot channel_slots[] = {
    {Py_tp_init, channel_init},
    {Py_tp_dealloc, channel_dealloc},
    {Py_tp_methods, channel_methods},
    {Py_tp_getset, channel_getset},
    {Py_tp_members, channel_members},
    {Py_tp_doc,
     "Channel(host, port, /, **options): the C core's channel; the options "
     "are the names of CHANNEL_OPTIONS."},
    {0, NULL}};

static PyType_Spec channel_spec = {
    .name = "triple_py._triple.Channel",
    .basicsize = sizeof(ChannelObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .slots = channel_slots,
};

int tri_channel_type_init(PyObject *module, tri_module_state *st) {
  st->channel_type =
      (PyTypeObject *)PyType_FromModuleAndSpec(module, &channel_spec, NULL);
  if (!st->channel_type) return -1;
  Py_INCREF(st->channel_type);
  if (PyModule_AddObject(module, "Channel", (PyObject *)st->channel_type) < 0) {
    Py_DECREF(st->channel_type);
    return -1;
  }
  return 0;
}
