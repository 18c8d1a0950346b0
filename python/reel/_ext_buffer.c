/* _ext_buffer.c: the buffer protocol where the stable ABI has it (CPython
 * >= 3.11, its functions found at run time) and the 3.10 replacements for
 * inputs (rx_buffer: bytes, or numpy's array interface); the atexit flag
 * that stands in for _Py_IsFinalizing. */
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
_Static_assert(RX_PYBUF_WRITABLE == PyBUF_WRITABLE && RX_PYBUF_FORMAT == PyBUF_FORMAT && RX_PYBUF_ND == PyBUF_ND &&
                   RX_PYBUF_STRIDES == PyBUF_STRIDES && RX_PYBUF_C_CONTIGUOUS == PyBUF_C_CONTIGUOUS &&
                   RX_PYBUF_F_CONTIGUOUS == PyBUF_F_CONTIGUOUS,
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

/* numpy's array-interface type strings: the struct-module format of each. */
static const struct {
    char kind;
    int itemsize;
    const char *format;
} array_types[] = {
    { 'u', 1, "B" }, { 'i', 1, "b" }, { 'u', 2, "H" }, { 'i', 2, "h" }, { 'u', 4, "I" }, { 'i', 4, "i" },
    { 'u', 8, "Q" }, { 'i', 8, "q" }, { 'f', 2, "e" }, { 'f', 4, "f" }, { 'f', 8, "d" },
};

/* A typed view through obj.__array_interface__ (version 3: numpy arrays,
 * reel.Frames): C-contiguous, native byte order, no mask; writable when
 * asked. 1: filled; 0: no such array (no exception). */
static int array_interface_view(PyObject *obj, rx_buffer *b, int writable)
{
    PyObject *ai = PyObject_GetAttrString(obj, "__array_interface__");
    if (!ai) {
        PyErr_Clear();
        return 0;
    }
    int found = 0;
    PyObject *data = PyDict_Check(ai) ? PyDict_GetItemString(ai, "data") : NULL; /* borrowed */
    PyObject *typestr = data ? PyDict_GetItemString(ai, "typestr") : NULL;
    PyObject *shape = typestr ? PyDict_GetItemString(ai, "shape") : NULL;
    PyObject *strides = shape ? PyDict_GetItemString(ai, "strides") : NULL;
    PyObject *mask = shape ? PyDict_GetItemString(ai, "mask") : NULL;
    const char *ts = typestr && PyUnicode_Check(typestr) ? PyUnicode_AsUTF8AndSize(typestr, NULL) : NULL;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    const char native = '>';
#else
    const char native = '<';
#endif
    if (!ts || !PyTuple_Check(data) || PyTuple_Size(data) != 2 || !PyTuple_Check(shape) || (mask && mask != Py_None) ||
        (ts[0] != native && ts[0] != '|' && ts[0] != '='))
        goto done;
    int itemsize = atoi(ts + 2);
    for (size_t k = 0; k < sizeof array_types / sizeof array_types[0]; k++)
        if (array_types[k].kind == ts[1] && array_types[k].itemsize == itemsize) b->format = array_types[k].format;
    Py_ssize_t ndim = PyTuple_Size(shape);
    if (!b->format || ndim > REEL_PY_BUF_MAXDIM) goto done;
    Py_ssize_t count = 1, want_stride = itemsize;
    for (Py_ssize_t i = ndim - 1; i >= 0; i--) {
        Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GetItem(shape, i));
        if (n < 0) goto done;
        if (strides && strides != Py_None) { /* C-contiguous only */
            Py_ssize_t s = PyTuple_Check(strides) && PyTuple_Size(strides) == ndim
                               ? PyLong_AsSsize_t(PyTuple_GetItem(strides, i))
                               : -1;
            if (n > 1 && s != want_stride) goto done;
        }
        b->shape_buf[i] = n;
        want_stride *= n ? n : 1;
        count *= n;
    }
    void *ptr = PyLong_AsVoidPtr(PyTuple_GetItem(data, 0));
    int readonly = PyObject_IsTrue(PyTuple_GetItem(data, 1));
    if (PyErr_Occurred() || readonly < 0 || (writable && readonly) || (!ptr && count > 0)) goto done;
    b->buf = ptr;
    b->len = count * itemsize;
    b->itemsize = itemsize;
    b->ndim = (int)ndim;
    b->shape = b->shape_buf;
    b->owner = Py_NewRef(obj);
    found = 1;
done:
    if (!found) {
        PyErr_Clear();
        b->format = NULL;
    }
    Py_DECREF(ai);
    return found;
}

/* Fills b from the buffer protocol (>= 3.11). */
static int protocol_view(PyObject *obj, rx_buffer *b, int mode)
{
    int flags = mode == RX_BUF_BYTES ? RX_PYBUF_SIMPLE : RX_PYBUF_FORMAT | RX_PYBUF_C_CONTIGUOUS;
    if (mode == RX_BUF_WRITABLE) flags |= RX_PYBUF_WRITABLE;
    if (get_buffer(obj, &b->view, flags) < 0) {
        if (mode == RX_BUF_BYTES) return -1;
        PyErr_Clear(); /* not C-contiguous or read-only, say: the caller falls back or says why */
        return 0;
    }
    b->have_view = 1;
    b->buf = b->view.buf;
    b->len = b->view.len;
    b->itemsize = b->view.itemsize;
    b->ndim = b->view.ndim;
    b->format = b->view.format ? b->view.format : "B";
    b->shape = b->view.shape;
    return 1;
}

int rx_buffer_get(PyObject *obj, rx_buffer *b, int mode)
{
    memset(b, 0, sizeof *b);
    if (mode != RX_BUF_BYTES) {
        if (PyList_Check(obj) || PyTuple_Check(obj)) return 0; /* the common case, at once */
        if (get_buffer && check_buffer(obj)) return protocol_view(obj, b, mode);
        return array_interface_view(obj, b, mode == RX_BUF_WRITABLE); /* every version: the same arrays */
    }
    if (get_buffer) return protocol_view(obj, b, mode);
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
    b->shape_buf[0] = n;
    b->shape = b->shape_buf;
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
