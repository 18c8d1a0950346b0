/* _ext_buffer.c: the buffer protocol where the stable ABI has it (CPython
 * >= 3.11, its functions found at run time) and the 3.10 replacement for
 * bytes-like inputs (rx_buffer); the atexit flag that stands in for
 * _Py_IsFinalizing. */
#include "_ext.h"

#include <dlfcn.h>
#include <stdatomic.h>

#if !defined(Py_LIMITED_API) || Py_LIMITED_API + 0 >= 0x030B0000
/* The headers declare Py_buffer: rx_pybuffer must be it. */
_Static_assert(sizeof(rx_pybuffer) == sizeof(Py_buffer), "rx_pybuffer is not Py_buffer");
_Static_assert(offsetof(rx_pybuffer, len) == offsetof(Py_buffer, len), "rx_pybuffer.len");
_Static_assert(offsetof(rx_pybuffer, ndim) == offsetof(Py_buffer, ndim), "rx_pybuffer.ndim");
_Static_assert(offsetof(rx_pybuffer, format) == offsetof(Py_buffer, format), "rx_pybuffer.format");
_Static_assert(offsetof(rx_pybuffer, internal) == offsetof(Py_buffer, internal), "rx_pybuffer.internal");
_Static_assert(RX_PYBUF_FORMAT == PyBUF_FORMAT && RX_PYBUF_ND == PyBUF_ND && RX_PYBUF_STRIDES == PyBUF_STRIDES &&
                   RX_PYBUF_C_CONTIGUOUS == PyBUF_C_CONTIGUOUS && RX_PYBUF_F_CONTIGUOUS == PyBUF_F_CONTIGUOUS,
               "PyBUF_* flags");
#endif

typedef int (*check_fn)(PyObject *);
typedef int (*get_fn)(PyObject *, rx_pybuffer *, int);
typedef void (*release_fn)(rx_pybuffer *);

/* PyObject_CheckBuffer, PyObject_GetBuffer, PyBuffer_Release: set when the
 * running interpreter is 3.11 or newer (in its stable ABI there), NULL on
 * 3.10. Looked up rather than linked, so that the module's imports stay
 * within the 3.10 stable ABI (abi3audit checks them). */
static check_fn check_buffer;
static get_fn get_buffer;
static release_fn release_buffer;
static atomic_int exiting;

int rx_buffer_api(void)
{
    return get_buffer != NULL;
}

int rx_py_exiting(void)
{
    return atomic_load(&exiting);
}

static PyObject *mark_exiting(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    atomic_store(&exiting, 1);
    Py_RETURN_NONE;
}

static PyMethodDef mark_exiting_def = { "_mark_exiting", mark_exiting, METH_NOARGS, NULL };

/* REEL_PY_NO_BUFFER_PROTOCOL=1 (tests): behave as on 3.10 on any version. */
static int buffer_protocol_wanted(void)
{
    PyObject *hex = PySys_GetObject("hexversion"); /* borrowed */
    long v = hex ? PyLong_AsLong(hex) : 0;
    if (v == -1 && PyErr_Occurred()) PyErr_Clear();
    const char *off = getenv("REEL_PY_NO_BUFFER_PROTOCOL");
    return v >= 0x030B0000 && !(off && *off && strcmp(off, "0") != 0);
}

int rx_buffer_init(PyObject *module)
{
    check_buffer = NULL;
    get_buffer = NULL;
    release_buffer = NULL;
    if (buffer_protocol_wanted()) {
        check_fn c = (check_fn)dlsym(RTLD_DEFAULT, "PyObject_CheckBuffer");
        get_fn g = (get_fn)dlsym(RTLD_DEFAULT, "PyObject_GetBuffer");
        release_fn r = (release_fn)dlsym(RTLD_DEFAULT, "PyBuffer_Release");
        if (c && g && r) {
            check_buffer = c;
            get_buffer = g;
            release_buffer = r;
        }
    }
    PyObject *fn = PyCFunction_NewEx(&mark_exiting_def, module, NULL);
    if (!fn) return -1;
    PyObject *atexit_mod = PyImport_ImportModule("atexit");
    PyObject *res = atexit_mod ? PyObject_CallMethod(atexit_mod, "register", "O", fn) : NULL;
    Py_XDECREF(atexit_mod);
    Py_DECREF(fn);
    if (!res) return -1;
    Py_DECREF(res);
    return 0;
}

int rx_buffer_get(PyObject *obj, rx_buffer *b, int mode)
{
    memset(b, 0, sizeof *b);
    if (get_buffer) {
        if (mode == RX_BUF_TYPED && !check_buffer(obj)) return 0;
        int flags = mode == RX_BUF_TYPED ? RX_PYBUF_FORMAT | RX_PYBUF_C_CONTIGUOUS : RX_PYBUF_SIMPLE;
        if (get_buffer(obj, &b->view, flags) < 0) {
            if (mode != RX_BUF_TYPED) return -1;
            PyErr_Clear(); /* not C-contiguous, say: read as a sequence */
            return 0;
        }
        b->have_view = 1;
        b->buf = b->view.buf;
        b->len = b->view.len;
        b->itemsize = b->view.itemsize;
        b->ndim = b->view.ndim;
        b->format = b->view.format ? b->view.format : "B";
        return 1;
    }
    if (mode == RX_BUF_TYPED) return 0;
    PyObject *bytes = PyBytes_Check(obj) ? Py_NewRef(obj) : PyBytes_FromObject(obj);
    if (!bytes) return -1;
    char *p = NULL;
    Py_ssize_t n = 0;
    if (PyBytes_AsStringAndSize(bytes, &p, &n) < 0) {
        Py_DECREF(bytes);
        return -1;
    }
    b->owner = bytes;
    b->buf = p;
    b->len = n;
    b->itemsize = 1;
    b->ndim = 1;
    b->format = "B";
    return 1;
}

void rx_buffer_release(rx_buffer *b)
{
    if (b->have_view) release_buffer(&b->view);
    b->have_view = 0;
    Py_CLEAR(b->owner);
    b->buf = NULL;
    b->len = 0;
}
