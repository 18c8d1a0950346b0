/* _ext_decoder.h: the Decoder object shared by _ext_decoder.c (the type:
 * open, decode, metadata), _ext_decoder_sample.c (its samplers) and
 * _ext_decoder_source.c (its sources: a path, a buffer or a file-like
 * object, and the interrupt that lets Ctrl-C in). */
#ifndef REEL_EXT_DECODER_H
#define REEL_EXT_DECODER_H

#include "_ext.h"

/* ======================================================================
 * Decoder: one open video, its fixed output transform, a lock (the C
 * decoder is single-threaded; calls release the GIL), and the source kept
 * alive: a path, a buffer (memory) or a seekable file-like object.
 * ====================================================================== */

enum { SRC_PATH = 0, SRC_MEMORY = 1, SRC_FILE = 2 };

typedef struct DecoderObject {
    PyObject_HEAD reel_decoder *dec;
    PyThread_type_lock lock;
    pid_t pid;       /* process that opened dec */
    int need_reopen; /* forked: reopen in this process before use */
    int closed;
    int kind;
    PyObject *source; /* bytes path, buffer owner or file object */
    rx_buffer view;   /* SRC_MEMORY: pinned (>= 3.11), bytes read in place or a copy (3.10) */
    int have_view;
    PyObject *name;       /* bytes: name used in messages */
    PyObject *index_path; /* bytes or NULL */
    PyObject *io_error;   /* first exception raised by a file-like callback */
    int64_t io_size;      /* cached size of a file-like source; -2 unknown */
    _Atomic int64_t
        next_signal_check;   /* rx_clock_ns() of dec_interrupt's next look (GOP-parallel contexts call it too) */
    _Atomic int interrupted; /* a signal handler raised in this call: every later poll says stop */
    int use_readinto;        /* the file-like object has readinto() */
    reel_decoder_settings settings;
    reel_remote_settings remote;    /* settings.remote points here when given */
    char *ca_bundle, *bearer_token; /* its strings */
    reel_transform transform;
    int out_w, out_h;
    size_t frame_bytes;
    reel_decode_stats stats;
    PyObject *weakreflist;
    char device[64], device_fallback[64]; /* settings.device, .device_fallback point here */
} DecoderObject;

/* _ext_decoder.c: a call's use of the decoder */
/* Takes the decoder for one call (a forked child reopens it; the lock is
 * taken with the GIL released); 0 with self->lock held, or -1 with an
 * exception set. */
int rx_dec_acquire(DecoderObject *self);
void rx_dec_release(DecoderObject *self);
/* Raises the ReelError for status and err, naming the decoder, with a
 * file-like callback's exception as its cause; returns NULL. */
PyObject *rx_dec_raise(DecoderObject *self, int status, const reel_error *err);
/* Frames [n, ...] under the decoder's transform (uninitialised). */
FramesObject *rx_dec_alloc_frames(DecoderObject *self, Py_ssize_t n);
/* f's indices, pts_seconds, duration_seconds and layout for the resolved
 * indices idx (lock held); layout_chw: the frames' layout. 0 or -1. */
int rx_dec_fill_meta(DecoderObject *self, FramesObject *f, const int64_t *idx, Py_ssize_t n, int layout_chw);

/* 1 for a decoder on a GPU (reel_decoder_get_device says "cuda:N"). */
static inline int rx_dec_on_gpu(const reel_decoder *d)
{
    const char *s = d ? reel_decoder_get_device(d) : NULL;
    return s && !strncmp(s, "cuda", 4);
}

/* _ext_gpu.c: a GPU decoder's frames at idx (or at the times secs, n of
 * them; both PyMem_Free'd here) on the device; its device and upload reason */
PyObject *rx_gpu_dec_frames(DecoderObject *self, int64_t *idx, double *secs, Py_ssize_t n);
/* New Frames of n frames on a GPU decoder's device (a reel_device_buffer of
 * their own), for a call that writes them (get_frames_near) */
FramesObject *rx_gpu_dec_alloc_frames(DecoderObject *self, Py_ssize_t n);
/* New Frames over a device buffer of `bytes` on `device` ("cuda:N"); CUDA's
 * failure raised through `dec` */
FramesObject *rx_gpu_new_frames(reel_state *st, const char *device, size_t bytes, int dtype, int ndim,
                                const int64_t *shape, DecoderObject *dec);
PyObject *rx_gpu_dec_device(DecoderObject *self, void *c);
PyObject *rx_gpu_dec_upload_reason(DecoderObject *self, void *c);

/* _ext_near.c: Decoder.get_frames_near and Decoder.memory */
PyObject *rx_dec_get_frames_near(DecoderObject *self, PyObject *args, PyObject *kwargs);
PyObject *rx_dec_memory(DecoderObject *self, PyObject *unused);

/* _ext_decoder_sample.c: Decoder.sample_clips and Decoder.sample_video */
PyObject *rx_dec_sample_clips(DecoderObject *self, PyObject *args, PyObject *kwds);
PyObject *rx_dec_sample_video(DecoderObject *self, PyObject *args, PyObject *kwds);

/* _ext_decoder_source.c */
/* The name used in messages. */
const char *rx_dec_name(DecoderObject *self);
/* Keeps the pending exception as the first one a file-like callback raised. */
void rx_dec_save_io_error(DecoderObject *self);
/* reel_decoder_settings.interrupt: lets signal handlers run during a call. */
int rx_dec_interrupt(void *opaque);
/* Opens self->dec from the stored source, with the GIL released. */
int rx_decoder_open_source(DecoderObject *self, reel_error *err);
/* The exception a file-like callback raised (a new reference), or NULL. */
PyObject *rx_dec_take_io_error(DecoderObject *self);

#endif
