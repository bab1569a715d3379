/* The journal entries of the requests borrow() answers (included by produce_lane_staging.h,
   api_versions_staging.h and kept_answers.h; Scene is produce_lane_scene.h's): filed as Journal.start
   files an answered one -- JournalEntry's slots filled in place, the journal's next number, appended to
   its ring -- into journals of exactly the Journal class (setup_journal names both classes once). */
#ifndef MOCKBROKER_LANE_JOURNAL_H
#define MOCKBROKER_LANE_JOURNAL_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "member_sites.h"
#include "produce_lane_slots.h"
#include "produce_lane_scene.h"

#define ENTRY_SLOTS 16
static const char *const ENTRY_NAMES[ENTRY_SLOTS] = {
    "seq", "time_ms", "broker", "connection", "client_id", "client_software", "api", "api_key", "version",
    "correlation_id", "_latency_ms", "_about", "_errors", "_faults", "outcome", "throttle_ms",
};
static Py_ssize_t entry_offset[ENTRY_SLOTS];
static int entry_about = -1; /* _about's place: the only slot given a fresh tuple (errors and faults are ()) */
static PyTypeObject *entry_type = NULL, *journal_type = NULL;
static PyObject *s_numbers, *s_entries, *zero = NULL;
static PyObject *setup_journal(PyObject *self, PyObject *args) {
    PyObject *entry_cls, *journal_cls;
    if (!PyArg_ParseTuple(args, "OO!:setup_journal", &entry_cls, &PyType_Type, &journal_cls)) return NULL;
    for (int i = 0; i < ENTRY_SLOTS; i++)
        if (strcmp(ENTRY_NAMES[i], "_about") == 0) entry_about = i;
    if (slot_offsets(entry_cls, ENTRY_NAMES, ENTRY_SLOTS, entry_offset) < 0 || intern(&s_numbers, "_numbers") ||
        intern(&s_entries, "_entries"))
        return NULL;
    if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL) return NULL;
    Py_XSETREF(entry_type, (PyTypeObject *)Py_NewRef(entry_cls));
    Py_XSETREF(journal_type, (PyTypeObject *)Py_NewRef(journal_cls));
    Py_RETURN_NONE;
}

/* A tuple and the tuples inside it, out of the cycle collector's sight (they hold no other container). */
static void untrack_tuples(PyObject *obj) {
    if (!PyTuple_CheckExact(obj) || !PyObject_GC_IsTracked(obj)) return;
    PyObject_GC_UnTrack(obj);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(obj); i++) untrack_tuples(PyTuple_GET_ITEM(obj, i));
}

/* Journal.start(...) of an answered Produce: JournalEntry(next(numbers), ...) appended to the ring.  The
   entry holds strings, numbers and tuples of them (JournalEntry keeps no mutable container), so it and
   its tuples are untracked: ten thousand of them need not be walked by every young collection. */
static int journal_answered(PyObject *journal, PyObject *values[ENTRY_SLOTS]) {
    static MemberSite numbers_site, ring_site;
    PyObject *numbers = site_get(&numbers_site, journal, s_numbers), *ring = site_get(&ring_site, journal, s_entries);
    PyObject *seq = numbers ? PyIter_Next(numbers) : NULL;
    PyObject *entry = seq ? entry_type->tp_alloc(entry_type, 0) : NULL;
    int failed = entry == NULL;
    values[0] = seq;
    for (int i = 0; i < ENTRY_SLOTS; i++) {
        if (entry != NULL)
            *(PyObject **)((char *)entry + entry_offset[i]) = Py_XNewRef(values[i]);
    }
    Py_XDECREF(seq);
    if (!failed) {
        untrack_tuples(values[entry_about]);
        untrack(entry);
        PyObject *done = PyObject_CallMethodOneArg(ring, s_append, entry);
        failed = done == NULL;
        Py_XDECREF(done);
    }
    if (failed && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "the journal's numbering ended");
    Py_XDECREF(entry);
    Py_XDECREF(numbers);
    Py_XDECREF(ring);
    return failed ? -1 : 0;
}

