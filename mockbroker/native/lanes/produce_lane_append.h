/* The produce lane's appending side (included by produce_lane_frame.h): a checked
   batch becomes a stored batch (a slice of the request's frame, or a copy, or a frame of its own for a
   borrowed read buffer) and is appended at its partition log's end as PartitionLog.append would,
   keeping the log's counters and the memory cap's count.  Every name it uses from the module
   (stored_type, the log slots, frame_slack/frame_share: produce_lane_slots.h) is set by _producelane's
   setup().
*/
#ifndef MOCKBROKER_PRODUCE_LANE_APPEND_H
#define MOCKBROKER_PRODUCE_LANE_APPEND_H

#include <Python.h>
#include <stdint.h>

#include "produce_lane_slots.h"
#include "produce_lane_wire.h"

static int get_int64(PyObject *log, int field, int64_t *out) {
    PyObject *value = log_get(log, field);
    if (value == NULL) return 0;
    int ok = as_int64(value, out);
    Py_DECREF(value);
    if (!ok && !PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "%U is not a 64-bit int", log_name[field]);
    return ok;
}

/* The records a stored batch keeps (the batch after its 16-byte offset and length prefix): a slice of
   the frame, or a copy (bytes).  The lane stores every batch of a request or none, so the batches
   stored from a frame (``stored``, all of them) share it when together they are most of it and this
   one is not a sliver of it (memory_cap.shares_frame); borrowed frames (``frame_size`` huge) never. */
static PyObject *stored_view(PyObject *frame, Py_ssize_t frame_size, Py_ssize_t stored, Part *part,
                             const unsigned char *b) {
    int copy = frame_size > 2 * stored + frame_slack || frame_size > frame_share * part->len + frame_slack;
    return copy ? PyBytes_FromStringAndSize((const char *)b + part->start + 16, part->len - 16)
                : PySequence_GetSlice(frame, part->start + 16, part->start + part->len);
}

static PyObject *frame_buffer_fn = NULL; /* connection._new_frame, from setup_frames */
static Py_ssize_t large_frame = PY_SSIZE_T_MAX; /* connection.LARGE_FRAME, from setup_frames */

static PyObject *setup_frames(PyObject *self, PyObject *args) {
    PyObject *fn;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "On:setup_frames", &fn, &size)) return NULL;
    Py_XSETREF(frame_buffer_fn, Py_NewRef(fn));
    large_frame = size;
    Py_RETURN_NONE;
}

/* A memoryview of a buffer of its own (frame_buffer_fn's) holding the ``size`` bytes at ``at``. */
static PyObject *own_frame(const unsigned char *at, Py_ssize_t size) {
    PyObject *length = PyLong_FromSsize_t(size);
    PyObject *own = length == NULL ? NULL : PyObject_CallOneArg(frame_buffer_fn, length);
    Py_XDECREF(length);
    if (own == NULL) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(own, &view, PyBUF_WRITABLE) < 0) {
        Py_DECREF(own);
        return NULL;
    }
    int fits = view.len == size;
    if (fits) memcpy(view.buf, at, (size_t)size);
    PyBuffer_Release(&view);
    PyObject *frame = fits ? PyMemoryView_FromObject(own) : NULL;
    if (!fits) PyErr_SetString(PyExc_ValueError, "frame_buffer(size) gave a buffer of another size");
    Py_DECREF(own);
    return frame;
}

static PyObject *new_stored(Part *part, int64_t base, PyObject *buffers) {
    PyObject *obj = stored_type->tp_alloc(stored_type, 0);
    if (obj == NULL) return NULL;
    PyObject *values[STORED_SLOTS] = {
        PyLong_FromLongLong(base), PyLong_FromLongLong(base + part->f.last_offset_delta),
        PyLong_FromLongLong(part->f.max_timestamp), PyLong_FromSsize_t(part->len), Py_NewRef(buffers),
        PyLong_FromLongLong(part->f.producer_id), PyBool_FromLong(part->f.attributes & 0x10),
        Py_NewRef(Py_False),
    };
    int failed = 0;
    for (int i = 0; i < STORED_SLOTS; i++) {
        if (values[i] == NULL) failed = 1;
        STORED_SLOT(obj, i) = values[i];
    }
    if (failed) {
        Py_DECREF(obj);
        return NULL;
    }
    return obj;
}

/* PartitionLog.append of a batch the lane placed at the log's end (its base is the next_offset it
   read): the same list appends and counters, then each listener (fetch waiters) as append calls them.
   A log of another class gets its own append called. */
