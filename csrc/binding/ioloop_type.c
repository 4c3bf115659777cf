/*
 * ioloop_type.c: _triple.IoLoop, one I/O thread that several channels'
 * connections share (tri_loop.h).  Passed to _triple.Channel(io_loop=...).
 *
 * Ownership: an IoLoop holds one reference of its tri_loop; each channel
 * created with it holds another (tri_channel_opts.io_loop).  The thread ends
 * when the last of them goes, so dropping the IoLoop before its channels is
 * fine.  Dealloc releases the GIL: the last reference joins the thread, and
 * the thread never needs the GIL.
 */
#include "binding.h"

#include "../tri_loop.h"

/* The macros are statements clang-format cannot see. */
/* clang-format off */
typedef struct {
  PyObject_HEAD
  tri_loop *loop;
} IoLoopObject;
/* clang-format on */

static int ioloop_init(IoLoopObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"driven", NULL};
  int driven = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:IoLoop", kw, &driven)) return -1;
  if (self->loop) {
    PyErr_SetString(PyExc_RuntimeError, "IoLoop already initialised");
    return -1;
  }
  int rv = driven ? tri_loop_new_driven(&self->loop) : tri_loop_new(&self->loop);
  if (rv) {
    self->loop = NULL;
    PyErr_Format(rv == TRI_ERR_NOMEM ? PyExc_MemoryError : PyExc_OSError,
                 "cannot start an I/O thread: %s", tri_strerror(rv));
    return -1;
  }
  return 0;
}

static void ioloop_dealloc(IoLoopObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  if (self->loop) {
    tri_loop *loop = self->loop;
    self->loop = NULL;
    /* clang-format off */
    Py_BEGIN_ALLOW_THREADS
    tri_loop_unref(loop);
    Py_END_ALLOW_THREADS
    /* clang-format on */
  }
  tp->tp_free((PyObject *)self);
  Py_DECREF(tp);
}

static PyObject *get_members(IoLoopObject *self, void *closure) {
  return PyLong_FromLong(self->loop ? tri_loop_member_count(self->loop) : 0);
}

static int check_loop(IoLoopObject *self) {
  if (self->loop) return 0;
  PyErr_SetString(PyExc_ValueError, "IoLoop is not initialised");
  return -1;
}

static PyObject *ioloop_fileno(IoLoopObject *self, PyObject *unused) {
  (void)unused;
  if (check_loop(self) < 0) return NULL;
  return PyLong_FromLong(tri_loop_fd(self->loop));
}

static PyObject *ioloop_turn(IoLoopObject *self, PyObject *arg) {
  int look = PyObject_IsTrue(arg);
  if (look < 0 || check_loop(self) < 0) return NULL;
  int queued;
  /* clang-format off */
  Py_BEGIN_ALLOW_THREADS
  tri_loop_turn(self->loop, look ? 0 : -2, &queued);
  Py_END_ALLOW_THREADS
  /* clang-format on */
  return PyBool_FromLong(queued);
}

static PyObject *ioloop_hold(IoLoopObject *self, PyObject *arg) {
  int on = PyObject_IsTrue(arg);
  if (on < 0 || check_loop(self) < 0) return NULL;
  tri_loop_hold(on ? self->loop : NULL);
  Py_RETURN_NONE;
}

static PyMethodDef ioloop_methods[] = {
    {"fileno", (PyCFunction)ioloop_fileno, METH_NOARGS,
     "fileno() -> int: readable when a driven loop needs a turn."},
    {"turn", (PyCFunction)ioloop_turn, METH_O,
     "turn(look) -> bool: one turn of a driven loop (look: poll its events "
     "first, without waiting); True when it completed calls whose events "
     "its channel's poll_completions() has not returned yet."},
    {"hold", (PyCFunction)ioloop_hold, METH_O,
     "hold(flag): while set, this thread's wake-ups of the loop write "
     "nothing; it runs a turn after letting go."},
    {NULL, NULL, 0, NULL}};

static PyObject *get_inherited(IoLoopObject *self, void *closure) {
  return PyBool_FromLong(self->loop && tri_loop_inherited(self->loop));
}

static PyGetSetDef ioloop_getset[] = {
    {"members", (getter)get_members, NULL,
     "connections running on this thread now (attached and not yet left)", NULL},
    {"inherited", (getter)get_inherited, NULL,
     "True in a child of fork() for a loop made before it (its connections are the "
     "parent's: a driven one is not turned here)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot ioloop_slots[] = {
    {Py_tp_init, ioloop_init},
    {Py_tp_dealloc, ioloop_dealloc},
    {Py_tp_getset, ioloop_getset},
    {Py_tp_methods, ioloop_methods},
    {Py_tp_doc,
     "IoLoop(): one I/O thread for the connections of every Channel created "
     "with io_loop=this loop (a balancer's backends); it ends with the last "
     "of them."},
    {0, NULL}};

static PyType_Spec ioloop_spec = {
    .name = "triple_py._triple.IoLoop",
    .basicsize = sizeof(IoLoopObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = ioloop_slots,
};

int tri_ioloop_type_init(PyObject *module, tri_module_state *st) {
  return tri_add_type(module, &ioloop_spec, &st->ioloop_type, "IoLoop");
}

struct tri_loop *tri_py_ioloop(tri_module_state *st, PyObject *obj) {
  if (!PyObject_TypeCheck(obj, st->ioloop_type)) {
    PyErr_Format(PyExc_TypeError, "io_loop must be an IoLoop, not %.100s",
                 Py_TYPE(obj)->tp_name);
    return NULL;
  }
  return check_loop((IoLoopObject *)obj) < 0 ? NULL : ((IoLoopObject *)obj)->loop;
}
