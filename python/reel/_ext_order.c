/* _ext_order.c: module functions on a dataset's epochs without a loader:
 * its size, classes and fingerprint, an epoch's shape and global order, a
 * rank's stripe and the source's read blocks (the loader's own arithmetic,
 * for reel.torch, reel.ray and tests). */
#include "_ext.h"

/* {'size', 'class_names'} of a dataset (a folder, a manifest, or C entries
 * as _loader._dataset_entries makes them), without starting a loader. */
PyObject *rx_dataset_info_dict(reel_state *st, const reel_dataset *ds)
{
    size_t n = reel_dataset_get_size(ds), nc = reel_dataset_get_num_classes(ds);
    PyObject *names = PyList_New((Py_ssize_t)nc);
    reel_error err;
    reel_error_clear(&err);
    for (size_t i = 0; names && i < nc; i++) {
        const char *s = NULL;
        int r = reel_dataset_get_class_name(ds, (int64_t)i, &s, &err);
        PyObject *v =
            r == REEL_OK ? PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace") : raise_err(st, r, &err, NULL);
        if (!v) {
            Py_CLEAR(names);
            break;
        }
        PyList_SetItem(names, (Py_ssize_t)i, v);
    }
    if (!names) return NULL;
    size_t ns = reel_dataset_get_num_skipped(ds);
    PyObject *skipped = PyList_New((Py_ssize_t)ns);
    for (size_t i = 0; skipped && i < ns; i++) {
        const char *s = NULL;
        int r = reel_dataset_get_skipped(ds, i, &s, &err);
        PyObject *v =
            r == REEL_OK ? PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace") : raise_err(st, r, &err, NULL);
        if (!v) {
            Py_CLEAR(skipped);
            break;
        }
        PyList_SetItem(skipped, (Py_ssize_t)i, v);
    }
    if (!skipped) {
        Py_DECREF(names);
        return NULL;
    }
    return Py_BuildValue("{s:n,s:N,s:K,s:N}", "size", (Py_ssize_t)n, "class_names", names, "fingerprint",
                         (unsigned long long)reel_dataset_get_fingerprint(ds), "skipped", skipped);
}

/* (samples per rank, batches) of one epoch: the loader's own arithmetic,
 * for callers that need the count before (or without) a loader. */
PyObject *mod_epoch_shape(PyObject *module, PyObject *args)
{
    (void)module;
    long long n, batch;
    int world, shard_mode, drop_last;
    if (!PyArg_ParseTuple(args, "LiiLp:epoch_shape", &n, &world, &shard_mode, &batch, &drop_last)) return NULL;
    int64_t per_rank, batches;
    reel_error err;
    reel_error_clear(&err);
    if (reel_loader_epoch_shape(n, world, (reel_shard_mode)shard_mode, batch, drop_last, &per_rank, &batches, &err) !=
        REEL_OK) {
        PyErr_SetString(PyExc_ValueError, err.message);
        return NULL;
    }
    return Py_BuildValue("(LL)", (long long)per_rank, (long long)batches);
}

/* [0, ..., N]: the starts of the runs of samples a source reads best
 * together (reel_dataset_get_read_blocks: a store's shards; one run for videos). */
PyObject *mod_read_blocks(PyObject *module, PyObject *source)
{
    reel_state *st = PyModule_GetState(module);
    reel_dataset *ds = NULL;
    if (rx_build_dataset(st, source, &ds) < 0) return NULL;
    int64_t *starts = NULL;
    size_t nb = 0;
    reel_error err;
    reel_error_clear(&err);
    int r = reel_dataset_get_read_blocks(ds, &starts, &nb, &err);
    reel_dataset_destroy(&ds);
    if (r != REEL_OK) return raise_err(st, r, &err, NULL);
    PyObject *blocks = PyList_New((Py_ssize_t)nb + 1);
    for (size_t i = 0; blocks && i <= nb; i++) {
        PyObject *v = PyLong_FromLongLong(starts[i]);
        if (!v) {
            Py_CLEAR(blocks);
            break;
        }
        PyList_SetItem(blocks, (Py_ssize_t)i, v);
    }
    reel_free(starts);
    return blocks;
}

