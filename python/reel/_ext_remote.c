/* _ext_remote.c: reel/io.h's whole-object read for Python: remote_read(uri,
 * remote, max_bytes) -> bytes, a local path or an http(s)/s3 URL through
 * reel's remote input (reel_remote_read), the GIL released while it reads. */
#include "_ext.h"

#include <stdlib.h>

/* remote_read(uri, remote=None, max_bytes=1 GiB) -> bytes */
PyObject *mod_remote_read(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = { "uri", "remote", "max_bytes", NULL };
    PyObject *path = NULL, *remote = Py_None;
    long long max_bytes = 1LL << 30;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|OL:remote_read", kw, PyUnicode_FSConverter, &path, &remote,
                                     &max_bytes))
        return NULL;
    if (max_bytes < 0) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_ValueError, "remote_read: max_bytes must be >= 0");
        return NULL;
    }
    reel_remote_settings rs;
    char *ca_bundle = NULL, *bearer_token = NULL;
    if (rx_remote_from_dict(remote, &rs, &ca_bundle, &bearer_token) < 0) {
        free(ca_bundle);
        free(bearer_token);
        Py_DECREF(path);
        return NULL;
    }
    const char *uri = PyBytes_AsString(path);
    void *data = NULL;
    size_t size = 0;
    reel_error err;
    reel_error_clear(&err);
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = reel_remote_read(uri, &rs, (size_t)max_bytes, &data, &size, &err);
    Py_END_ALLOW_THREADS
    free(ca_bundle);
    free(bearer_token);
    PyObject *res = NULL;
    if (r != REEL_OK)
        raise_err(PyModule_GetState(module), r, &err, uri);
    else if (size > (size_t)PY_SSIZE_T_MAX)
        PyErr_NoMemory();
    else
        res = PyBytes_FromStringAndSize(data, (Py_ssize_t)size);
    reel_free(data);
    Py_DECREF(path);
    return res;
}
