/* The checks of a v2 record batch that the produce path makes in C, shared by the extensions that
   include this file (mockbroker/native/codecs/_speedups.c, mockbroker/native/lanes/_producelane.c).

   check(): the records of a batch, yes or no, as mockbroker.records.check.check_records finds them.
   envelope(): everything mockbroker.batches checks of a Produce v3+ batch before its records (size
   within max.message.bytes, magic 2, batchLength, codec id 0-4 with zstd from Produce v7, not a control
   batch, record count = last offset delta + 1 > 0, a base sequence with a producer id, CRC-32C).
   Neither names a problem: a "no" sends the caller down the Python path, which does.
*/
#ifndef MOCKBROKER_BATCH_CHECKS_H
#define MOCKBROKER_BATCH_CHECKS_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "crc32c_fold.h" /* its fold is built only where it can run: see CRC32C_FOLD_BUILT */

#define MIN_RECORD_SIZE 7
#define NO_TIMESTAMP (-1)
#define HEADER_SIZE 61
#define MIN_BATCH_LENGTH (HEADER_SIZE - 12)

/* Read a zigzag varint of at most max_bytes bytes from buf[*pos .. limit); 0 on any problem. */
static int read_zigzag_long(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t limit, int max_bytes,
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

/* read_zigzag_long with the usual one- and two-byte varints (a length, delta or count below 8,192 in
   size) read inline: fourteen bits fit any max_bytes, so no overflow check is needed for them. */
static inline int read_zigzag(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t limit, int max_bytes,
                              int64_t *out) {
    Py_ssize_t p = *pos;
    if (p < limit) {
        uint64_t raw = buf[p];
        if (raw < 0x80) {
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            *pos = p + 1;
            return 1;
        }
        if (p + 1 < limit && buf[p + 1] < 0x80) {
            raw = (raw & 0x7F) | ((uint64_t)buf[p + 1] << 7);
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            *pos = p + 2;
            return 1;
        }
    }
    return read_zigzag_long(buf, pos, limit, max_bytes, out);
}

/* Each record's fields are read with their own position ``p``; the next record starts at ``rec_end``,
   known from the length varint alone (``p`` must have come to it, or the batch fails).  So the position
   of record n + 1 does not wait for the field reads of record n, and the CPU overlaps them (this VM:
   100 B records with a key and a header 18.5 -> 14 ns each).  The usual fields -- a one-byte offset
   delta, a null key, no headers -- are matched as bytes before the general varint reads (null-key
   100 B records 11.4 -> 9.1 ns, 155 -> 128 instructions); anything else, a non-canonical varint
   included, takes the general reads, so what passes is the same. */
static int check(const unsigned char *buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int64_t base_ts,
                 int64_t min_ts, int64_t max_ts, int check_ts, int need_keys) {
    if (count < 0 || count > (end - pos) / MIN_RECORD_SIZE) return 0;
    for (Py_ssize_t index = 0; index < count; index++) {
        int64_t length, ts_delta, offset_delta, size, headers;
        if (!read_zigzag(buf, &pos, end, 5, &length)) return 0;
        if (length < 6 || length > end - pos) return 0;
        Py_ssize_t rec_end = pos + (Py_ssize_t)length, p = pos + 1; /* after the attributes */
        pos = rec_end;
        if (!read_zigzag(buf, &p, rec_end, 10, &ts_delta)) return 0;
        if (index < 64 && p < rec_end && buf[p] == (unsigned char)(index << 1)) { /* the offset delta, one byte */
            p += 1;
        } else {
            if (!read_zigzag(buf, &p, rec_end, 5, &offset_delta)) return 0;
            if (offset_delta != (int64_t)index) return 0;
        }
        if (check_ts) {
            int64_t ts;
            if (__builtin_add_overflow(base_ts, ts_delta, &ts)) return 0;
            if (ts != NO_TIMESTAMP && (ts < min_ts || ts > max_ts)) return 0;
        }
        if (p < rec_end && buf[p] == 0x01) { /* a null key (zigzag -1), the usual */
            if (need_keys) return 0;
            p += 1;
        } else {
            if (!read_zigzag(buf, &p, rec_end, 5, &size)) return 0; /* key */
            if (size < 0) {
                if (size != -1 || need_keys) return 0;
            } else {
                if (size > rec_end - p) return 0;
                p += (Py_ssize_t)size;
            }
        }
        if (!read_zigzag(buf, &p, rec_end, 5, &size)) return 0; /* value */
        if (size < -1) return 0;
        if (size > 0) {
            if (size > rec_end - p) return 0;
            p += (Py_ssize_t)size;
        }
        if (p < rec_end && buf[p] == 0) { /* no headers, the usual: the record must end here */
            if (p + 1 != rec_end) return 0;
            continue;
        }
        if (!read_zigzag(buf, &p, rec_end, 5, &headers)) return 0;
        if (headers < 0 || headers > (rec_end - p) / 2) return 0;
        for (int64_t h = 0; h < headers; h++) {
            if (!read_zigzag(buf, &p, rec_end, 5, &size)) return 0; /* header key */
            if (size < 0 || size > rec_end - p) return 0;
            p += (Py_ssize_t)size;
            if (!read_zigzag(buf, &p, rec_end, 5, &size)) return 0; /* header value */
            if (size < -1 || size > rec_end - p) return 0;
            if (size > 0) p += (Py_ssize_t)size;
        }
        if (p != rec_end) return 0;
    }
    return pos == end;
}

/* CRC-32C of a batch: CPUs with AVX-512 and VPCLMULQDQ fold batches of CRC32C_FOLD_MIN bytes and more
   (crc32c_fold.h); shorter batches, up to SMALL_CRC_BYTES, take the crc32 instruction (SSE 4.2) here:
   calling the crc32c package (a memoryview, a call, an int) costs more than summing a small batch.
   Larger batches on other CPUs, and CPUs without the instruction, go to the package (its interleaved
   loop is faster on long buffers).  tests/records/test_batch_envelope.py holds envelope() to the
   Python checks. */
#define SMALL_CRC_BYTES 4096
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_IN_HARDWARE 1
#include <nmmintrin.h>

__attribute__((target("sse4.2"))) static uint32_t crc32c_hardware(const unsigned char *p, size_t n) {
    uint64_t crc = 0xFFFFFFFFu;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = _mm_crc32_u64(crc, word);
    }
    uint32_t small = (uint32_t)crc;
    for (; n > 0; p++, n--) small = _mm_crc32_u8(small, *p);
    return ~small;
}

