/* call_type.c: _triple.Call, the Python handle of one tri_call. */
#include "binding.h"

#include "../tri_clock.h"

#include "../tri_handoff.h"

CallObject *tri_call_object_new(tri_module_state *st, PyObject *channel,
                                tri_call *call) {
  CallObject *co = PyObject_New(CallObject, st->call_type);
  if (!co) {
    tri_call_release(call); /* not started: released at once */
    return NULL;
  }
  co->call = call;
  Py_INCREF(channel);
  co->channel = channel;
  co->request.obj = NULL;
  co->notified = 0;
  co->received = NULL;
  return co;
}

void tri_call_object_release_request(CallObject *self) {
  if (self->request.obj && tri_call_done(self->call))
    PyBuffer_Release(&self->request);
}

static void call_dealloc(CallObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  if (self->call) {
    tri_call *call = self->call;
    self->call = NULL;
    if (tri_call_done(call) || tri_call_orphaned(call)) {
      tri_call_release(call); /* nothing to wait for: no GIL round trip */
    } else {
      /* Not done: cancel and wait (GIL released) so the core lets go of the
       * request bytes before the view is released. */
      Py_BEGIN_ALLOW_THREADS
      tri_call_release(call);
      Py_END_ALLOW_THREADS
      tri_handoff_leave();
    }
  }
  if (self->request.obj) PyBuffer_Release(&self->request);
  Py_XDECREF(self->received);
  Py_XDECREF(self->channel);
  PyObject_Free(self);
  Py_DECREF(tp);
}

static int require_done(CallObject *self) {
  if (!tri_call_done(self->call)) {
    PyErr_SetString(PyExc_RuntimeError, "call has not completed yet");
    return -1;
  }
  tri_call_object_release_request(self);
  return 0;
}

static PyObject *call_wait(CallObject *self, PyObject *args) {
  PyObject *timeout = Py_None;
  if (!PyArg_ParseTuple(args, "|O", &timeout)) return NULL;
  double t = -1;
  if (timeout != Py_None) {
    t = PyFloat_AsDouble(timeout);
    if (t == -1.0 && PyErr_Occurred()) return NULL;
    if (t < 0) t = 0;
  }
  int rv = tri_wait_interruptible(self->call, t);
  if (rv < 0) return NULL;
  if (rv) tri_call_object_release_request(self);
  return PyBool_FromLong(rv);
}

static PyObject *call_done(CallObject *self, PyObject *unused) {
  (void)unused;
  return PyBool_FromLong(tri_call_done(self->call));
}

static PyObject *call_notifying(CallObject *self, PyObject *unused) {
  (void)unused;
  return PyBool_FromLong(self->notified);
}

static PyObject *call_cancel(CallObject *self, PyObject *args) {
  int code = TRI_CODE_CANCELLED;
  if (!PyArg_ParseTuple(args, "|i", &code)) return NULL;
  return PyBool_FromLong(
      tri_call_cancel(self->call, code, "Locally cancelled by application!"));
}

static PyObject *call_code(CallObject *self, PyObject *unused) {
  (void)unused;
  if (require_done(self) < 0) return NULL;
  return PyLong_FromLong(tri_call_code(self->call));
}

static PyObject *call_unprocessed(CallObject *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromLong(tri_call_unprocessed(self->call));
}

static PyObject *call_response_started(CallObject *self, PyObject *unused) {
  (void)unused;
  return PyBool_FromLong(tri_call_response_started(self->call));
}

static PyObject *call_time_left(CallObject *self, PyObject *unused) {
  (void)unused;
  int64_t deadline = tri_call_deadline(self->call);
  if (!deadline) Py_RETURN_NONE;
  int64_t left = deadline - tri__now();
  return PyFloat_FromDouble(left > 0 ? (double)left / 1e9 : 0.0);
}

