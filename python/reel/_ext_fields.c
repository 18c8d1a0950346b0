/* _ext_fields.c: C structs to and from Python by their reel_field tables
 * (reel/common.h): the loader's settings and metrics, the remote settings
 * and counters. The binding writes no field list of its own. */
#include "_ext.h"

PyObject *rx_field_load(const void *base, const reel_field *f)
{
    const char *p = (const char *)base + f->offset;
    switch (f->type) {
    case REEL_FIELD_INT: return PyLong_FromLong(*(const int *)p);
    case REEL_FIELD_INT64: return PyLong_FromLongLong(*(const int64_t *)p);
    case REEL_FIELD_UINT64: return PyLong_FromUnsignedLongLong(*(const uint64_t *)p);
    case REEL_FIELD_SIZE: return PyLong_FromSize_t(*(const size_t *)p);
    case REEL_FIELD_DOUBLE: return PyFloat_FromDouble(*(const double *)p);
    case REEL_FIELD_FLOAT: return PyFloat_FromDouble(*(const float *)p);
    case REEL_FIELD_FLOAT3: {
        const float *a = (const float *)p;
        return Py_BuildValue("(ddd)", (double)a[0], (double)a[1], (double)a[2]);
    }
    case REEL_FIELD_STRING: {
        const char *s = *(const char *const *)p;
        return PyUnicode_FromString(s ? s : ""); /* as the JSON writer */
    }
    case REEL_FIELD_BY_CAUSE: {
        const int64_t *v = (const int64_t *)p;
        PyObject *d = PyDict_New();
        for (int c = 0; d && c < REEL_REMOTE_CAUSE_COUNT; c++)
            if (dict_set(d, reel_remote_cause_name((reel_remote_cause)c), PyLong_FromLongLong(v[c])) < 0) Py_CLEAR(d);
        return d;
    }
    }
    PyErr_Format(PyExc_SystemError, "reel: field %s has an unknown type", f->name);
    return NULL;
}

int rx_field_store(void *base, const reel_field *f, PyObject *v)
{
    char *p = (char *)base + f->offset;
    switch (f->type) {
    case REEL_FIELD_INT: {
        long x = PyLong_AsLong(v);
        if (x == -1 && PyErr_Occurred()) return -1;
        if (x < INT32_MIN || x > INT32_MAX) {
            PyErr_Format(PyExc_OverflowError, "%s out of range", f->name);
            return -1;
        }
        *(int *)p = (int)x;
        return 0;
    }
    case REEL_FIELD_INT64: {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred()) return -1;
        *(int64_t *)p = x;
        return 0;
    }
    case REEL_FIELD_UINT64: {
        unsigned long long x = PyLong_AsUnsignedLongLongMask(v);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        *(uint64_t *)p = x;
        return 0;
    }
    case REEL_FIELD_SIZE: {
        size_t x = PyLong_AsSize_t(v);
        if (x == (size_t)-1 && PyErr_Occurred()) return -1;
        *(size_t *)p = x;
        return 0;
    }
    case REEL_FIELD_DOUBLE: {
        double x = PyFloat_AsDouble(v);
        if (x == -1.0 && PyErr_Occurred()) return -1;
        *(double *)p = x;
        return 0;
    }
    case REEL_FIELD_FLOAT: {
        double x = PyFloat_AsDouble(v);
        if (x == -1.0 && PyErr_Occurred()) return -1;
        *(float *)p = (float)x;
        return 0;
    }
    case REEL_FIELD_FLOAT3: return parse_floats3(v, (float *)p, f->name);
    case REEL_FIELD_STRING:
    case REEL_FIELD_BY_CAUSE: break; /* strings need an owner: the caller stores them */
    }
    PyErr_Format(PyExc_TypeError, "reel: field %s cannot be set from Python", f->name);
    return -1;
}

const reel_field *rx_field_find(const reel_field *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) return &t[i];
    return NULL;
}

int rx_fields_from_dict(PyObject *dict, const reel_field *t, size_t n, void *base, const char *what,
                        int (*special)(const char *key, PyObject *value, void *opaque), void *opaque)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, NULL) : NULL;
        if (!k) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "settings keys must be str");
            return -1;
        }
        int took = special ? special(k, value, opaque) : 0;
        if (took < 0) return -1;
        if (took) continue;
        const reel_field *f = rx_field_find(t, n, k);
        if (!f && what) {
            PyErr_Format(PyExc_ValueError, "unknown %s setting '%s'", what, k);
            return -1;
        }
        if (f && (what || f->type != REEL_FIELD_STRING) && rx_field_store(base, f, value) < 0) return -1;
    }
    return 0;
}

PyObject *rx_fields_dict(const reel_field *t, size_t n, const void *base, int nested)
{
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < n; i++) {
        const char *name = t[i].name, *dot = nested ? strchr(name, '.') : NULL;
        PyObject *into = d;
        if (dot) { /* "group.key": into the dict d["group"] */
            PyObject *g = PyUnicode_FromStringAndSize(name, dot - name);
            PyObject *sub = g ? PyDict_GetItemWithError(d, g) : NULL;
            if (g && !sub && !PyErr_Occurred()) {
                sub = PyDict_New();
                if (sub && PyDict_SetItem(d, g, sub) < 0) Py_CLEAR(sub);
                Py_XDECREF(sub); /* d holds it */
            }
            Py_XDECREF(g);
            if (!sub) {
                Py_CLEAR(d);
                break;
            }
            into = sub;
            name = dot + 1;
        }
        if (dict_set(into, name, rx_field_load(base, &t[i])) < 0) Py_CLEAR(d);
    }
    return d;
}

/* fields(table) -> [(name, type code)]: the C tables by name, for the
 * Python layer ("loader_settings", "loader_metrics", "stage_metrics",
 * "remote_settings", "remote_stats"). */
PyObject *mod_fields(PyObject *module, PyObject *arg)
{
    (void)module;
    const char *which = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (!which) return NULL;
    size_t n = 0;
    const reel_field *t = NULL;
    if (!strcmp(which, "loader_settings"))
        t = reel_loader_settings_get_fields(&n);
    else if (!strcmp(which, "loader_metrics"))
        t = reel_loader_metrics_get_fields(&n);
    else if (!strcmp(which, "stage_metrics"))
        t = reel_stage_metrics_get_fields(&n);
    else if (!strcmp(which, "remote_settings"))
        t = reel_remote_settings_get_fields(&n);
    else if (!strcmp(which, "remote_stats"))
        t = reel_remote_stats_get_fields(&n);
    else
        return PyErr_Format(PyExc_ValueError, "no field table %R", arg);
    PyObject *l = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; l && i < n; i++) {
        PyObject *e = Py_BuildValue("(si)", t[i].name, (int)t[i].type);
        if (!e)
            Py_CLEAR(l);
        else
            PyList_SetItem(l, (Py_ssize_t)i, e);
    }
    return l;
}

/* remote_defaults() -> {name: value} of reel_remote_default_settings, by its table. */
PyObject *mod_remote_defaults(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    reel_remote_settings s;
    reel_remote_default_settings(&s);
    size_t n = 0;
    const reel_field *t = reel_remote_settings_get_fields(&n);
    return rx_fields_dict(t, n, &s, 0);
}
