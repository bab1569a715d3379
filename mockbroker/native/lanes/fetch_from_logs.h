/* A usual Fetch answered straight from the partition logs (included by _fastfetch.c).

   answer_from_logs(wanted, version, correlation_id, broker_id, budget, isolation[, min_bytes, session_id,
                    states, incremental])
       ``wanted``: the handler's list of Wanted (mockbroker/handlers/k01_fetch.py), in the order the
       handler answers them.  When every partition is the usual one -- found and led by
       ``broker_id``, its leader epoch current (or not given), no open transaction on it, the fetch
       offset within the log -- gives (frame, bytes): the whole response frame as the buffers to write
       (what api.encode_response gives for the answer k01_fetch._collect and _build would make: the
       same bytes, stored record buffers over the hole threshold not copied) and how many record
       bytes it holds; (None, bytes) when fewer than ``min_bytes`` are there (nothing written or
       changed: the fetch waits on).  Otherwise None, having changed nothing: the Python path
       answers, and names every error.  A read_committed read whose partition ever had an aborted
       transaction is left to Python too (it lists them).  With a session, ``states`` holds each
       partition's SessionPartition (or None): an incremental answer leaves out the partitions with
       nothing new, and every state is set to what was answered, as _build does.

   Reads follow PartitionLog.read: whole batches from the one holding the fetch offset, within the
   partition's max_bytes and what is left of ``budget`` (the request's max_bytes capped by the
   broker's fetch.max.bytes), the first batch of the answer even when larger.  Attribute reads go
   through member sites (member_sites.h): slots read in place. */
#ifndef MOCKBROKER_FETCH_FROM_LOGS_H
#define MOCKBROKER_FETCH_FROM_LOGS_H

#include <Python.h>

#include "member_sites.h"
#include "wire_writer.h"
#include "fetch_response_writer.h"

enum { FW_NAME, FW_TOPIC_ID, FW_PARTITION, FW_OFFSET, FW_MAX_BYTES, FW_EPOCH, FW_LOG, FW_ERROR,
       FL_LEADER, FL_EPOCH, FL_NEXT, FL_START, FL_BATCHES, FL_BASES, FL_PRODUCERS,
       FP_OPEN_TXNS, FP_ABORTED, FB_BASE, FB_LAST, FB_SIZE, FB_BUFFERS,
       FT_NAME, FT_ID, FT_PARTS, FQ_PARTITION, FQ_EPOCH, FQ_OFFSET, FQ_MAX_BYTES, TP_NAME, TP_ID, TP_PARTS,
       FROM_LOG_SITES };
static const char *const FROM_LOG_NAMES[FROM_LOG_SITES] = {
    "name", "topic_id", "partition", "fetch_offset", "max_bytes", "leader_epoch", "log", "error",
    "leader", "leader_epoch", "next_offset", "log_start_offset", "batches", "_bases", "producers",
    "open_txns", "aborted", "base_offset", "last_offset", "size", "buffers",
    "topic", "topic_id", "partitions", "partition", "current_leader_epoch", "fetch_offset", "partition_max_bytes",
    "name", "topic_id", "partitions"};
static PyObject *from_log_names[FROM_LOG_SITES];
static PyObject *zero_int = NULL, *s_last_sent = NULL;
static MemberSite from_log_sites[FROM_LOG_SITES];

typedef struct {
    PyObject *name, *topic_id, *log; /* new references */
    int64_t partition, offset, max_bytes, epoch;
    /* what plan_from_log found: the log's end and start, the batches [first, last) of ``batches`` (a
       new reference while some are read) with their size and their buffers' bytes */
    PyObject *batches;
    int64_t end, start, size;
    Py_ssize_t first, last, record_bytes;
    int included; /* in the answer (an incremental session's answer leaves unchanged partitions out) */
} WantedPart;

static void drop_part(WantedPart *part) {
    Py_CLEAR(part->name);
    Py_CLEAR(part->topic_id);
    Py_CLEAR(part->log);
    Py_CLEAR(part->batches);
}

