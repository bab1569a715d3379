/* Optional C speedups for the produce hot path: a yes/no check of the records of a v2 batch, and of
   the envelope of a batch a Produce v3+ request carries.

   records_ok(buffer, pos, end, count, base_timestamp, min_timestamp, max_timestamp, check_timestamps,
              need_keys) -> bool

   True only when mockbroker.records.check.check_records would find nothing wrong with the same
   arguments.  Any doubt answers False, and the caller then runs the Python checker, which names the
   problem: this module never decides what error a client gets, it only lets clean batches skip the
   per-record Python loop.  Every read is bounds-checked against ``end``; a field that runs past its
   record is a failure (the Python checker reports it as a length mismatch or truncation).  The
   property test tests/records/test_speedups.py compares both on generated and corrupted batches.

   batch_envelope(buffer, produce_version, max_message_bytes, crc32c) -> 13-tuple or None

   The header fields of the one v2 batch filling ``buffer`` (in BatchHeader's order) when every check
   mockbroker.batches makes before looking at the records passes: size within max.message.bytes,
   magic 2, batchLength matching the buffer, CRC-32C (``crc32c`` is called on the bytes after the CRC
   field; None skips the CRC, for mock.produce.validation=envelope), codec id 0-4 (zstd from Produce v7), not a control batch, record count = last offset
   delta + 1 > 0, a base sequence when there is a producer id.  None for anything else, and the
   caller then takes the Python path, which names the problem.  tests/records/test_speedups.py holds
   the tuple equal to the Python header wherever it is not None.

   batch_envelope(..., records=(min_timestamp, max_timestamp, need_keys)) also checks the records
   of an uncompressed batch as records_ok does (bounds None: no timestamp check; clamped to int64)
   and answers None when one fails; compressed batches are left to the caller, which decompresses.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "batch_checks.h"

static PyObject *records_ok(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, end, count;
    long long base_ts, min_ts, max_ts;
    int check_ts, need_keys;
    if (!PyArg_ParseTuple(args, "y*nnnLLLpp:records_ok", &view, &pos, &end, &count, &base_ts, &min_ts, &max_ts,
                          &check_ts, &need_keys))
        return NULL;
    int ok = 0;
    if (pos >= 0 && end >= pos && end <= view.len) {
        const unsigned char *buf = (const unsigned char *)view.buf;
        ok = records_pass(buf, pos, end, count, base_ts, min_ts, max_ts, check_ts, need_keys);
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(ok);
}

/* A timestamp bound (a Python int, or None: unbounded) clamped to int64. */
static int bound(PyObject *obj, long long unbounded, long long *out) {
    if (obj == Py_None) {
        *out = unbounded;
        return 1;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred()) return 0;
    *out = overflow > 0 ? LLONG_MAX : overflow < 0 ? LLONG_MIN : v;
    return 1;
}

/* The records check of an uncompressed batch (``records``: (min_ts, max_ts, need_keys)); -1 on error. */
static int batch_records_ok(const unsigned char *b, Py_ssize_t n, int32_t count, PyObject *records) {
    PyObject *lo_obj, *hi_obj;
    int need_keys;
    long long lo, hi;
    if (!PyArg_ParseTuple(records, "OOp:records bounds", &lo_obj, &hi_obj, &need_keys) ||
        !bound(lo_obj, LLONG_MIN, &lo) || !bound(hi_obj, LLONG_MAX, &hi))
        return -1;
    int check_ts = lo_obj != Py_None && hi_obj != Py_None;
    return records_pass(b, HEADER_SIZE, n, count, be64(b + 27), lo, hi, check_ts, need_keys);
}