static PyObject *call_details(CallObject *self, PyObject *unused) {
  (void)unused;
  if (require_done(self) < 0) return NULL;
  const char *p;
  size_t n;
  tri_call_message(self->call, &p, &n);
  return PyUnicode_DecodeUTF8(p, (Py_ssize_t)n, "replace");
}

/* The object of message `m`, taken from the call: the buffer itself when the
 * core received the message into one of its own (ReceivedBytes, no copy),
 * else a bytes copy, the buffer going back to the call's pool. */
static PyObject *message_object(CallObject *self, tri_buf *m) {
  if (tri_buf_detached(m)) {
    PyObject *r = tri_py_received_bytes(tri_get_state_from_type(Py_TYPE(self)), m);
    if (r) return r;
  }
  PyObject *b = PyBytes_FromStringAndSize((const char *)tri_buf_begin(m), (Py_ssize_t)m->len);
  tri_call_msg_release(self->call, m);
  return b;
}

/* response() -> bytes or None.  A large message is taken from the core once
 * (message_object) and kept here, so every later response() and
 * memoryview(call) give the same object. */
static PyObject *call_response(CallObject *self, PyObject *unused) {
  (void)unused;
  if (require_done(self) < 0) return NULL;
  if (self->received) return Py_NewRef(self->received);
  tri_buf *taken = tri_call_take_response(self->call);
  if (taken) {
    self->received = message_object(self, taken);
    return Py_XNewRef(self->received);
  }
  const uint8_t *p;
  size_t n;
  tri_call_response(self->call, &p, &n);
  if (!p) Py_RETURN_NONE;
  return PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
}

/* Returns (initial, trailing): tuples of (key, value) pairs; values of
 * "-bin" keys are bytes, others str. */
static PyObject *call_metadata(CallObject *self, PyObject *unused) {
  (void)unused;
  if (require_done(self) < 0) return NULL;
  PyObject *lists[2] = {PyList_New(0), PyList_New(0)};
  PyObject *result = NULL;
  if (!lists[0] || !lists[1]) goto out;
  size_t it = 0;
  int kind;
  const char *k, *v;
  size_t kn, vn;
  while (tri_call_md_next(self->call, &it, &kind, &k, &kn, &v, &vn) == 0) {
    PyObject *val = tri_md_key_is_bin(k, kn)
                        ? PyBytes_FromStringAndSize(v, (Py_ssize_t)vn)
                        : PyUnicode_DecodeUTF8(v, (Py_ssize_t)vn, "replace");
    PyObject *pair = val ? Py_BuildValue("(s#N)", k, (Py_ssize_t)kn, val) : NULL;
    if (!pair || PyList_Append(lists[kind == TRI_MD_TRAILING], pair) < 0) {
      Py_XDECREF(pair);
      goto out;
    }
    Py_DECREF(pair);
  }
  PyObject *a = PyList_AsTuple(lists[0]), *b = PyList_AsTuple(lists[1]);
  if (a && b) result = PyTuple_Pack(2, a, b);
  Py_XDECREF(a);
  Py_XDECREF(b);
out:
  Py_XDECREF(lists[0]);
  Py_XDECREF(lists[1]);
  return result;
}

static int wait_writable(tri_call *call, size_t n, int64_t slice_ns) {
  return tri_call_wait_writable(call, n, slice_ns);
}

static int wait_headers(tri_call *call, size_t unused, int64_t slice_ns) {
  (void)unused;
  return tri_call_wait_headers(call, slice_ns);
}

/* Waits, interruptibly, until writing n bytes will not be held back by flow
 * control (or the call ended).  0, or -1 with an exception (Ctrl-C: the call
 * is cancelled). */
static int wait_room(CallObject *self, size_t n) {
  if (tri_call_write_would_not_block(self->call, n)) return 0;
  return tri_wait_sliced(self->call, wait_writable, n, -1) < 0 ? -1 : 0;
}

/* write(data) -> bool: False when the call has already ended (its status
 * tells why).  Raises ValueError after done_writing.  A write the peer's flow
 * control holds back waits in slices: Ctrl-C cancels the call, and the
 * call's deadline ends the wait. */
