/* _synth.c: the extension reel._synth, the test-video generator (tools/synth)
 * for tests, examples and benchmarks: videos whose frames carry their index,
 * and the reader of that index. Not part of libreel; reel._testing wraps it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "reel/common.h"
#include "synth/synth.h"

/* write(path, codec="h264", width=160, height=120, frames=60, fps_num=25,
 *       fps_den=1, gop=16, bframes=2, vfr=False, ten_bit=False, yuv444=False,
 *       start=0.0, seed=1). Raises OSError with reel's message on failure. */
static PyObject *synth_write(PyObject *module, PyObject *args, PyObject *kwargs)
{
    (void)module;
    static char *kwlist[] = { "path",    "codec", "width",   "height", "frames", "fps_num", "fps_den", "gop",
                              "bframes", "vfr",   "ten_bit", "yuv444", "start",  "seed",    NULL };
    PyObject *path_obj, *pb = NULL;
    const char *codec = "h264";
    int width = 160, height = 120, frames = 60, fps_num = 25, fps_den = 1, gop = 16, bframes = 2;
    int vfr = 0, ten_bit = 0, yuv444 = 0;
    double start = 0.0;
    unsigned int seed = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$siiiiiiipppdI:write", kwlist, &path_obj, &codec, &width, &height,
                                     &frames, &fps_num, &fps_den, &gop, &bframes, &vfr, &ten_bit, &yuv444, &start,
                                     &seed))
        return NULL;
    if (!PyUnicode_FSConverter(path_obj, &pb)) return NULL;
    reel_synth_params p;
    reel_synth_default_params(&p);
    p.path = PyBytes_AsString(pb);
    p.codec = codec;
    p.width = width;
    p.height = height;
    p.num_frames = frames;
    p.fps_num = fps_num;
    p.fps_den = fps_den;
    p.gop = gop;
    p.bframes = bframes;
    p.vfr = vfr;
    p.pix_fmt_10bit = ten_bit;
    p.yuv444 = yuv444;
    p.start_time = start;
    p.seed = seed;
    reel_error err;
    reel_error_clear(&err);
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_synth_write(&p, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(pb);
    if (r != REEL_OK) {
        PyErr_SetString(PyExc_OSError, err.message[0] ? err.message : reel_strerror(r));
        return NULL;
    }
    Py_RETURN_NONE;
}

/* read_indices(data, height, width): the index embedded in each HWC uint8
 * RGB image of `data` (bytes: count x height x width x 3); -1 where
 * unreadable. Bytes, not a buffer: the stable ABI of 3.10 has no buffer
 * protocol (reel._testing passes frames.tobytes()). */
static PyObject *synth_read_indices(PyObject *module, PyObject *args)
{
    (void)module;
    const char *data;
    Py_ssize_t len, h, w;
    if (!PyArg_ParseTuple(args, "y#nn:read_indices", &data, &len, &h, &w)) return NULL;
    Py_ssize_t frame = h * w * 3;
    if (h <= 0 || w <= 0 || frame <= 0 || len % frame != 0) {
        PyErr_SetString(PyExc_ValueError, "read_indices: the data is not a whole number of HxWx3 images");
        return NULL;
    }
    Py_ssize_t count = len / frame;
    PyObject *l = PyList_New(count);
    for (Py_ssize_t i = 0; l && i < count; i++) {
        const uint8_t *img = (const uint8_t *)data + i * frame;
        PyObject *v = PyLong_FromLongLong(reel_synth_read_index(img, (int)w, (int)h, w * 3));
        if (!v) {
            Py_CLEAR(l);
            break;
        }
        PyList_SetItem(l, i, v);
    }
    return l;
}

static PyMethodDef synth_methods[] = { { "write", (PyCFunction)(void (*)(void))synth_write,
                                         METH_VARARGS | METH_KEYWORDS,
                                         "write(path, *, codec='h264', width=160, height=120, frames=60, ...)\n--\n\n"
                                         "Writes a test video whose frames carry their index." },
                                       { "read_indices", synth_read_indices, METH_VARARGS,
                                         "read_indices(data, height, width)\n--\n\nThe index embedded in each HxWx3 "
                                         "uint8 image of bytes (-1: unreadable)." },
                                       { NULL, NULL, 0, NULL } };

static struct PyModuleDef synth_module = { PyModuleDef_HEAD_INIT,
                                           "reel._synth",
                                           "reel's test-video generator (tests and examples only).",
                                           0,
                                           synth_methods,
                                           NULL,
                                           NULL,
                                           NULL,
                                           NULL };

PyMODINIT_FUNC PyInit__synth(void); /* the module's one export (a prototype for -Wmissing-prototypes) */
PyMODINIT_FUNC PyInit__synth(void)
{
    return PyModule_Create(&synth_module);
}
