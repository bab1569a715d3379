/* Where the produce lane's objects keep their fields, and the names it reads them by (included by
   _producelane.c and the lane's headers): StoredBatch's and PartitionLog's slots, found once by
   _producelane's setup() (a log of another class is read by name), the interned attribute names, the
   lane's constants from setup() and setup_lz4(), and the helpers that read and write those slots. */
#ifndef MOCKBROKER_PRODUCE_LANE_SLOTS_H
#define MOCKBROKER_PRODUCE_LANE_SLOTS_H

#include <Python.h>
#include <structmember.h>
#include <stdint.h>

#define STORED_SLOTS 8

static const char *const STORED_NAMES[STORED_SLOTS] = {
    "base_offset", "last_offset", "max_timestamp", "size", "buffers", "producer_id", "is_transactional",
    "is_control",
};

static PyTypeObject *stored_type = NULL;
static Py_ssize_t stored_offset[STORED_SLOTS];
static Py_ssize_t batch_overhead = 0, frame_slack = 0, frame_share = 1;
static PyObject *settings_key = NULL;
static PyObject *s_answer_cache, *s_config, *s_generation, *s_partitions, *s_append;
static PyTypeObject *partition_log_type = NULL;

/* The PartitionLog fields the lane reads and writes: straight from their slots when the log is a
   PartitionLog (whose __slots__ setup() found), by name otherwise (a subclass, or another class). */
enum { LOG_LEADER, LOG_LEADER_EPOCH, LOG_NEXT_OFFSET, LOG_START_OFFSET, LOG_BATCHES, LOG_BASES, LOG_SIZE_BYTES,
       LOG_LISTENERS, LOG_PRODUCERS, LOG_FIELDS };
static const char *const LOG_NAMES[LOG_FIELDS] = {
    "leader", "leader_epoch", "next_offset", "log_start_offset", "batches", "_bases", "size_bytes", "listeners",
    "producers",
};
static PyObject *log_name[LOG_FIELDS];
static Py_ssize_t log_offset[LOG_FIELDS];
static int log_slotted = 0;
static size_t lz4_cap = 0; /* the decompression cap of batches.decompressed, once setup_lz4 found liblz4 */

#define STORED_SLOT(obj, i) (*(PyObject **)((char *)(obj) + stored_offset[i]))

static int intern(PyObject **slot, const char *name) {
    if (*slot == NULL && (*slot = PyUnicode_InternFromString(name)) == NULL) return -1;
    return 0;
}

/* Where a plain (object, writable) slot of ``type`` lives; -1 with TypeError when it has none. */
static Py_ssize_t slot_offset(PyTypeObject *type, const char *name) {
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s has no slot %s", type->tp_name, name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & READONLY)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a plain slot", type->tp_name, name);
        return -1;
    }
    return member->offset;
}

/* Where each named slot of ``cls`` lives (instances are then filled as the class's own __init__ would),
   checking that the class has exactly these plain object slots. */
static int slot_offsets(PyObject *cls, const char *const *names, int n, Py_ssize_t *offsets) {
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "expected a class with __slots__");
        return -1;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    for (int i = 0; i < n; i++)
        if ((offsets[i] = slot_offset(type, names[i])) < 0) return -1;
    if (type->tp_basicsize != (Py_ssize_t)(sizeof(PyObject) + n * sizeof(PyObject *))) {
        PyErr_Format(PyExc_TypeError, "%s has slots this module does not know", type->tp_name);
        return -1;
    }
    return 0;
}

#define LOG_SLOT(log, field) (*(PyObject **)((char *)(log) + log_offset[field]))

static PyObject *log_get(PyObject *log, int field) {
    if (log_slotted && Py_IS_TYPE(log, partition_log_type) && LOG_SLOT(log, field) != NULL)
        return Py_NewRef(LOG_SLOT(log, field));
    return PyObject_GetAttr(log, log_name[field]);
}

static int log_set(PyObject *log, int field, PyObject *value) {
    if (log_slotted && Py_IS_TYPE(log, partition_log_type)) {
        Py_XSETREF(LOG_SLOT(log, field), Py_NewRef(value));
        return 0;
    }
    return PyObject_SetAttr(log, log_name[field], value);
}

static int as_int64(PyObject *obj, int64_t *out) {
    if (obj == NULL || !PyLong_Check(obj)) return 0;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = v;
    return 1;
}

/* A stored batch, its buffers tuple and its bytes hold only bytes, ints and each other, never a cycle
   (nor does a lane journal entry: produce_lane_staging.h): the cycle collector need not walk them, and
   young collections stay short however many batches the log holds.  (Only objects whose dealloc
   untracks through PyObject_GC_UnTrack, which checks first: tuples and classes defined in Python.  A
   memoryview's dealloc unlinks itself unchecked, so a view of a frame stays tracked.) */
static void untrack(PyObject *obj) {
    if (PyObject_GC_IsTracked(obj)) PyObject_GC_UnTrack(obj);
}

#endif
