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

#define MIN_RECORD_SIZE 7
#define NO_TIMESTAMP (-1)

/* Read a zigzag varint of at most max_bytes bytes from buf[*pos .. limit); 0 on any problem. */
static int read_zigzag(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t limit, int max_bytes,
                       int64_t *out) {
    uint64_t raw = 0;
    int shift = 0;
    Py_ssize_t p = *pos;
    int bits = max_bytes == 5 ? 32 : 64;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= limit) return 0;
        unsigned char byte = buf[p++];
        uint64_t part = (uint64_t)(byte & 0x7F);
        if (shift >= 64 || (shift > 0 && (part >> (64 - shift)) != 0)) return 0; /* bits lost: overflow */
        raw |= part << shift;
        if (byte < 0x80) {
            if (bits == 32 && (raw >> 32) != 0) return 0;
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            *pos = p;
            return 1;
        }
        shift += 7;
    }
    return 0;
}

static int check(const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int64_t base_ts,
                 int64_t min_ts, int64_t max_ts, int check_ts, int need_keys) {
    if (count < 0 || count > (end - pos) / MIN_RECORD_SIZE) return 0;
    for (Py_ssize_t index = 0; index < count; index++) {
        int64_t length, ts_delta, offset_delta, size, headers;
        if (!read_zigzag(buf, &pos, end, 5, &length)) return 0;
        if (length < 6 || length > end - pos) return 0;
        Py_ssize_t rec_end = pos + (Py_ssize_t)length;
        pos += 1; /* attributes */
        if (!read_zigzag(buf, &pos, rec_end, 10, &ts_delta)) return 0;
        if (!read_zigzag(buf, &pos, rec_end, 5, &offset_delta)) return 0;
        if (offset_delta != (int64_t)index) return 0;
        if (check_ts) {
            int64_t ts;
            if (__builtin_add_overflow(base_ts, ts_delta, &ts)) return 0;
            if (ts != NO_TIMESTAMP && (ts < min_ts || ts > max_ts)) return 0;
        }
        if (!read_zigzag(buf, &pos, rec_end, 5, &size)) return 0; /* key */
        if (size < 0) {
            if (size != -1 || need_keys) return 0;
        } else {
            if (size > rec_end - pos) return 0;
            pos += (Py_ssize_t)size;
        }
        if (!read_zigzag(buf, &pos, rec_end, 5, &size)) return 0; /* value */
        if (size < -1) return 0;
        if (size > 0) {
            if (size > rec_end - pos) return 0;
            pos += (Py_ssize_t)size;
        }
        if (!read_zigzag(buf, &pos, rec_end, 5, &headers)) return 0;
        if (headers < 0 || headers > (rec_end - pos) / 2) return 0;
        for (int64_t h = 0; h < headers; h++) {
            if (!read_zigzag(buf, &pos, rec_end, 5, &size)) return 0; /* header key */
            if (size < 0 || size > rec_end - pos) return 0;
            pos += (Py_ssize_t)size;
            if (!read_zigzag(buf, &pos, rec_end, 5, &size)) return 0; /* header value */
            if (size < -1 || size > rec_end - pos) return 0;
            if (size > 0) pos += (Py_ssize_t)size;
        }
        if (pos != rec_end) return 0;
    }
    return pos == end;
}

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
        if (end - pos < (1 << 20)) { /* handing the GIL over costs more than checking a small batch */
            ok = check(buf, pos, end, count, base_ts, min_ts, max_ts, check_ts, need_keys);
        } else {
            Py_BEGIN_ALLOW_THREADS
            ok = check(buf, pos, end, count, base_ts, min_ts, max_ts, check_ts, need_keys);
            Py_END_ALLOW_THREADS
        }
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(ok);
}

static int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static int64_t be64(const unsigned char *p) {
    return (int64_t)(((uint64_t)(uint32_t)be32(p) << 32) | (uint64_t)(uint32_t)be32(p + 4));
}

static int16_t be16(const unsigned char *p) { return (int16_t)(((uint16_t)p[0] << 8) | (uint16_t)p[1]); }

#define HEADER_SIZE 61
#define MIN_BATCH_LENGTH (HEADER_SIZE - 12)

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
    int ok;
    if (n < (1 << 20)) {
        ok = check(b, HEADER_SIZE, n, count, be64(b + 27), lo, hi, check_ts, need_keys);
    } else {
        Py_BEGIN_ALLOW_THREADS
        ok = check(b, HEADER_SIZE, n, count, be64(b + 27), lo, hi, check_ts, need_keys);
        Py_END_ALLOW_THREADS
    }
    return ok;
}

static PyObject *batch_envelope(PyObject *self, PyObject *args) {
    Py_buffer view;
    int version;
    Py_ssize_t max_bytes;
    PyObject *crc_function, *records = Py_None;
    if (!PyArg_ParseTuple(args, "y*inO|O:batch_envelope", &view, &version, &max_bytes, &crc_function, &records))
        return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    PyObject *result = NULL;
    if (n < HEADER_SIZE || n > max_bytes || b[16] != 2)
        goto no;
    int32_t batch_length = be32(b + 8);
    if (batch_length < MIN_BATCH_LENGTH || (Py_ssize_t)batch_length + 12 != n)
        goto no;
    int16_t attributes = be16(b + 21);
    int codec = attributes & 0x07;
    if (codec > 4 || (codec == 4 && version < 7) || (attributes & 0x20))
        goto no;
    int32_t last_offset_delta = be32(b + 23), record_count = be32(b + 57);
    if (record_count <= 0 || (int64_t)last_offset_delta + 1 != (int64_t)record_count)
        goto no;
    int64_t producer_id = be64(b + 43);
    int32_t base_sequence = be32(b + 53);
    if (producer_id >= 0 && base_sequence < 0)
        goto no;
    uint32_t stored_crc = (uint32_t)be32(b + 17);
    if (crc_function == Py_None)
        goto header;
    PyObject *tail = PyMemoryView_FromMemory((char *)b + 21, n - 21, PyBUF_READ);
    if (tail == NULL)
        goto done;
    PyObject *actual = PyObject_CallOneArg(crc_function, tail);
    Py_DECREF(tail);
    if (actual == NULL)
        goto done;
    unsigned long crc = PyLong_AsUnsignedLong(actual);
    Py_DECREF(actual);
    if (crc == (unsigned long)-1 && PyErr_Occurred())
        goto done;
    if (crc != stored_crc)
        goto no;
header:
    if (records != Py_None && codec == 0) {
        int ok = batch_records_ok(b, n, record_count, records);
        if (ok < 0)
            goto done;
        if (!ok)
            goto no;
    }
    result = Py_BuildValue("(LiiiIiiLLLiii)", (long long)be64(b), (int)batch_length, (int)be32(b + 12), 2,
                           (unsigned int)stored_crc, (int)attributes, (int)last_offset_delta,
                           (long long)be64(b + 27), (long long)be64(b + 35), (long long)producer_id,
                           (int)be16(b + 51), (int)base_sequence, (int)record_count);
    goto done;
no:
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
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
    PyModuleDef_HEAD_INIT, "mockbroker.records._speedups",
    "Optional C speedups for record checks (see records/check.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
