/* _ext_decoder_source.c: where a Decoder's bytes come from: a path, a
 * buffer, or a seekable file-like object read through reel_io callbacks
 * that take the GIL back; and the interrupt that lets Ctrl-C stop a call. */
#include "_ext_decoder.h"

const char *rx_dec_name(DecoderObject *self)
{
    return self->name ? PyBytes_AsString(self->name) : "<video>";
}

void rx_dec_save_io_error(DecoderObject *self)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (v && tb) PyException_SetTraceback(v, tb);
    if (!self->io_error && v) self->io_error = Py_NewRef(v);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
}

/* The decoder's interrupt callback (reel_decoder_settings.interrupt): at
 * most every 0.1 s of a call, take the GIL back for a moment to run signal
 * handlers, so Ctrl-C stops a long decode with KeyboardInterrupt (kept like
 * a file-like callback's exception and re-raised as is). Runs in the thread
 * that called the decoder; handlers run only in the main thread. Once a
 * handler raised, it says stop until the call ends (rx_dec_acquire clears
 * it): the decoder polls from several places (FFmpeg's reads, its own
 * remote fetches ahead), and each must see the stop, not only the first. */
int rx_dec_interrupt(void *opaque)
{
    DecoderObject *self = opaque;
    if (self->interrupted) return 1;
    int64_t now = rx_clock_ns();
    if (now < self->next_signal_check) return 0;
    self->next_signal_check = now + 100000000;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = 0;
    if (PyErr_CheckSignals() < 0) {
        rx_dec_save_io_error(self);
        self->interrupted = 1;
        stop = 1;
    }
    PyGILState_Release(g);
    return stop;
}

/* reel_io callbacks for file-like sources: they run in the thread that
 * called the decoder, which released the GIL; take it back for the call. */
static int io_read(void *opaque, uint8_t *buf, int size)
{
    DecoderObject *self = opaque;
    PyGILState_STATE g = PyGILState_Ensure();
    long long n = -1;
    if (!self->io_error) {
        PyObject *res = NULL;
        if (self->use_readinto) {
            PyObject *mv = PyMemoryView_FromMemory((char *)buf, size, PyBUF_WRITE);
            if (mv) {
                res = PyObject_CallMethod(self->source, "readinto", "O", mv);
                /* Invalidate the view: the buffer is FFmpeg's. A failing
                 * release means the file object kept an export of it. */
                PyObject *et, *ev, *etb;
                PyErr_Fetch(&et, &ev, &etb);
                PyObject *rel = PyObject_CallMethod(mv, "release", NULL);
                if (!rel) {
                    PyErr_Clear();
                    if (!et) {
                        Py_CLEAR(res);
                        PyErr_SetString(PyExc_BufferError, "reel: readinto() kept a reference to the read buffer");
                        PyErr_Fetch(&et, &ev, &etb);
                    }
                }
                Py_XDECREF(rel);
                PyErr_Restore(et, ev, etb);
                Py_DECREF(mv);
            }
            if (res) {
                if (res == Py_None) {
                    PyErr_SetString(PyExc_BlockingIOError,
                                    "reel: readinto() returned None (non-blocking file without data)");
                } else {
                    n = PyLong_AsLongLong(res);
                    if (n < 0 || n > size) {
                        if (!PyErr_Occurred())
                            PyErr_Format(PyExc_ValueError, "reel: readinto() returned %lld for a %d-byte buffer", n,
                                         size);
                        n = -1;
                    }
                }
            }
        } else {
            res = PyObject_CallMethod(self->source, "read", "i", size);
            if (res) {
                rx_buffer b;
                if (rx_buffer_get(res, &b, RX_BUF_BYTES) > 0) {
                    if (b.len > size) {
                        PyErr_Format(PyExc_ValueError, "reel: read(%d) returned %zd bytes", size, b.len);
                    } else {
                        memcpy(buf, b.buf, (size_t)b.len);
                        n = b.len;
                    }
                    rx_buffer_release(&b);
                }
            }
        }
        Py_XDECREF(res);
        if (PyErr_Occurred()) {
            rx_dec_save_io_error(self);
            n = -1;
        }
    }
    PyGILState_Release(g);
    return (int)n;
}

static int64_t call_seek(PyObject *f, int64_t off, int whence)
{
    PyObject *res = PyObject_CallMethod(f, "seek", "Li", (long long)off, whence);
    if (!res) return -1;
    if (res == Py_None) {
        Py_DECREF(res);
        res = PyObject_CallMethod(f, "tell", NULL);
        if (!res) return -1;
    }
    long long v = PyLong_AsLongLong(res);
    Py_DECREF(res);
    return v;
}

static int64_t io_seek(void *opaque, int64_t offset, int whence)
{
    DecoderObject *self = opaque;
    PyGILState_STATE g = PyGILState_Ensure();
    int64_t r = -1;
    if (!self->io_error) {
        if (whence == REEL_SEEK_SIZE) {
            if (self->io_size >= -1) {
                r = self->io_size;
            } else {
                int64_t cur = call_seek(self->source, 0, SEEK_CUR);
                int64_t end = cur >= 0 ? call_seek(self->source, 0, SEEK_END) : -1;
                if (end >= 0 && call_seek(self->source, cur, SEEK_SET) >= 0) r = end;
                if (PyErr_Occurred()) {
                    PyErr_Clear(); /* size unknown is allowed */
                    r = -1;
                }
                self->io_size = r;
            }
        } else {
            r = call_seek(self->source, offset, whence);
            if (PyErr_Occurred()) {
                rx_dec_save_io_error(self);
                r = -1;
            }
        }
    }
    PyGILState_Release(g);
    return r;
}

/* Fills `err` like the library does for a file object that cannot rewind. */
static int rewind_failed(reel_error *err, const char *name)
{
    err->status = REEL_E_IO;
    snprintf(err->message, sizeof err->message, "%s: cannot seek to the start of the file object", name);
    return REEL_E_IO;
}

/* Opens self->dec from the stored source, with the GIL released. */
int rx_decoder_open_source(DecoderObject *self, reel_error *err)
{
    int r;
    reel_decoder *dec = NULL;
    if (self->kind == SRC_PATH) {
        const char *path = PyBytes_AsString(self->source);
        Py_BEGIN_ALLOW_THREADS
        r = reel_decoder_open(&dec, path, &self->settings, err);
        Py_END_ALLOW_THREADS
    } else if (self->kind == SRC_MEMORY) {
        const void *data = self->view.buf;
        size_t size = (size_t)self->view.len;
        const char *name = rx_dec_name(self);
        Py_BEGIN_ALLOW_THREADS
        r = reel_decoder_open_memory(&dec, data, size, name, &self->settings, err);
        Py_END_ALLOW_THREADS
    } else {
        reel_io io = { .opaque = self, .read = io_read, .seek = io_seek };
        const char *name = rx_dec_name(self);
        self->io_size = -2;
        /* FFmpeg takes the stream to start where reading starts: rewind (a
         * reopen after fork finds the file wherever the parent left it). */
        if (call_seek(self->source, 0, SEEK_SET) < 0) {
            rx_dec_save_io_error(self);
            return rewind_failed(err, name);
        }
        Py_BEGIN_ALLOW_THREADS
        r = reel_decoder_open_io(&dec, &io, name, &self->settings, err);
        Py_END_ALLOW_THREADS
    }
    if (r == REEL_OK) self->dec = dec;
    return r;
}

PyObject *rx_dec_take_io_error(DecoderObject *self)
{
    PyObject *e = self->io_error;
    self->io_error = NULL;
    return e;
}