static int crc32c_hardware_here(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    return known;
}
#endif

/* The CRC-32C of p[0:n] a bit at a time (CPUs without the crc32 instruction). */
static inline uint32_t crc32c_bits(const unsigned char *p, size_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int bit = 0; bit < 8; bit++) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

/* The CRC-32C of p[0:n] by the fastest way this CPU has (a bit at a time where it has no crc32
   instruction: only for callers that asked whether it folds first). */
static inline uint32_t crc32c_anywhere(const unsigned char *p, size_t n) {
#ifdef CRC32C_FOLD_BUILT
    if (n >= CRC32C_FOLD_MIN && crc32c_fold_here()) return crc32c_fold(p, n);
#endif
#ifdef CRC32C_IN_HARDWARE
    if (crc32c_hardware_here()) return crc32c_hardware(p, n);
#endif
    return crc32c_bits(p, n);
}

/* 1 when crc32c_anywhere() folds long buffers on this CPU. */
static inline int crc32c_folds_here(void) {
#ifdef CRC32C_FOLD_BUILT
    return crc32c_fold_here();
#else
    return 0;
#endif
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

/* A v2 batch header's fields, as BatchHeader holds them. */
typedef struct {
    int64_t base_offset, base_timestamp, max_timestamp, producer_id;
    int32_t batch_length, leader_epoch, last_offset_delta, base_sequence, record_count;
    uint32_t crc;
    int16_t attributes, producer_epoch;
} BatchFields;

/* 1 when the one v2 batch filling b[0:n] passes every envelope check (``crc_function``: the crc32c
   package's function, called on the bytes after the CRC field; None skips the CRC), with its header in
   *f; 0 when it does not; -1 with a Python error set. */
static int envelope(const unsigned char *b, Py_ssize_t n, int version, Py_ssize_t max_bytes,
                    PyObject *crc_function, BatchFields *f) {
    if (n < HEADER_SIZE || n > max_bytes || b[16] != 2) return 0;
    f->batch_length = be32(b + 8);
    if (f->batch_length < MIN_BATCH_LENGTH || (Py_ssize_t)f->batch_length + 12 != n) return 0;
    f->attributes = be16(b + 21);
    int codec = f->attributes & 0x07;
    if (codec > 4 || (codec == 4 && version < 7) || (f->attributes & 0x20)) return 0;
    f->last_offset_delta = be32(b + 23);
    f->record_count = be32(b + 57);
    if (f->record_count <= 0 || (int64_t)f->last_offset_delta + 1 != (int64_t)f->record_count) return 0;
    f->producer_id = be64(b + 43);
    f->base_sequence = be32(b + 53);
    if (f->producer_id >= 0 && f->base_sequence < 0) return 0;
    f->crc = (uint32_t)be32(b + 17);
    f->base_offset = be64(b);
    f->leader_epoch = be32(b + 12);
    f->base_timestamp = be64(b + 27);
    f->max_timestamp = be64(b + 35);
    f->producer_epoch = be16(b + 51);
    if (crc_function == Py_None) return 1;
#ifdef CRC32C_IN_HARDWARE
    if ((n - 21 >= CRC32C_FOLD_MIN && crc32c_folds_here()) || (n - 21 <= SMALL_CRC_BYTES && crc32c_hardware_here()))
        return crc32c_anywhere(b + 21, (size_t)(n - 21)) == f->crc; /* folding, else the crc32 instruction */
#endif
    PyObject *tail = PyMemoryView_FromMemory((char *)b + 21, n - 21, PyBUF_READ);
    if (tail == NULL) return -1;
    PyObject *actual = PyObject_CallOneArg(crc_function, tail);
    Py_DECREF(tail);
    if (actual == NULL) return -1;
    unsigned long crc = PyLong_AsUnsignedLong(actual);
    Py_DECREF(actual);
    if (crc == (unsigned long)-1 && PyErr_Occurred()) return -1;
    return crc == f->crc;
}

/* check() over b[pos:end], handing the GIL over only for large batches (that costs more than checking
   a small one). */
static int records_pass(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t count, int64_t base_ts,
                        int64_t min_ts, int64_t max_ts, int check_ts, int need_keys) {
    int ok;
    if (end - pos < (1 << 20)) {
        ok = check(b, pos, end, count, base_ts, min_ts, max_ts, check_ts, need_keys);
    } else {
        Py_BEGIN_ALLOW_THREADS
        ok = check(b, pos, end, count, base_ts, min_ts, max_ts, check_ts, need_keys);
        Py_END_ALLOW_THREADS
    }
    return ok;
}

#endif
