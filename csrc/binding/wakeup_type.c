/*
 * wakeup_type.c: _triple.Wakeup, what an asyncio task awaiting a unary call
 * waits on instead of an asyncio.Future (triple_py/aio/_calls.py).
 *
 * It speaks the protocol a Task expects of a future it awaits: the
 * _asyncio_future_blocking flag, _loop (no get_loop: the task reads _loop
 * without a call), add_done_callback(fn, *, context), result(), cancel().  One
 * task awaits it, so it keeps one callback (the task's step).  set_result(),
 * called by the reactor when the call has an event, steps the task at once
 * when the reactor drains from its reader callback (wakeup_step_now(True):
 * outside any task), with no Future, no call_soon and no extra turn of the
 * loop; anywhere else (inside a running task) it schedules the step with
 * loop.call_soon, as a future does.  A cancelled wake-up (the task was
 * cancelled) schedules the step, whose result() raises CancelledError.
 *
 * While the flag is set, the wake-ups of the I/O threads for the calls the
 * stepped tasks start are batched (tri_wakes_defer_begin): an I/O thread is
 * woken by the drain's first call to it and, if it took that one before the
 * others came, once more when the drain ends.
 *
 * Ownership: _loop, the step and its context are strong references, cleared
 * when the step runs or is scheduled (and by the GC: a task and its step form
 * a cycle with the wake-up while it waits).
 */
#include "binding.h"

typedef struct {
  PyObject_HEAD PyObject *loop; /* _loop */
  PyObject *step;               /* the awaiting task's callback, or NULL */
  PyObject *context;            /* its context, or NULL */
  int state;                    /* 0 pending, 1 done, 2 cancelled */
  int blocking;                 /* _asyncio_future_blocking */
} WakeupObject;

/* Set while the reactor drains from its reader callback (outside any task).
 * Per thread: each thread runs its own event loop. */
static _Thread_local int step_now;

static PyObject *wakeup_new(PyTypeObject *tp, PyObject *args, PyObject *kw) {
  PyObject *loop = Py_None;
  if (!PyArg_ParseTuple(args, "|O:Wakeup", &loop)) return NULL;
  WakeupObject *self = (WakeupObject *)tp->tp_alloc(tp, 0);
  if (!self) return NULL;
  Py_INCREF(loop);
  self->loop = loop;
  return (PyObject *)self;
}

static int wakeup_traverse(WakeupObject *self, visitproc visit, void *arg) {
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(self->loop);
  Py_VISIT(self->step);
  Py_VISIT(self->context);
  return 0;
}

static int wakeup_clear(WakeupObject *self) {
  Py_CLEAR(self->loop);
  Py_CLEAR(self->step);
  Py_CLEAR(self->context);
  return 0;
}

static void wakeup_dealloc(WakeupObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  wakeup_clear(self);
  tp->tp_free(self);
  Py_DECREF(tp);
}

/* loop.call_soon(fn, self, context=context): 0, or -1 with an exception. */
static int call_soon(WakeupObject *self, PyObject *fn, PyObject *context) {
  PyObject *meth = PyObject_GetAttrString(self->loop, "call_soon");
  if (!meth) return -1;
  PyObject *args = PyTuple_Pack(2, fn, (PyObject *)self);
  PyObject *kw =
      args && context ? Py_BuildValue("{sO}", "context", context) : NULL;
  PyObject *r = args && (kw || !context) ? PyObject_Call(meth, args, kw) : NULL;
  Py_DECREF(meth);
  Py_XDECREF(args);
  Py_XDECREF(kw);
  if (!r) return -1;
  Py_DECREF(r);
  return 0;
}

/* Runs (now) or schedules (later) the step, which is taken out first. */
static int wake(WakeupObject *self, int now) {
  PyObject *step = self->step, *context = self->context;
  if (!step) return 0;
  self->step = self->context = NULL;
  int rv = 0;
  if (!now) {
    rv = call_soon(self, step, context);
  } else {
    /* A task runs: what it completes meanwhile waits for the loop.  In its
     * context, as context.run(step, self) would: entered, called, left. */
    step_now = 0;
    PyObject *r;
    if (context && PyContext_CheckExact(context)) {
      r = NULL;
      if (PyContext_Enter(context) == 0) {
        r = PyObject_CallOneArg(step, (PyObject *)self);
        if (PyContext_Exit(context) < 0) Py_CLEAR(r);
      }
    } else if (context) {
      r = PyObject_CallMethod(context, "run", "OO", step, self);
    } else {
      r = PyObject_CallOneArg(step, (PyObject *)self);
    }
    step_now = 1;
    if (!r) rv = -1;
    Py_XDECREF(r);
  }
  Py_DECREF(step);
  Py_XDECREF(context);
  return rv;
}

/* add_done_callback(fn, *, context=None); fast-call: a task adds its step on
 * every await. */
static PyObject *wakeup_add_done_callback(WakeupObject *self, PyObject *const *args,
                                          Py_ssize_t nargs, PyObject *kwnames) {
  static const tri_py_kw names[] = {TRI_PY_KW("fn"), TRI_PY_KW("context")};
  PyObject *a[2];
  if (tri_py_fastcall_args("add_done_callback", args, nargs, kwnames, names, 2, 1, 1,
                           a) < 0)
    return NULL;
  PyObject *fn = a[0], *context = a[1] == Py_None ? NULL : a[1];
  if (self->state) {
    if (call_soon(self, fn, context) < 0) return NULL;
    Py_RETURN_NONE;
  }
  Py_INCREF(fn);
  Py_XINCREF(context);
  Py_XSETREF(self->step, fn);
  Py_XSETREF(self->context, context);
  Py_RETURN_NONE;
}