static PyObject *call_write(CallObject *self, PyObject *arg) {
  Py_buffer view;
  if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
    PyErr_Format(PyExc_TypeError,
                 "message must be bytes-like (did the serializer return "
                 "bytes?), got %R", (PyObject *)Py_TYPE(arg));
    return NULL;
  }
  int rv;
  if (tri_call_write_would_not_block(self->call, (size_t)view.len)) {
    rv = tri_call_write(self->call, view.buf, (size_t)view.len);
  } else {
    if (wait_room(self, (size_t)view.len) < 0) {
      PyBuffer_Release(&view);
      return NULL;
    }
    Py_BEGIN_ALLOW_THREADS /* another writer may still take the room first */
    rv = tri_call_write(self->call, view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
  }
  PyBuffer_Release(&view);
  if (rv == TRI_ERR_TOO_LARGE) {
    tri_call_cancel(self->call, TRI_CODE_RESOURCE_EXHAUSTED,
                    "Sent message larger than max");
    Py_RETURN_FALSE;
  }
  if (rv == TRI_ERR_CLOSED && !tri_call_done(self->call)) {
    /* Refused by a cancel() that is taking effect (the call ends at once:
     * report it like any ended call), or after done_writing(). */
    if (tri_call_cancel_requested(self->call) &&
        tri_wait_interruptible(self->call, 5.0) == 1)
      Py_RETURN_FALSE;
    PyErr_SetString(PyExc_ValueError, "write after done_writing()");
    return NULL;
  }
  if (rv == TRI_ERR_INVALID) {
    PyErr_SetString(PyExc_ValueError, "not a client-streaming call");
    return NULL;
  }
  return PyBool_FromLong(rv == 0);
}

static PyObject *writer_op(CallObject *self, int (*op)(tri_call *)) {
  int rv;
  if (wait_room(self, 0) < 0) return NULL;
  Py_BEGIN_ALLOW_THREADS
  rv = op(self->call);
  Py_END_ALLOW_THREADS
  if (rv == TRI_ERR_INVALID) {
    PyErr_SetString(PyExc_ValueError, "not a client-streaming call");
    return NULL;
  }
  return PyBool_FromLong(rv == 0);
}

static PyObject *call_flush(CallObject *self, PyObject *unused) {
  (void)unused;
  return writer_op(self, tri_call_flush);
}

static PyObject *call_done_writing(CallObject *self, PyObject *unused) {
  (void)unused;
  return writer_op(self, tri_call_done_writing);
}

/* read(timeout=None) -> bytes, or None at the end of the stream. */
static PyObject *call_read(CallObject *self, PyObject *args) {
  double timeout = -1;
  if (!PyArg_ParseTuple(args, "|d", &timeout)) return NULL;
  tri_buf *m = NULL;
  int rv = tri_call_read(self->call, 0, &m); /* a message may be waiting */
  if (rv == TRI_ERR_TIMEOUT) {
    const int64_t slice = 50 * 1000000LL;
    int64_t left = timeout < 0 ? -1 : (int64_t)(timeout * 1e9);
    for (;;) {
      int64_t step = left < 0 || left > slice ? slice : left;
      Py_BEGIN_ALLOW_THREADS
      tri_handoff_yield(); /* about to block: a finished caller may run */
      rv = tri_call_read(self->call, step, &m);
      Py_END_ALLOW_THREADS
      if (rv != TRI_ERR_TIMEOUT) break;
      if (tri_refuse_orphaned(self->call) < 0) return NULL;
      if (PyErr_CheckSignals() < 0) {
        tri_call_cancel(self->call, TRI_CODE_CANCELLED, "Cancelled by a signal");
        return NULL;
      }
      if (left >= 0 && (left -= step) <= 0) {
        PyErr_SetString(PyExc_TimeoutError, "no message within the timeout");
        return NULL;
      }
    }
  }
  if (rv == TRI_ERR_INVALID) {
    PyErr_SetString(PyExc_ValueError, "not a server-streaming call");
    return NULL;
  }
  if (rv == 0) {
    tri_call_object_release_request(self);
    Py_RETURN_NONE;
  }
  return message_object(self, m);
}

