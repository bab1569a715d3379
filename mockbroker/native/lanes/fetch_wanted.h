/* The partitions a Fetch names, made into the handler's Wanted in C (included by _fastfetch.c; it
   includes fetch_from_logs.h, whose member sites it reads through).

   setup_wanted(Wanted)
       Called once by mockbroker.protocol.fast_fetch.wanted_reader: where Wanted keeps its fields.
   wanted_from_request(topics, known, broker_id, use_ids) -> [Wanted], or None: see make_wanted. */
#ifndef MOCKBROKER_FETCH_WANTED_H
#define MOCKBROKER_FETCH_WANTED_H

#include <Python.h>

#include "struct_slots.h"
#include "fetch_from_logs.h"

static Layout wanted_layout;
static const char *const WANTED_SLOTS[] = {"name", "topic_id", "partition", "fetch_offset", "max_bytes",
                                           "leader_epoch", "log", "error", NULL};

static PyObject *setup_wanted(PyObject *self, PyObject *cls) {
    if (layout_of(&wanted_layout, cls, WANTED_SLOTS) < 0) return NULL;
    Py_RETURN_NONE;
}

/* A Wanted for FetchPartition ``p`` of ``topic`` (name, id), read from ``log``: a new reference, or NULL. */
static PyObject *new_wanted(PyObject *name, PyObject *topic_id, PyObject *p, PyObject *log) {
    PyTypeObject *type = wanted_layout.type;
    PyObject *item = type->tp_alloc(type, 0);
    if (item == NULL) return NULL;
    static const int from[] = {FQ_PARTITION, FQ_OFFSET, FQ_MAX_BYTES, FQ_EPOCH};
    PyObject **slots[8];
    for (int i = 0; i < 8; i++) slots[i] = (PyObject **)((char *)item + wanted_layout.offset[i]);
    *slots[0] = Py_NewRef(name);
    *slots[1] = Py_NewRef(topic_id);
    for (int i = 0; i < 4; i++)
        if ((*slots[2 + i] = from_log_get(p, from[i])) == NULL) {
            Py_DECREF(item);
            return NULL;
        }
    *slots[6] = Py_NewRef(log);
    *slots[7] = PyLong_FromLong(0);
    return item;
}

/* wanted_from_request(topics, known, broker_id, use_ids) -> [Wanted], or None
   What k01_fetch._resolve makes of a FetchRequest's topics (before its session) when every topic is
   known (``known``: the cluster's topics by name, or by id from v13) and every partition is one of
   its partitions led by ``broker_id``; None (nothing made) otherwise, and the Python path names what
   is missing.  Authorization is the caller's: it asks only while ACLs are off. */
static PyObject *make_wanted(PyObject *topics, PyObject *known, long long broker_id, int use_ids) {
    if (wanted_layout.type == NULL) Py_RETURN_NONE;
    if (intern_sites() < 0) return NULL;
    PyObject *out = PyList_New(0), *key = NULL, *name = NULL, *topic_id = NULL, *logs = NULL, *parts = NULL;
    if (out == NULL) return NULL;
    int ok = 1;
    for (Py_ssize_t i = 0; ok > 0 && i < PyList_GET_SIZE(topics); i++) {
        PyObject *t = PyList_GET_ITEM(topics, i);
        ok = -1;
        if ((key = from_log_get(t, use_ids ? FT_ID : FT_NAME)) == NULL) break;
        PyObject *topic = PyDict_GetItemWithError(known, key); /* borrowed */
        Py_CLEAR(key);
        if (topic == NULL) {
            ok = PyErr_Occurred() ? -1 : 0;
            break;
        }
        if ((name = from_log_get(topic, TP_NAME)) == NULL || (topic_id = from_log_get(topic, TP_ID)) == NULL ||
            (logs = from_log_get(topic, TP_PARTS)) == NULL || (parts = from_log_get(t, FT_PARTS)) == NULL)
            break;
        ok = 0;
        if (!PyList_CheckExact(logs) || !PyList_CheckExact(parts)) break;
        ok = 1;
        for (Py_ssize_t j = 0; ok > 0 && j < PyList_GET_SIZE(parts); j++) {
            PyObject *p = PyList_GET_ITEM(parts, j), *item;
            int64_t index, leader;
            if ((ok = from_log_int(p, FQ_PARTITION, &index)) <= 0) break;
            if (index < 0 || index >= PyList_GET_SIZE(logs)) { /* no such partition */
                ok = 0;
                break;
            }
            PyObject *log = PyList_GET_ITEM(logs, index);
            if ((ok = from_log_int(log, FL_LEADER, &leader)) <= 0) break;
            if (leader != broker_id) { /* led elsewhere */
                ok = 0;
                break;
            }
            if ((item = new_wanted(name, topic_id, p, log)) == NULL || PyList_Append(out, item) < 0) ok = -1;
            Py_XDECREF(item);
        }
        Py_CLEAR(name);
        Py_CLEAR(topic_id);
        Py_CLEAR(logs);
        Py_CLEAR(parts);
    }
    Py_XDECREF(name);
    Py_XDECREF(topic_id);
    Py_XDECREF(logs);
    Py_XDECREF(parts);
    if (ok > 0) return out;
    Py_DECREF(out);
    if (ok < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *wanted_from_request(PyObject *self, PyObject *args) {
    PyObject *topics, *known;
    long long broker_id;
    int use_ids;
    if (!PyArg_ParseTuple(args, "O!O!Lp:wanted_from_request", &PyList_Type, &topics, &PyDict_Type, &known, &broker_id,
                          &use_ids))
        return NULL;
    return make_wanted(topics, known, broker_id, use_ids);
}

#endif