/* The global order of one epoch of a dataset (reel_order_create_for_dataset)
 * as a list of dataset indices; `source` an int n: the order of n samples
 * in one read block (reel_order_create), for consumers whose samples are
 * not videos (reel.lerobot's frames). */
PyObject *mod_epoch_order(PyObject *module, PyObject *args)
{
    PyObject *source;
    long long epoch, window;
    unsigned long long seed;
    int shuffle, ranks, batch;
    if (!PyArg_ParseTuple(args, "OLKpLii:epoch_order", &source, &epoch, &seed, &shuffle, &window, &ranks, &batch))
        return NULL;
    reel_state *st = PyModule_GetState(module);
    reel_dataset *ds = NULL;
    long long count = -1;
    if (PyLong_Check(source) && !PyBool_Check(source)) {
        count = PyLong_AsLongLong(source);
        if (count == -1 && PyErr_Occurred()) return NULL;
        if (count < 1) {
            PyErr_Format(PyExc_ValueError, "epoch_order: the number of samples must be >= 1, not %lld", count);
            return NULL;
        }
    } else if (rx_build_dataset(st, source, &ds) < 0) {
        return NULL;
    }
    reel_order_settings os;
    reel_order_default_settings(&os);
    os.seed = seed;
    os.shuffle = shuffle;
    os.shuffle_window = window;
    os.canonical_ranks = ranks;
    os.canonical_batch = batch;
    reel_order *o = NULL;
    reel_error err;
    reel_error_clear(&err);
    os.num_samples = count;
    int r = ds ? reel_order_create_for_dataset(&o, ds, &os, &err) : reel_order_create(&o, &os, &err);
    if (r == REEL_OK) r = reel_order_set_epoch(o, epoch, &err);
    PyObject *out = NULL;
    if (r != REEL_OK) {
        raise_err(st, r, &err, NULL);
    } else {
        const int64_t n = ds ? (int64_t)reel_dataset_get_size(ds) : (int64_t)count;
        out = PyList_New((Py_ssize_t)n);
        for (int64_t g = 0; out && g < n; g++) {
            int64_t index = 0;
            r = reel_order_get_sample(o, g, &index, &err);
            PyObject *v = r == REEL_OK ? PyLong_FromLongLong(index) : raise_err(st, r, &err, NULL);
            if (!v) {
                Py_CLEAR(out);
                break;
            }
            PyList_SetItem(out, (Py_ssize_t)g, v);
        }
    }
    reel_order_destroy(&o);
    reel_dataset_destroy(&ds);
    return out;
}

/* A rank's stripe (reel_stripe) as a list of (first, count, samples_seen_after). */
PyObject *mod_stripe(PyObject *module, PyObject *args)
{
    (void)module;
    reel_stripe s = reel_stripe_make(0, 1);
    long long n, seen, batch;
    int shard_mode;
    if (!PyArg_ParseTuple(args, "LLiiLipii:stripe", &n, &seen, &s.world_size, &s.rank, &batch, &shard_mode,
                          &s.drop_last, &s.num_workers, &s.worker))
        return NULL;
    s.num_samples = n;
    s.samples_seen = seen;
    s.batch_size = batch;
    s.shard_mode = (reel_shard_mode)shard_mode;
    reel_error err;
    reel_error_clear(&err);
    if (reel_stripe_check(&s, &err) != REEL_OK) {
        PyErr_SetString(PyExc_ValueError, err.message);
        return NULL;
    }
    const int64_t nb = reel_stripe_get_num_batches(&s);
    PyObject *out = PyList_New((Py_ssize_t)nb);
    for (int64_t k = 0; out && k < nb; k++) {
        reel_stripe_batch b;
        reel_stripe_get_batch(&s, k, &b, NULL);
        PyObject *t = Py_BuildValue("(LLL)", (long long)b.first, (long long)b.count, (long long)b.samples_seen_after);
        if (!t) {
            Py_CLEAR(out);
            break;
        }
        PyList_SetItem(out, (Py_ssize_t)k, t);
    }
    return out;
}

PyObject *mod_dataset_info(PyObject *module, PyObject *source)
{
    reel_state *st = PyModule_GetState(module);
    reel_dataset *ds = NULL;
    if (rx_build_dataset(st, source, &ds) < 0) return NULL;
    PyObject *d = rx_dataset_info_dict(st, ds);
    reel_dataset_destroy(&ds);
    return d;
}