static PyObject *wakeup_remove_done_callback(WakeupObject *self, PyObject *fn) {
  if (self->step != fn) return PyLong_FromLong(0);
  Py_CLEAR(self->step);
  Py_CLEAR(self->context);
  return PyLong_FromLong(1);
}

static PyObject *wakeup_result(WakeupObject *self, PyObject *unused) {
  (void)unused;
  if (self->state == 2) {
    PyObject *mod = PyImport_ImportModule("asyncio");
    PyObject *exc = mod ? PyObject_GetAttrString(mod, "CancelledError") : NULL;
    Py_XDECREF(mod);
    if (exc) {
      PyErr_SetNone(exc);
      Py_DECREF(exc);
    }
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject *wakeup_done(WakeupObject *self, PyObject *unused) {
  (void)unused;
  return PyBool_FromLong(self->state != 0);
}

static PyObject *wakeup_cancelled(WakeupObject *self, PyObject *unused) {
  (void)unused;
  return PyBool_FromLong(self->state == 2);
}

static PyObject *wakeup_cancel(WakeupObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"msg", NULL};
  PyObject *msg = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:cancel", kwlist, &msg))
    return NULL;
  if (self->state) Py_RETURN_FALSE;
  self->state = 2;
  if (wake(self, 0) < 0) return NULL;
  Py_RETURN_TRUE;
}

static PyObject *wakeup_set_result(WakeupObject *self, PyObject *value) {
  (void)value;
  if (self->state) Py_RETURN_NONE;
  self->state = 1;
  if (wake(self, step_now) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *get_blocking(WakeupObject *self, void *closure) {
  return PyBool_FromLong(self->blocking);
}

static int set_blocking(WakeupObject *self, PyObject *v, void *closure) {
  int b = v ? PyObject_IsTrue(v) : 0;
  if (b < 0) return -1;
  self->blocking = b;
  return 0;
}

static PyObject *get_loop_attr(WakeupObject *self, void *closure) {
  Py_INCREF(self->loop ? self->loop : Py_None);
  return self->loop ? self->loop : Py_None;
}

static PyGetSetDef wakeup_getset[] = {
    {"_asyncio_future_blocking", (getter)get_blocking, (setter)set_blocking,
     "the Task's flag: set when yielded to it", NULL},
    {"_loop", (getter)get_loop_attr, NULL, "the loop of the awaiting task", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef wakeup_methods[] = {
    {"add_done_callback", (PyCFunction)(void (*)(void))wakeup_add_done_callback,
     METH_FASTCALL | METH_KEYWORDS,
     "add_done_callback(fn, *, context=None): the awaiting task's step"},
    {"remove_done_callback", (PyCFunction)wakeup_remove_done_callback, METH_O,
     "remove_done_callback(fn) -> 1 if it was the step, else 0"},
    {"result", (PyCFunction)wakeup_result, METH_NOARGS,
     "None; CancelledError once cancelled"},
    {"exception", (PyCFunction)wakeup_result, METH_NOARGS,
     "None; CancelledError once cancelled"},
    {"done", (PyCFunction)wakeup_done, METH_NOARGS,
     "True once completed or cancelled"},
    {"cancelled", (PyCFunction)wakeup_cancelled, METH_NOARGS,
     "True once cancelled"},
    {"cancel", (PyCFunction)(void (*)(void))wakeup_cancel,
     METH_VARARGS | METH_KEYWORDS,
     "cancel(msg=None) -> bool: the task wakes on the next turn "
     "(CancelledError)"},
    {"set_result", (PyCFunction)wakeup_set_result, METH_O,
     "set_result(value): the call had an event; the task steps now (inside the "
     "reactor's reader callback) or on the next turn"},
    {NULL, NULL, 0, NULL}};

static PyType_Slot wakeup_slots[] = {
    {Py_tp_new, wakeup_new},
    {Py_tp_dealloc, wakeup_dealloc},
    {Py_tp_traverse, wakeup_traverse},
    {Py_tp_clear, wakeup_clear},
    {Py_tp_methods, wakeup_methods},
    {Py_tp_getset, wakeup_getset},
    {Py_tp_doc,
     "Wakeup(loop): what a task awaiting a unary call waits on (see "
     "triple_py/aio/_calls.py)."},
    {0, NULL}};

static PyType_Spec wakeup_spec = {
    .name = "triple_py._triple.Wakeup",
    .basicsize = sizeof(WakeupObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = wakeup_slots,
};

PyObject *tri_py_wakeup_step_now(PyObject *m, PyObject *arg) {
  (void)m;
  int flag = PyObject_IsTrue(arg);
  if (flag < 0) return NULL;
  int prev = step_now;
  step_now = flag;
  /* The calls the stepped tasks start wake their I/O threads at most twice
   * per drain (tri_wakes_defer_begin). */
  if (flag && !prev) tri_wakes_defer_begin();
  else if (!flag && prev) tri_wakes_defer_end();
  return PyBool_FromLong(prev);
}

int tri_wakeup_type_init(PyObject *module, tri_module_state *st) {
  return tri_add_type(module, &wakeup_spec, &st->wakeup_type, "Wakeup");
}