static int log_append(PyObject *log, PyObject *stored, int64_t last_offset, Py_ssize_t size) {
    if (!Py_IS_TYPE(log, partition_log_type)) {
        PyObject *done = PyObject_CallMethodOneArg(log, s_append, stored);
        Py_XDECREF(done);
        return done == NULL ? -1 : 0;
    }
    PyObject *batches = log_get(log, LOG_BATCHES), *bases = log_get(log, LOG_BASES);
    PyObject *base = STORED_SLOT(stored, 0); /* base_offset */
    int failed = batches == NULL || bases == NULL || !PyList_Check(batches) || !PyList_Check(bases) ||
                 PyList_Append(batches, stored) < 0 || PyList_Append(bases, base) < 0;
    Py_XDECREF(batches);
    Py_XDECREF(bases);
    if (failed) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "PartitionLog.batches/_bases are not lists");
        return -1;
    }
    PyObject *next = PyLong_FromLongLong(last_offset + 1);
    failed = next == NULL || log_set(log, LOG_NEXT_OFFSET, next) < 0;
    Py_XDECREF(next);
    if (failed) return -1;
    PyObject *held = log_get(log, LOG_SIZE_BYTES);
    if (held == NULL) return -1;
    PyObject *added = PyLong_FromSsize_t(size), *grown = added ? PyNumber_Add(held, added) : NULL;
    Py_DECREF(held);
    Py_XDECREF(added);
    failed = grown == NULL || log_set(log, LOG_SIZE_BYTES, grown) < 0;
    Py_XDECREF(grown);
    if (failed) return -1;
    PyObject *listeners = log_get(log, LOG_LISTENERS);
    if (listeners == NULL) return -1;
    for (Py_ssize_t i = 0; PyList_Check(listeners) && i < PyList_GET_SIZE(listeners); i++) {
        PyObject *notify = Py_NewRef(PyList_GET_ITEM(listeners, i));
        PyObject *done = PyObject_CallOneArg(notify, log);
        Py_DECREF(notify);
        if (done == NULL) {
            Py_DECREF(listeners);
            return -1;
        }
        Py_DECREF(done);
    }
    Py_DECREF(listeners);
    return 0;
}

static int append_part(PyObject *frame, Py_ssize_t frame_size, Py_ssize_t shared, const unsigned char *b, Part *part,
                       int64_t now_ms) {
    int64_t base, epoch;
    if (!get_int64(part->log, LOG_NEXT_OFFSET, &base) || !get_int64(part->log, LOG_LEADER_EPOCH, &epoch)) return -1;
    unsigned char prefix[16];
    uint64_t fields[2] = {(uint64_t)base, ((uint64_t)(uint32_t)(part->len - 12) << 32) | (uint32_t)epoch};
    for (int i = 0; i < 16; i++) prefix[i] = (unsigned char)(fields[i / 8] >> (8 * (7 - i % 8)));
    PyObject *view = stored_view(frame, frame_size, shared, part, b);
    if (view == NULL) return -1;
    PyObject *head = PyBytes_FromStringAndSize((const char *)prefix, 16);
    if (head == NULL) {
        Py_DECREF(view);
        return -1;
    }
    PyObject *buffers = PyTuple_Pack(2, head, view);
    Py_DECREF(head);
    Py_DECREF(view);
    if (buffers == NULL) return -1;
    untrack(buffers);
    PyObject *stored = new_stored(part, base, buffers);
    Py_DECREF(buffers);
    if (stored == NULL) return -1;
    untrack(stored);
    if (part->producers != NULL) {  /* as the handler does: the producer's state first, then the log */
        PyObject *noted = PyObject_CallMethod(
            part->producers, "record_append", "LiiiLLLLOI", (long long)part->f.producer_id,
            (int)part->f.producer_epoch, (int)part->f.base_sequence, (int)part->last_seq, (long long)base,
            (long long)(base + part->f.last_offset_delta), (long long)part->f.max_timestamp, (long long)now_ms,
            Py_False, (unsigned int)part->f.crc);  /* the CRC: a later batch with these sequences must repeat it */
        if (noted == NULL) {
            Py_DECREF(stored);
            return -1;
        }
        Py_DECREF(noted);
    }
    int appended = log_append(part->log, stored, base + part->f.last_offset_delta, part->len);
    Py_DECREF(stored);
    if (appended < 0) return -1;
    part->base_offset = base;
    return get_int64(part->log, LOG_START_OFFSET, &part->log_start_offset) ? 0 : -1;
}

#endif