typedef struct {
    Py_ssize_t at;
    PyObject *buffer; /* a new reference */
} Hole;

typedef struct {
    Hole *items;
    Py_ssize_t count, cap;
    Py_ssize_t bytes;
} Holes;

static int keep_hole(Holes *h, Py_ssize_t at, PyObject *buffer, Py_ssize_t n) {
    if (h->count == h->cap) {
        Py_ssize_t cap = h->cap ? h->cap * 2 : 16;
        Hole *items = PyMem_Realloc(h->items, cap * sizeof(Hole));
        if (items == NULL) return 0;
        h->items = items;
        h->cap = cap;
    }
    h->items[h->count].at = at;
    h->items[h->count++].buffer = Py_NewRef(buffer);
    h->bytes += n;
    return 1;
}

static void drop_holes(Holes *h) {
    for (Py_ssize_t i = 0; i < h->count; i++) Py_DECREF(h->items[i].buffer);
    PyMem_Free(h->items);
}

static int intern_sites(void) {
    for (int i = 0; i < FROM_LOG_SITES; i++)
        if (from_log_names[i] == NULL && (from_log_names[i] = PyUnicode_InternFromString(FROM_LOG_NAMES[i])) == NULL)
            return -1;
    return 0;
}

/* obj.<site> as a new reference (NULL with the error set). */
static PyObject *from_log_get(PyObject *obj, int site) {
    return site_get(&from_log_sites[site], obj, from_log_names[site]);
}

/* obj.<site> as an int64: 1, 0 when it is not an int in range (the Python path then answers), -1 on error. */
static int from_log_int(PyObject *obj, int site, int64_t *out) {
    PyMemberDef *member = site_member(&from_log_sites[site], obj, from_log_names[site]);
    if (member != NULL && member->type == T_OBJECT_EX) { /* a slot: read in place, no reference taken */
        PyObject *held = *(PyObject **)((char *)obj + member->offset);
        if (held != NULL) return get_int(held, INT64_MIN, INT64_MAX, out);
    }
    PyObject *value = from_log_get(obj, site);
    if (value == NULL) return -1;
    int ok = get_int(value, INT64_MIN, INT64_MAX, out);
    Py_DECREF(value);
    return ok;
}

static int read_wanted(PyObject *item, WantedPart *part) {
    int64_t error;
    int ok;
    if ((ok = from_log_int(item, FW_ERROR, &error)) <= 0) return ok;
    if (error != 0) return 0;
    if ((part->log = from_log_get(item, FW_LOG)) == NULL || (part->name = from_log_get(item, FW_NAME)) == NULL ||
        (part->topic_id = from_log_get(item, FW_TOPIC_ID)) == NULL)
        return -1;
    if (part->log == Py_None || !PyUnicode_CheckExact(part->name)) return 0;
    if ((ok = from_log_int(item, FW_PARTITION, &part->partition)) <= 0 ||
        (ok = from_log_int(item, FW_OFFSET, &part->offset)) <= 0 ||
        (ok = from_log_int(item, FW_MAX_BYTES, &part->max_bytes)) <= 0 ||
        (ok = from_log_int(item, FW_EPOCH, &part->epoch)) <= 0)
        return ok;
    return part->partition >= INT32_MIN && part->partition <= INT32_MAX;
}

/* 1 the same name, 0 not, -1 error */
static int same_name(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    return PyUnicode_Compare(a, b) == 0 ? 1 : (PyErr_Occurred() ? -1 : 0);
}

/* The index of the first batch to read from ``offset`` (PartitionLog._first_index), or -1 (error set)
   / -2 (not the usual layout). */
static Py_ssize_t first_batch(PyObject *batches, PyObject *bases, int64_t offset) {
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(bases);
    while (lo < hi) { /* bisect_right */
        Py_ssize_t mid = (lo + hi) / 2;
        int64_t base;
        if (!get_int(PyList_GET_ITEM(bases, mid), INT64_MIN, INT64_MAX, &base)) return -2;
        if (offset < base) hi = mid;
        else lo = mid + 1;
    }
    Py_ssize_t i = lo - 1;
    if (i < 0) return 0;
    if (i >= PyList_GET_SIZE(batches)) return -2;
    int64_t last;
    int ok = from_log_int(PyList_GET_ITEM(batches, i), FB_LAST, &last);
    if (ok <= 0) return ok < 0 ? -1 : -2;
    return last < offset ? i + 1 : i;
}