/* Journal.start of an answered request into a journal of exactly the Journal class: JournalEntry's
   slots from these values (no fault rules, no throttle; ``errors`` a tuple of the answer's error
   codes, as Journal.finish keeps them), the next number, appended to the ring. */
static int file_answered(Scene *sc, PyObject *peer, PyObject *client_id, PyObject *software, PyObject *api_name,
                         long api_key, int version, int32_t correlation_id, PyObject *about, PyObject *errors,
                         double latency_ms, long long now_ms) {
    PyObject *time_ms = PyLong_FromLongLong(now_ms), *broker_id = PyLong_FromLong(sc->node_id),
             *key = PyLong_FromLong(api_key), *version_no = PyLong_FromLong(version),
             *correlation = PyLong_FromLong(correlation_id), *latency = PyFloat_FromDouble(latency_ms);
    PyObject *values[ENTRY_SLOTS] = {NULL, time_ms, broker_id, peer, client_id, software, api_name, key, version_no,
                                     correlation, latency, about, errors, no_faults, answered_name, zero};
    int failed = time_ms == NULL || broker_id == NULL || key == NULL || version_no == NULL || correlation == NULL ||
                 latency == NULL || journal_answered(sc->journal, values) < 0;
    Py_XDECREF(time_ms);
    Py_XDECREF(broker_id);
    Py_XDECREF(key);
    Py_XDECREF(version_no);
    Py_XDECREF(correlation);
    Py_XDECREF(latency);
    return failed ? -1 : 0;
}

/* journal_start(journal, time_ms, broker, connection, client_id, client_software, api, api_key, version,
                 correlation_id, about, faults, latency_ms, outcome) -> JournalEntry, or None
   Journal.start in C for a journal of exactly the Journal class with ``about`` and ``faults`` already
   tuples (what dispatch passes): the entry's slots filled as JournalEntry.__init__ fills them, the
   next number, appended to the ring (an ``answered`` one untracked).  None: Journal.start's Python does it. */
static PyObject *journal_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 14) {
        PyErr_SetString(PyExc_TypeError, "journal_start() takes 14 arguments");
        return NULL;
    }
    PyObject *journal = args[0], *about = args[10], *faults = args[11];
    if (entry_type == NULL || no_faults == NULL || zero == NULL || Py_TYPE(journal) != journal_type ||
        !PyTuple_CheckExact(about) ||
        !PyTuple_CheckExact(faults))
        Py_RETURN_NONE;
    static MemberSite numbers_site, ring_site;
    PyObject *numbers = site_get(&numbers_site, journal, s_numbers), *ring = site_get(&ring_site, journal, s_entries);
    PyObject *seq = numbers ? PyIter_Next(numbers) : NULL;
    PyObject *entry = seq ? entry_type->tp_alloc(entry_type, 0) : NULL;
    if (entry != NULL) {
        PyObject *values[ENTRY_SLOTS] = {seq,     args[1],  args[2],  args[3], args[4], args[5], args[6], args[7],
                                         args[8], args[9],  args[12], about,   no_faults, faults, args[13], zero};
        for (int i = 0; i < ENTRY_SLOTS; i++)
            *(PyObject **)((char *)entry + entry_offset[i]) = Py_NewRef(values[i]);
        if (PyUnicode_Check(args[13]) && PyUnicode_CompareWithASCIIString(args[13], "answered") == 0) {
            /* an entry filed answered (the lanes' own: tuples of names and numbers) is never changed again:
               out of the cycle collector's sight, as journal_answered files borrow()'s */
            untrack_tuples(about);
            untrack(entry);
        }
        PyObject *done = PyObject_CallMethodOneArg(ring, s_append, entry);
        if (done == NULL) Py_CLEAR(entry);
        Py_XDECREF(done);
    } else if (seq == NULL && numbers != NULL && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_RuntimeError, "the journal's numbering ended");
    }
    Py_XDECREF(seq);
    Py_XDECREF(numbers);
    Py_XDECREF(ring);
    return entry;
}

#endif