/* reader_waits(flag): an event loop's reader starts (True) or stops (False)
 * waiting for a message; see tri_call_reader_waits. */
static PyObject *call_reader_waits(CallObject *self, PyObject *arg) {
  int waiting = PyObject_IsTrue(arg);
  if (waiting < 0) return NULL;
  tri_call_reader_waits(self->call, waiting);
  Py_RETURN_NONE;
}

/* read_nowait() -> bytes, None at the end of the stream, or False when no
 * message is there yet.  Never blocks (for event loops). */
static PyObject *call_read_nowait(CallObject *self, PyObject *unused) {
  (void)unused;
  tri_buf *m = NULL;
  int rv = tri_call_read(self->call, 0, &m);
  if (rv == TRI_ERR_TIMEOUT) Py_RETURN_FALSE;
  if (rv == TRI_ERR_INVALID) {
    PyErr_SetString(PyExc_ValueError, "not a server-streaming call");
    return NULL;
  }
  if (rv == 0) Py_RETURN_NONE;
  return message_object(self, m);
}

/* can_write(n) -> bool: a write of n bytes will not block. */
static PyObject *call_can_write(CallObject *self, PyObject *arg) {
  Py_ssize_t n = PyLong_AsSsize_t(arg);
  if (n < 0 && PyErr_Occurred()) return NULL;
  return PyBool_FromLong(tri_call_write_would_not_block(self->call, (size_t)n));
}