/* Whether the partition is the usual one: led here, its epoch current (or not given), no open
   transaction, the offset within its log (its end and start in *end, *start).  1, 0 not, -1 error. */
static int usual_log(WantedPart *part, int version, int64_t broker_id, int64_t *end, int64_t *start) {
    PyObject *log = part->log;
    int64_t leader, epoch;
    int ok;
    if ((ok = from_log_int(log, FL_LEADER, &leader)) <= 0) return ok;
    if (leader != broker_id) return 0;
    if ((ok = from_log_int(log, FL_EPOCH, &epoch)) <= 0) return ok;
    if (version >= 9 && part->epoch >= 0 && part->epoch != epoch) return 0;
    if ((ok = from_log_int(log, FL_NEXT, end)) <= 0 || (ok = from_log_int(log, FL_START, start)) <= 0) return ok;
    if (part->offset < *start || part->offset > *end) return 0;
    PyObject *producers = from_log_get(log, FL_PRODUCERS);
    PyObject *open_txns = producers == NULL ? NULL : from_log_get(producers, FP_OPEN_TXNS);
    int open = open_txns == NULL ? -1 : PyObject_IsTrue(open_txns);
    Py_XDECREF(producers);
    Py_XDECREF(open_txns);
    return open < 0 ? -1 : !open; /* an open transaction: its last stable offset is the Python path's */
}

/* What one partition's answer holds, read as PartitionLog.read reads (the first batch of the answer
   even when larger than what is left).  1 (``*taken`` += its batches' size), 0 not the usual one, -1 error. */
static int plan_from_log(WantedPart *part, int version, int64_t broker_id, int64_t budget, int isolation,
                         int64_t *taken) {
    PyObject *log = part->log, *batches = NULL, *bases = NULL, *producers = NULL, *value = NULL;
    int ok = usual_log(part, version, broker_id, &part->end, &part->start);
    if (ok <= 0) return ok;
    ok = -1;
    Py_ssize_t first = 0, last = 0;
    int64_t size = 0;
    Py_ssize_t record_bytes = 0;
    if (part->offset < part->end) {
        if ((batches = from_log_get(log, FL_BATCHES)) == NULL || (bases = from_log_get(log, FL_BASES)) == NULL) goto done;
        ok = 0;
        if (!PyList_CheckExact(batches) || !PyList_CheckExact(bases)) goto done;
        first = first_batch(batches, bases, part->offset);
        if (first < 0) {
            ok = first == -1 ? -1 : 0;
            goto done;
        }
        int64_t room = budget - *taken;
        int64_t max_bytes = part->max_bytes < room ? part->max_bytes : (room > 0 ? room : 0);
        for (last = first; last < PyList_GET_SIZE(batches); last++) {
            PyObject *batch = PyList_GET_ITEM(batches, last), *buffers;
            int64_t batch_size;
            if ((ok = from_log_int(batch, FB_SIZE, &batch_size)) <= 0) goto done;
            if (size + batch_size > max_bytes && (last > first || *taken != 0)) break;
            if ((buffers = from_log_get(batch, FB_BUFFERS)) == NULL) {
                ok = -1;
                goto done;
            }
            ok = PyTuple_CheckExact(buffers);
            for (Py_ssize_t k = 0; ok && k < PyTuple_GET_SIZE(buffers); k++) {
                Py_ssize_t n;
                ok = buffer_size(PyTuple_GET_ITEM(buffers, k), &n);
                record_bytes += n;
            }
            Py_DECREF(buffers);
            if (!ok) goto done;
            size += batch_size;
        }
        if (isolation && last > first) { /* aborted transactions to list: the Python path does */
            if ((producers = from_log_get(log, FL_PRODUCERS)) == NULL) {
                ok = -1;
                goto done;
            }
            value = from_log_get(producers, FP_ABORTED);
            ok = value == NULL ? -1 : 0;
            if (value == NULL || !PyList_CheckExact(value) || PyList_GET_SIZE(value) != 0) goto done;
        }
    }
    ok = 0;
    if (record_bytes > INT32_MAX) goto done;
    part->first = first;
    part->last = last;
    part->size = size;
    part->record_bytes = record_bytes;
    part->included = 1;
    if (last > first) part->batches = Py_NewRef(batches);
    *taken += size;
    ok = 1;
done:
    Py_XDECREF(batches);
    Py_XDECREF(bases);
    Py_XDECREF(producers);
    Py_XDECREF(value);
    return ok;
}