static PyObject *batch_envelope(PyObject *self, PyObject *args) {
    Py_buffer view;
    int version;
    Py_ssize_t max_bytes;
    PyObject *crc_function, *records = Py_None;
    if (!PyArg_ParseTuple(args, "y*inO|O:batch_envelope", &view, &version, &max_bytes, &crc_function, &records))
        return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    BatchFields f;
    PyObject *result = NULL;
    int ok = envelope(b, view.len, version, max_bytes, crc_function, &f);
    if (ok > 0 && records != Py_None && (f.attributes & 0x07) == 0)
        ok = batch_records_ok(b, view.len, f.record_count, records);
    if (ok < 0)
        goto done;
    if (!ok) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = Py_BuildValue("(LiiiIiiLLLiii)", (long long)f.base_offset, (int)f.batch_length, (int)f.leader_epoch, 2,
                           (unsigned int)f.crc, (int)f.attributes, (int)f.last_offset_delta,
                           (long long)f.base_timestamp, (long long)f.max_timestamp, (long long)f.producer_id,
                           (int)f.producer_epoch, (int)f.base_sequence, (int)f.record_count);
done:
    PyBuffer_Release(&view);
    return result;
}

/* crc32c(buffer) -> int: the CRC-32C of the buffer, as the crc32c package's function, summed here. */
static PyObject *crc32c(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    size_t n = (size_t)view.len;
    uint32_t crc;
    (void)crc32c_folds_here(); /* the CPU check and the folding constants made with the GIL held */
    if (n < (1u << 16)) {
        crc = crc32c_anywhere(b, n);
    } else {  /* long enough that handing over the GIL costs little against the sum */
        Py_BEGIN_ALLOW_THREADS
        crc = crc32c_anywhere(b, n);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyObject *crc32c_folds(PyObject *self, PyObject *unused) { return PyBool_FromLong(crc32c_folds_here()); }

/* crc32c_by(buffer, way) -> int or None: the CRC-32C summed one given way ("zmm": folding, "crc32": the
   crc32 instruction alone, "bits": a bit at a time), None where this CPU or build has no such way or
   the buffer is too short for it.  For tests: each way checked on any CPU that has it. */
static PyObject *crc32c_by(PyObject *self, PyObject *args) {
    Py_buffer view;
    const char *way;
    if (!PyArg_ParseTuple(args, "y*s:crc32c_by", &view, &way)) return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    size_t n = (size_t)view.len;
    long long crc = -1;
    if (strcmp(way, "bits") == 0) crc = crc32c_bits(b, n);
#ifdef CRC32C_IN_HARDWARE
    else if (strcmp(way, "crc32") == 0 && crc32c_hardware_here()) crc = crc32c_hardware(b, n);
#endif
#ifdef CRC32C_FOLD_BUILT
    else if (strcmp(way, "zmm") == 0 && crc32c_fold_here() && n >= CRC32C_FOLD_MIN) crc = crc32c_fold_zmm(b, n);
#endif
    PyBuffer_Release(&view);
    if (crc < 0) Py_RETURN_NONE;
    return PyLong_FromLongLong(crc);
}

static PyMethodDef methods[] = {
    {"crc32c", crc32c, METH_O,
     "crc32c(buffer) -> int\nThe CRC-32C of the buffer (initial ~0, result inverted), as Kafka's batches carry it."},
    {"crc32c_by", crc32c_by, METH_VARARGS,
     "crc32c_by(buffer, way) -> int or None\nThe CRC-32C summed one way (zmm, crc32, bits), for tests."},
    {"crc32c_folds", crc32c_folds, METH_NOARGS,
     "crc32c_folds() -> bool\nTrue when this CPU sums long buffers by carry-less multiplication."},
    {"batch_envelope", batch_envelope, METH_VARARGS,
     "batch_envelope(buffer, produce_version, max_message_bytes, crc32c[, records]) -> header fields or None\n"
     "The v2 batch header when every check before the records (and, given ``records`` bounds, the\n"
     "records of an uncompressed batch) passes (see the module comment)."},
    {"records_ok", records_ok, METH_VARARGS,
     "records_ok(buffer, pos, end, count, base_ts, min_ts, max_ts, check_ts, need_keys) -> bool\n"
     "True when the v2 records in buffer[pos:end] pass every check check_records makes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "mockbroker.native._speedups",
    "Optional C speedups for record checks (see records/check.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
