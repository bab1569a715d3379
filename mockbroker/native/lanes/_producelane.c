/* The produce lane: a usual Produce request (v3-12), from its frame to its encoded answer, in one C call.

   mockbroker/handlers/produce_lane.py decides when the lane may be tried (no fault rules, quotas, ACLs,
   SASL or network partition) and what it must not touch; this file takes the request only when every
   partition would be appended by the Python path without a word to say (see the docstring of
   produce_lane.py for the list) and otherwise answers None *before changing anything*: the generated
   codec and the Produce handler then run and decide, name and log whatever is unusual.

   setup(StoredBatch, batch_overhead, frame_slack, frame_share, settings_key, PartitionLog)
       Once: where StoredBatch's slots live, memory_cap's BATCH_OVERHEAD and FRAME_SLACK, the
       answer_cache key under which produce_lane.py keeps each topic's lane settings, and the log class
       whose append the lane does itself (log_append; any other class's append is called).

   setup_frames(frame_buffer, large_frame)
       Once: connection._new_frame (the C reader's frame_buffer) and LARGE_FRAME.  A frame above
       large_frame bytes that lies in the staging buffer is copied whole into a buffer of its own (in
       huge pages where it can: mockbroker/native/lanes/frame_arena.h) once its batches are sure to be
       appended, and stored from there as the connection stores a large frame it read into its own.

   produce(frame, version, topics, broker_id, now_ms, broker_generation, crc32c, decompress, cap_room,
           journal) -> None | Topic | (answer, counted_bytes, journal_pairs, client_id)
       ``frame`` is the request without its size prefix (a memoryview).  (The staging way calls
       produce_frame() with ``borrowed``: the frame lies in the connection's staging buffer, which is
       reused, so nothing keeps a view of it: a small frame's stored batches are copies, a large one
       is copied whole first, see setup_frames.)  A Topic: its lane
       settings are missing or stale (produce_lane.py stores them and calls again).  Otherwise the batches are
       appended (StoredBatch objects, as PartitionLog.append appends them: log_append; fetch waiters woken;
       an idempotent batch's sequence is asked of PartitionProducers.admits before anything is
       appended and recorded with PartitionProducers.record_append, as the handler does),
       ``answer`` is the whole response frame (a bytearray), ``counted_bytes`` what memory_cap counts for
       them, ``journal_pairs`` the topic and partition pairs the journal keeps of a Produce (None when
       ``journal`` is false).

   One frame through the lane (produce()'s and borrow()'s produce_frame) lives in produce_lane_frame.h,
   reading the request and writing the answer in produce_lane_wire.h, storing and appending a checked
   batch in produce_lane_append.h, the slots and names they share in produce_lane_slots.h, borrow() and
   the answers it writes in produce_lane_staging.h (which includes produce_lane_scene.h, lane_journal.h,
   direct_send.h, api_versions_staging.h and kept_answers.h), the batch checks in
   mockbroker/native/codecs/batch_checks.h; every header includes what it uses (tests/test_native_layout.py).  tests/broker/test_produce_lane.py holds the lane equal to the
   Python path: the same answer bytes, stored batches, log state, memory count and journal entries, on
   generated requests good, bad and damaged.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "batch_checks.h"
#include "member_sites.h"
#include "lz4_frames.h"
#include "produce_lane_wire.h"
#include "produce_lane_slots.h"
#include "produce_lane_append.h"
#include "produce_lane_frame.h"
#include "produce_lane_staging.h"

static PyObject *setup(PyObject *self, PyObject *args) {
    PyObject *cls, *key, *log_cls;
    Py_ssize_t overhead, slack, share;
    if (!PyArg_ParseTuple(args, "OnnnUO!:setup", &cls, &overhead, &slack, &share, &key, &PyType_Type, &log_cls))
        return NULL;
    if (slot_offsets(cls, STORED_NAMES, STORED_SLOTS, stored_offset) < 0) return NULL;
    if (intern(&s_answer_cache, "answer_cache") || intern(&s_config, "config") ||
        intern(&s_generation, "_generation") || intern(&s_partitions, "partitions") || intern(&s_append, "append"))
        return NULL;
    log_slotted = 1;
    for (int i = 0; i < LOG_FIELDS; i++) {
        if (intern(&log_name[i], LOG_NAMES[i])) return NULL;
        if ((log_offset[i] = slot_offset((PyTypeObject *)log_cls, LOG_NAMES[i])) < 0) {
            PyErr_Clear(); /* a log class without these slots: its fields are read by name */
            log_slotted = 0;
        }
    }
    Py_XSETREF(partition_log_type, (PyTypeObject *)Py_NewRef(log_cls));
    Py_XSETREF(stored_type, (PyTypeObject *)Py_NewRef(cls));
    Py_XSETREF(settings_key, Py_NewRef(key));
    batch_overhead = overhead;
    frame_slack = slack;
    frame_share = share > 0 ? share : 1;
    Py_RETURN_NONE;
}

static PyObject *produce(PyObject *self, PyObject *args) {
    PyObject *frame, *topics, *broker_generation, *crc32c, *decompress;
    int version, journal;
    long broker_id;
    long long now_ms;
    Py_ssize_t cap_room;
    if (!PyArg_ParseTuple(args, "OiO!lLOOOnp:produce", &frame, &version, &PyDict_Type, &topics, &broker_id,
                          &now_ms, &broker_generation, &crc32c, &decompress, &cap_room, &journal))
        return NULL;
    return produce_frame(frame, version, topics, broker_id, now_ms, broker_generation, crc32c, decompress, cap_room,
                         journal, 0);
}

/* setup_lz4(cap) -> bool: decompress lz4 batches with the system's liblz4 from now on (lz4_frames.h). */
static PyObject *setup_lz4(PyObject *self, PyObject *arg) {
    Py_ssize_t cap = PyLong_AsSsize_t(arg);
    if (cap < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the cap must not be negative");
        return NULL;
    }
    int ready = lz4_frames_setup((size_t)cap);
    lz4_cap = ready ? (size_t)cap : 0;
    return PyBool_FromLong(ready);
}

static PyObject *lz4_taken(PyObject *self, PyObject *unused) { return PyLong_FromUnsignedLongLong(lz4_frames_taken); }

static PyMethodDef methods[] = {
    {"setup_frames", setup_frames, METH_VARARGS, "setup_frames(frame_buffer, large_frame)."},
    {"setup", setup, METH_VARARGS, "setup(StoredBatch, batch_overhead, frame_slack, frame_share, settings_key, PartitionLog)."},
    STAGING_METHODS
    USUAL_METHODS
    {"setup_lz4", setup_lz4, METH_O, "setup_lz4(cap) -> bool: lz4 batches through the system's liblz4."},
    {"lz4_taken", lz4_taken, METH_NOARGS, "lz4_taken() -> how many lz4 frames were decompressed in C."},
    {"produce", produce, METH_VARARGS,
     "produce(frame, version, topics, broker_id, now_ms, broker_generation, crc32c, decompress, cap_room,\n"
     "        journal) -> None | Topic | (answer, counted_bytes, journal_pairs, client_id) (see the module comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "mockbroker.native._producelane",
    "Optional C lane for the usual Produce request (see handlers/produce_lane.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__producelane(void) { return PyModule_Create(&module); }