/* One planned partition's answer written.  1, 0 not the usual one, -1 error. */
static int put_planned(Writer *w, WantedPart *part, int version, int isolation, Holes *holes) {
    if (!put_int(w, part->partition, 4) || !put_int(w, 0, 2) || !put_int(w, part->end, 8) ||
        !put_int(w, part->end, 8))
        return 0;
    if (version >= 5 && !put_int(w, part->start, 8)) return 0;
    if (!put_size(w, isolation ? 0 : -1, 1)) return 0; /* aborted transactions: none, or null */
    if (version >= 11 && !put_int(w, -1, 4)) return 0;  /* no preferred read replica */
    if (!put_size(w, part->record_bytes, 1)) return 0;
    for (Py_ssize_t i = part->first; i < part->last; i++) {
        PyObject *buffers = from_log_get(PyList_GET_ITEM(part->batches, i), FB_BUFFERS);
        if (buffers == NULL || !PyTuple_CheckExact(buffers)) {
            int ok = buffers == NULL ? -1 : 0;
            Py_XDECREF(buffers);
            return ok;
        }
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(buffers); k++) {
            PyObject *chunk = PyTuple_GET_ITEM(buffers, k);
            Py_ssize_t n;
            buffer_size(chunk, &n);
            int kept;
            if (n > hole_threshold) { /* left as a hole: written from where it is stored */
                kept = keep_hole(holes, w->len, chunk, n);
            } else if ((kept = grow(w, n))) {
                memcpy(w->buf + w->len, buffer_bytes(chunk), (size_t)n);
                w->len += n;
            }
            if (!kept) {
                Py_DECREF(buffers);
                return 0;
            }
        }
        Py_DECREF(buffers);
    }
    return !w->flexible || put_uvarint(w, 0);
}

/* The frame's buffers: the written bytes with the holes' buffers between them (api._framed). */
static PyObject *frame_of(Writer *w, Holes *holes) {
    Py_ssize_t size = w->len - 4 + holes->bytes;
    if (size > INT32_MAX) return Py_NewRef(Py_None);
    for (int i = 0; i < 4; i++) w->buf[i] = (char)((uint32_t)size >> (8 * (3 - i)));
    if (holes->count == 0) {
        PyObject *out = PyByteArray_FromStringAndSize(w->buf, w->len);
        if (out == NULL) return NULL;
        PyObject *frame = PyList_New(1);
        if (frame == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(frame, 0, out);
        return frame;
    }
    PyObject *frame = PyList_New(0);
    if (frame == NULL) return NULL;
    Py_ssize_t start = 0;
    for (Py_ssize_t i = 0; i <= holes->count; i++) {
        Py_ssize_t at = i < holes->count ? holes->items[i].at : w->len;
        if (at > start) {
            PyObject *piece = PyBytes_FromStringAndSize(w->buf + start, at - start);
            int failed = piece == NULL || PyList_Append(frame, piece) < 0;
            Py_XDECREF(piece);
            if (failed) goto fail;
        }
        if (i < holes->count && PyList_Append(frame, holes->items[i].buffer) < 0) goto fail;
        start = at;
    }
    return frame;
fail:
    Py_DECREF(frame);
    return NULL;
}

/* An incremental session's answer leaves out the partitions whose (high watermark, last stable offset,
   log start, error) is what the session last sent and that have nothing to read (k01_fetch._build);
   ``states``: the session's SessionPartition of each wanted partition (or None).  The new states are
   made here (``fresh``: a tuple each, or NULL where there is no SessionPartition) and set once the
   answer is written.  0, or -1 on error. */
static int session_changes(WantedPart *parts, Py_ssize_t count, PyObject *states, int incremental,
                           PyObject **fresh) {
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *sp = PyList_GET_ITEM(states, i);
        if (sp == Py_None) continue;
        PyObject *end = PyLong_FromLongLong(parts[i].end), *start = PyLong_FromLongLong(parts[i].start);
        fresh[i] = end && start ? PyTuple_Pack(4, end, end, start, zero_int) : NULL;
        Py_XDECREF(end);
        Py_XDECREF(start);
        PyObject *sent = fresh[i] == NULL ? NULL : PyObject_GetAttr(sp, s_last_sent);
        int same = sent == NULL ? -1 : PyObject_RichCompareBool(sent, fresh[i], Py_EQ);
        Py_XDECREF(sent);
        if (same < 0) return -1;
        if (incremental && same && parts[i].last == parts[i].first) parts[i].included = 0;
    }
    return 0;
}

