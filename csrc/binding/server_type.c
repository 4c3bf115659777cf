/* server_type.c: _triple.EchoServer, a thin owner of a tri_server (the
 * embedded BenchmarkService echo server, csrc/tri_server.h).  The server runs
 * on its own C threads and never touches Python; start, stop and the final
 * join run with the GIL released. */
#include "binding.h"

#include "../tri_server.h"

typedef struct {
  PyObject_HEAD
  tri_server *srv;
} EchoServerObject;

static int server_init(EchoServerObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"host", "port", "threads", NULL};
  const char *host = "127.0.0.1";
  int port = 0, threads = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|sii", kwlist, &host, &port,
                                   &threads))
    return -1;
  if (self->srv) {
    PyErr_SetString(PyExc_RuntimeError, "EchoServer already initialised");
    return -1;
  }
  tri_server_opts o;
  tri_server_opts_init(&o);
  o.host = host;
  o.port = port;
  o.threads = threads;
  int rv = tri_server_new(&self->srv, &o);
  if (rv) {
    PyErr_Format(rv == TRI_ERR_NOMEM ? PyExc_MemoryError : PyExc_ValueError,
                 "cannot create the echo server (port 0..65535, threads "
                 "1..64): %s",
                 tri_strerror(rv));
    self->srv = NULL;
    return -1;
  }
  return 0;
}

static void server_dealloc(EchoServerObject *self) {
  PyTypeObject *tp = Py_TYPE(self);
  if (self->srv) {
    tri_server *srv = self->srv;
    self->srv = NULL;
    Py_BEGIN_ALLOW_THREADS
    tri_server_del(srv); /* joins its threads; they never need the GIL */
    Py_END_ALLOW_THREADS
  }
  tp->tp_free(self);
  Py_DECREF(tp);
}

static int check_init(EchoServerObject *self) {
  if (!self->srv) {
    PyErr_SetString(PyExc_ValueError, "EchoServer is not initialised");
    return -1;
  }
  return 0;
}

static PyObject *server_start(EchoServerObject *self, PyObject *unused) {
  (void)unused;
  if (check_init(self) < 0) return NULL;
  int rv;
  Py_BEGIN_ALLOW_THREADS
  rv = tri_server_start(self->srv);
  Py_END_ALLOW_THREADS
  if (rv == TRI_ERR_INVALID) {
    PyErr_SetString(PyExc_RuntimeError,
                    "EchoServer was started already (it cannot restart)");
    return NULL;
  }
  if (rv) {
    PyErr_SetString(PyExc_OSError, tri_server_errstr(self->srv));
    return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject *server_stop(EchoServerObject *self, PyObject *unused) {
  (void)unused;
  if (check_init(self) < 0) return NULL;
  Py_BEGIN_ALLOW_THREADS
  tri_server_stop(self->srv);
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

static PyObject *server_stats(EchoServerObject *self, PyObject *unused) {
  (void)unused;
  if (check_init(self) < 0) return NULL;
  return tri_stats_to_dict(tri_server_stats(self->srv));
}

static PyObject *server_port(EchoServerObject *self, void *closure) {
  (void)closure;
  if (check_init(self) < 0) return NULL;
  return PyLong_FromLong(tri_server_port(self->srv));
}

static PyMethodDef server_methods[] = {
    {"start", (PyCFunction)server_start, METH_NOARGS,
     "Binds, listens and starts the server threads (GIL released).  Raises "
     "OSError when the address cannot be bound."},
    {"stop", (PyCFunction)server_stop, METH_NOARGS,
     "Closes every connection and joins the threads (GIL released).  "
     "Idempotent."},
    {"stats", (PyCFunction)server_stats, METH_NOARGS,
     "Counters of the server as a dict (connects, calls, bytes, ...)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef server_getset[] = {
    {"port", (getter)server_port, NULL,
     "The bound port once started (the real one for port=0), else 0.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyType_Slot server_slots[] = {
    {Py_tp_init, server_init},
    {Py_tp_dealloc, server_dealloc},
    {Py_tp_methods, server_methods},
    {Py_tp_getset, server_getset},
    {Py_tp_doc,
     "EchoServer(host=\"127.0.0.1\", port=0, threads=1): the embedded "
     "benchmark.BenchmarkService echo server (gRPC and Triple over h2c)."},
    {0, NULL}};

static PyType_Spec server_spec = {
    .name = "triple_py._triple.EchoServer",
    .basicsize = sizeof(EchoServerObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = server_slots,
};

int tri_server_type_init(PyObject *module, tri_module_state *st) {
  return tri_add_type(module, &server_spec, &st->echo_server_type, "EchoServer");
}