/* initial_metadata(timeout=None): waits for the response headers. */
static PyObject *call_initial_metadata(CallObject *self, PyObject *args) {
  double timeout = -1;
  if (!PyArg_ParseTuple(args, "|d", &timeout)) return NULL;
  int64_t ns = timeout < 0 ? -1 : (int64_t)(timeout * 1e9);
  int rv = tri_wait_sliced(self->call, wait_headers, 0, ns); /* Ctrl-C interrupts */
  if (rv < 0) return NULL;
  if (rv == 0) Py_RETURN_NONE;
  PyObject *list = PyList_New(0);
  if (!list) return NULL;
  size_t it = 0;
  const char *k, *v;
  size_t kn, vn;
  while (tri_call_initial_md_next(self->call, &it, &k, &kn, &v, &vn) == 0) {
    PyObject *val = tri_md_key_is_bin(k, kn)
                        ? PyBytes_FromStringAndSize(v, (Py_ssize_t)vn)
                        : PyUnicode_DecodeUTF8(v, (Py_ssize_t)vn, "replace");
    PyObject *pair = val ? Py_BuildValue("(s#N)", k, (Py_ssize_t)kn, val) : NULL;
    if (!pair || PyList_Append(list, pair) < 0) {
      Py_XDECREF(pair);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(pair);
  }
  PyObject *t = PyList_AsTuple(list);
  Py_DECREF(list);
  return t;
}

/* The buffer protocol (memoryview(call)): a finished unary call's response
 * message, read-only and in place (no copy).  The view holds a reference of
 * the call, whose message stays until the call is released. */
static int call_getbuffer(CallObject *self, Py_buffer *view, int flags) {
  if (!tri_call_done(self->call)) {
    PyErr_SetString(PyExc_BufferError, "call has not completed yet");
    return -1;
  }
  const uint8_t *p;
  size_t n;
  if (self->received) { /* taken by response(): its storage is the message */
    p = (const uint8_t *)PyBytes_AS_STRING(self->received);
    n = (size_t)PyBytes_GET_SIZE(self->received);
  } else {
    tri_call_response(self->call, &p, &n);
  }
  if (!p) {
    PyErr_SetString(PyExc_BufferError, "the call has no response message");
    return -1;
  }
  return PyBuffer_FillInfo(view, (PyObject *)self, (void *)p, (Py_ssize_t)n, 1,
                           flags);
}

static PyMethodDef call_methods[] = {
    {"write", (PyCFunction)call_write, METH_O,
     "write(data) -> bool: queue one request message (coalescing writer)."},
    {"flush", (PyCFunction)call_flush, METH_NOARGS,
     "Send queued request bytes now."},
    {"done_writing", (PyCFunction)call_done_writing, METH_NOARGS,
     "Flush and half-close the request stream."},
    {"read_nowait", (PyCFunction)call_read_nowait, METH_NOARGS,
     "read_nowait() -> bytes | None (end) | False (nothing yet)."},
    {"reader_waits", (PyCFunction)call_reader_waits, METH_O,
     "reader_waits(flag): an event loop's reader starts (True) or stops (False) waiting "
     "for a message; meanwhile request writes follow Nagle's rule (calls must pair up)."},
    {"can_write", (PyCFunction)call_can_write, METH_O,
     "can_write(n) -> bool: writing n bytes now will not block."},
    {"read", (PyCFunction)call_read, METH_VARARGS,
     "read(timeout=None) -> bytes | None: next response message."},
    {"initial_metadata", (PyCFunction)call_initial_metadata, METH_VARARGS,
     "initial_metadata(timeout=None): response headers once they arrived."},
    {"wait", (PyCFunction)call_wait, METH_VARARGS,
     "wait(timeout=None) -> bool: block (GIL released) until done."},
    {"done", (PyCFunction)call_done, METH_NOARGS, "True once completed."},
    {"notifying", (PyCFunction)call_notifying, METH_NOARGS,
     "True while the call will still appear in Channel.poll_completions() (False once "
     "polled done, or when it ended inside call() with notify=...|QUIET_START)."},
    {"cancel", (PyCFunction)call_cancel, METH_VARARGS,
     "cancel(code=CANCELLED) -> bool: reset the stream if still running."},
    {"code", (PyCFunction)call_code, METH_NOARGS, "Final status code (int)."},
    {"details", (PyCFunction)call_details, METH_NOARGS, "Status message."},
    {"time_left", (PyCFunction)call_time_left, METH_NOARGS,
     "Seconds left until the call's deadline (0 when past), or None without one."},
    {"response_started", (PyCFunction)call_response_started, METH_NOARGS,
     "True once response headers arrived that were not a trailers-only response "
     "(gRPC commits the call then: no retry)."},
    {"unprocessed", (PyCFunction)call_unprocessed, METH_NOARGS,
     "Once done: 0, or why no server saw the call (1 refused, 2 no connection)."},
    {"response", (PyCFunction)call_response, METH_NOARGS,
     "Response message bytes, or None."},
    {"metadata", (PyCFunction)call_metadata, METH_NOARGS,
     "(initial_metadata, trailing_metadata)."},
    {NULL, NULL, 0, NULL}};

static PyType_Slot call_slots[] = {
    {Py_tp_dealloc, call_dealloc},
    {Py_bf_getbuffer, call_getbuffer},
    {Py_tp_methods, call_methods},
    {Py_tp_doc, "Call: one RPC of the C core (created by Channel.unary)."},
    {0, NULL}};

static PyType_Spec call_spec = {
    .name = "triple_py._triple.Call",
    .basicsize = sizeof(CallObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = call_slots,
};

int tri_call_type_init(PyObject *module, tri_module_state *st) {
  st->call_type =
      (PyTypeObject *)PyType_FromModuleAndSpec(module, &call_spec, NULL);
  if (!st->call_type) return -1;
  Py_INCREF(st->call_type);
  if (PyModule_AddObject(module, "Call", (PyObject *)st->call_type) < 0) {
    Py_DECREF(st->call_type);
    return -1;
  }
  return 0;
}