/* answer_from_logs with its arguments: a new reference to (frame, bytes), (None, bytes) when fewer than
   ``min_bytes`` are there (nothing written or changed), or None; NULL on error. */
static PyObject *from_logs(PyObject *wanted, int version, int correlation_id, long long broker_id, long long budget,
                           int isolation, long long min_bytes, long long session_id, PyObject *states,
                           int incremental) {
    Py_ssize_t count = PyList_GET_SIZE(wanted);
    if (!ready || version < 4 || version > 18 || count == 0) Py_RETURN_NONE;
    if (states != Py_None && (!PyList_CheckExact(states) || PyList_GET_SIZE(states) != count)) Py_RETURN_NONE;
    if (intern_sites() < 0) return NULL;
    if (zero_int == NULL && (zero_int = PyLong_FromLong(0)) == NULL) return NULL;
    if (s_last_sent == NULL && (s_last_sent = PyUnicode_InternFromString("last_sent")) == NULL) return NULL;
    WantedPart *parts = PyMem_Calloc(count, sizeof(WantedPart));
    Py_ssize_t *heads = PyMem_Malloc(count * sizeof(Py_ssize_t)); /* where each topic's partitions start */
    PyObject **fresh = states != Py_None ? PyMem_Calloc(count, sizeof(PyObject *)) : NULL;
    Writer w = {PyMem_Malloc(256), 0, 256, version >= 12};
    Holes holes = {NULL, 0, 0, 0};
    PyObject *result = NULL;
    if (parts == NULL || heads == NULL || w.buf == NULL || (states != Py_None && fresh == NULL)) {
        PyErr_NoMemory();
        goto done;
    }
    int ok = 1;
    Py_ssize_t topics = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if ((ok = read_wanted(PyList_GET_ITEM(wanted, i), &parts[i])) <= 0) break;
        if (i > 0) {
            int same = same_name(parts[i].name, parts[i - 1].name);
            if (same < 0) {
                ok = -1;
                break;
            }
            if (same) continue;
        }
        /* a new topic group: its name in an earlier group (the same topic named twice apart) is the
           Python path's, which answers it as one topic */
        int seen = 0;
        for (Py_ssize_t j = 0; j < topics && seen == 0; j++) seen = same_name(parts[i].name, parts[heads[j]].name);
        if (seen != 0) {
            ok = seen > 0 ? 0 : -1;
            break;
        }
        heads[topics++] = i;
    }
    int64_t taken = 0;
    for (Py_ssize_t i = 0; ok > 0 && i < count; i++) ok = plan_from_log(&parts[i], version, broker_id, budget, isolation, &taken);
    if (ok <= 0) goto decline;
    if (taken < min_bytes) { /* not yet: nothing to write, nothing changed */
        PyObject *bytes = PyLong_FromLongLong(taken);
        result = bytes == NULL ? NULL : PyTuple_Pack(2, Py_None, bytes);
        Py_XDECREF(bytes);
        goto done;
    }
    if (states != Py_None && session_changes(parts, count, states, incremental, fresh) < 0) goto done;
    Py_ssize_t answered_topics = 0;
    for (Py_ssize_t t = 0; t < topics; t++) {
        Py_ssize_t to = t + 1 < topics ? heads[t + 1] : count;
        for (Py_ssize_t i = heads[t]; i < to; i++)
            if (parts[i].included) {
                answered_topics++;
                break;
            }
    }
    if (!put_int(&w, 0, 4) || !put_int(&w, correlation_id, 4) || (w.flexible && !put_uvarint(&w, 0)) ||
        !put_int(&w, 0, 4) || (version >= 7 && (!put_int(&w, 0, 2) || !put_int(&w, session_id, 4))) ||
        !put_size(&w, answered_topics, 1))
        goto decline;
    for (Py_ssize_t t = 0; t < topics; t++) {
        Py_ssize_t from = heads[t], to = t + 1 < topics ? heads[t + 1] : count, included = 0;
        for (Py_ssize_t i = from; i < to; i++) included += parts[i].included;
        if (included == 0) continue;
        if (version >= 13) {
            PyObject *id = parts[from].topic_id;
            if (!PyBytes_CheckExact(id) || PyBytes_GET_SIZE(id) != 16 || !grow(&w, 16)) goto decline;
            memcpy(w.buf + w.len, PyBytes_AS_STRING(id), 16);
            w.len += 16;
        } else if (!put_string(&w, parts[from].name, 0)) {
            goto decline;
        }
        if (!put_size(&w, included, 1)) goto decline;
        for (Py_ssize_t i = from; i < to; i++) {
            if (!parts[i].included) continue;
            int written = put_planned(&w, &parts[i], version, isolation, &holes);
            if (written < 0) goto done;
            if (written == 0) goto decline;
        }
        if (w.flexible && !put_uvarint(&w, 0)) goto decline;
    }
    if (w.flexible && !put_uvarint(&w, 0)) goto decline;
    PyObject *frame = frame_of(&w, &holes);
    if (frame == NULL || frame == Py_None) {
        result = frame;
        goto done;
    }
    for (Py_ssize_t i = 0; fresh != NULL && i < count; i++) /* the session's states, as _build sets them */
        if (fresh[i] != NULL && PyObject_SetAttr(PyList_GET_ITEM(states, i), s_last_sent, fresh[i]) < 0) {
            Py_DECREF(frame);
            goto done;
        }
    PyObject *bytes = PyLong_FromLongLong(taken);
    result = bytes == NULL ? NULL : PyTuple_Pack(2, frame, bytes);
    Py_DECREF(frame);
    Py_XDECREF(bytes);
    goto done;
decline:
    if (!PyErr_Occurred()) result = Py_NewRef(Py_None);
done:
    if (parts != NULL)
        for (Py_ssize_t i = 0; i < count; i++) drop_part(&parts[i]);
    if (fresh != NULL)
        for (Py_ssize_t i = 0; i < count; i++) Py_XDECREF(fresh[i]);
    PyMem_Free(parts);
    PyMem_Free(heads);
    PyMem_Free(fresh);
    PyMem_Free(w.buf);
    drop_holes(&holes);
    return result;
}

static PyObject *answer_from_logs(PyObject *self, PyObject *args) {
    PyObject *wanted, *states = Py_None;
    int version, correlation_id, isolation, incremental = 0;
    long long broker_id, budget, min_bytes = 0, session_id = 0;
    if (!PyArg_ParseTuple(args, "O!iiLLi|LLOp:answer_from_logs", &PyList_Type, &wanted, &version, &correlation_id,
                          &broker_id, &budget, &isolation, &min_bytes, &session_id, &states, &incremental))
        return NULL;
    return from_logs(wanted, version, correlation_id, broker_id, budget, isolation, min_bytes, session_id, states,
                     incremental);
}

#endif
