/* One Produce frame through the lane, checked whole before anything is appended: produce_frame(), which
   _producelane's produce() and borrow() (produce_lane_staging.h) call; see _producelane.c's module
   comment for what it answers.  Reading the request and writing the answer live in produce_lane_wire.h,
   appending in produce_lane_append.h, the batch checks in mockbroker/native/codecs/batch_checks.h. */
#ifndef MOCKBROKER_PRODUCE_LANE_FRAME_H
#define MOCKBROKER_PRODUCE_LANE_FRAME_H

#include <Python.h>
#include <limits.h>
#include <stdint.h>

#include "batch_checks.h"
#include "lz4_frames.h"
#include "member_sites.h"
#include "produce_lane_slots.h"
#include "produce_lane_wire.h"
#include "produce_lane_append.h"

/* ---- checking each partition ------------------------------------------------------------------ */

/* a + b and a - b clamped to int64, as records.check clamps the Python-int bounds */
static int64_t clamped_add(int64_t a, int64_t b) {
    int64_t out;
    if (__builtin_add_overflow(a, b, &out)) return b > 0 ? INT64_MAX : INT64_MIN;
    return out;
}

static int64_t clamped_sub(int64_t a, int64_t b) {
    int64_t out;
    if (__builtin_sub_overflow(a, b, &out)) return b > 0 ? INT64_MIN : INT64_MAX;
    return out;
}

/* The topic's lane settings: 1 when usable, 0 when the Python path must run, 2 when they must be
   (re)computed first, -1 on error.  The stored tuple: (topic generation, broker generation, eligible,
   max.message.bytes, timestamp before max ms, after max ms, keys required, records checked). */
static int topic_settings(PyObject *topic, TopicPlan *tp, PyObject *broker_generation, int64_t now_ms) {
    static MemberSite cache_site, config_site, generation_site;
    PyObject *cache = site_get(&cache_site, topic, s_answer_cache);
    if (cache == NULL) return -1;
    PyObject *entry = PyDict_Check(cache) ? PyDict_GetItemWithError(cache, settings_key) : NULL;
    Py_DECREF(cache);
    if (entry == NULL) return PyErr_Occurred() ? -1 : 2;
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 8) return 2;
    PyObject *config = site_get(&config_site, topic, s_config);
    if (config == NULL) return -1;
    PyObject *generation = site_get(&generation_site, config, s_generation);
    Py_DECREF(config);
    if (generation == NULL) return -1;
    int same = PyObject_RichCompareBool(generation, PyTuple_GET_ITEM(entry, 0), Py_EQ);
    Py_DECREF(generation);
    if (same < 0) return -1;
    if (same) same = PyObject_RichCompareBool(broker_generation, PyTuple_GET_ITEM(entry, 1), Py_EQ);
    if (same < 0) return -1;
    if (!same) return 2;
    int64_t max_bytes, before, after;
    if (PyTuple_GET_ITEM(entry, 2) != Py_True) return 0;
    if (!as_int64(PyTuple_GET_ITEM(entry, 3), &max_bytes) || !as_int64(PyTuple_GET_ITEM(entry, 4), &before) ||
        !as_int64(PyTuple_GET_ITEM(entry, 5), &after))
        return 0;
    tp->max_bytes = max_bytes > PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : max_bytes < 0 ? -1 : (Py_ssize_t)max_bytes;
    tp->lo = clamped_sub(now_ms, before);
    tp->hi = clamped_add(now_ms, after);
    tp->need_keys = PyTuple_GET_ITEM(entry, 6) == Py_True;
    tp->check_records = PyTuple_GET_ITEM(entry, 7) == Py_True;
    return 1;
}

/* The records of a compressed batch, through the system's liblz4 (lz4_frames.h) for one lz4 frame, else
   through ``decompress`` (batches.decompressed): 1, 0 (they do not pass, or do not decompress: the
   Python path names why), -1 on error. */
static int compressed_records_pass(PyObject *frame, const unsigned char *b, Part *part, PyObject *decompress,
                                   TopicPlan *tp) {
    size_t out_len;
    if ((part->f.attributes & 0x07) == 3 && lz4_cap > 0 &&
        lz4_frame_into_scratch(b + part->start + HEADER_SIZE, (size_t)(part->len - HEADER_SIZE), lz4_cap,
                               &out_len)) {
        int ok = check((const unsigned char *)lz4_scratch, 0, (Py_ssize_t)out_len, part->f.record_count,
                       part->f.base_timestamp, tp->lo, tp->hi, 1, tp->need_keys);
        lz4_scratch_done(); /* check() kept the GIL: no other thread used the scratch meanwhile */
        return ok;
    }
    PyObject *batch = PySequence_GetSlice(frame, part->start, part->start + part->len);
    if (batch == NULL) return -1;
    PyObject *data = PyObject_CallFunction(decompress, "Oi", batch, part->f.attributes & 0x07);
    Py_DECREF(batch);
    if (data == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) return -1;
        PyErr_Clear();
        return 0;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        Py_DECREF(data);
        return -1;
    }
    int ok = records_pass(view.buf, 0, view.len, part->f.record_count, part->f.base_timestamp, tp->lo, tp->hi, 1,
                          tp->need_keys);
    PyBuffer_Release(&view);
    Py_DECREF(data);
    return ok;
}

/* An idempotent batch: 1 when the partition's producer state would append it as it is (not a retry, in
   sequence: PartitionProducers.admits), 0 when the handler must answer it, -1 on error. */
static int sequence_admits(Part *part) {
    part->producers = log_get(part->log, LOG_PRODUCERS);
    if (part->producers == NULL) return -1;
    PyObject *last = PyObject_CallMethod(part->producers, "admits", "Liii", (long long)part->f.producer_id,
                                         (int)part->f.producer_epoch, (int)part->f.base_sequence,
                                         (int)part->f.record_count);
    if (last == NULL) return -1;
    int64_t last_seq;
    int ok = last != Py_None && as_int64(last, &last_seq);
    Py_DECREF(last);
    if (ok) part->last_seq = (int32_t)last_seq;
    return ok;
}

/* 1 when the partition is led here and its batch passes every check; 0: the Python path; -1: error. */
static int check_part(PyObject *frame, const unsigned char *b, Part *part, TopicPlan *tp, long broker_id,
                      int version, PyObject *crc32c, PyObject *decompress) {
    if (part->index < 0 || part->index >= PyList_GET_SIZE(tp->partitions)) return 0;
    part->log = Py_NewRef(PyList_GET_ITEM(tp->partitions, part->index));
    PyObject *leader = log_get(part->log, LOG_LEADER);
    if (leader == NULL) return -1;
    int64_t leader_id;
    int led = as_int64(leader, &leader_id) && leader_id == broker_id;
    Py_DECREF(leader);
    if (!led) return 0;
    int ok = envelope(b + part->start, part->len, version, tp->max_bytes, tp->check_records ? crc32c : Py_None,
                      &part->f);
    if (ok <= 0) return ok;
    if (part->f.producer_id >= 0 && (part->f.attributes & 0x10)) return 0;  /* transactional: the handler */
    if (tp->check_records) {
        ok = (part->f.attributes & 0x07) == 0
                 ? records_pass(b + part->start, HEADER_SIZE, part->len, part->f.record_count,
                                part->f.base_timestamp, tp->lo, tp->hi, 1, tp->need_keys)
                 : compressed_records_pass(frame, b, part, decompress, tp);
        if (ok <= 0) return ok;
    }
    return part->f.producer_id >= 0 ? sequence_admits(part) : 1;
}

/* Does a partition before parts[i] name the same partition?  (Sequences are checked before anything is
   appended, so an idempotent batch following another to the same partition is left to the handler.) */
static int named_before(Plan *p, Py_ssize_t i) {
    for (Py_ssize_t j = 0; j < i; j++)
        if (p->parts[j].log == p->parts[i].log) return 1;
    return 0;
}

/* The journal's form of a Produce's facts: ((topic, (partition, ...)), ...), as facts.journal_about. */
static PyObject *journal_pairs(Plan *p) {
    PyObject *pairs = PyTuple_New(p->ntopics);
    if (pairs == NULL) return NULL;
    for (Py_ssize_t t = 0; t < p->ntopics; t++) {
        TopicPlan *tp = &p->topics[t];
        PyObject *indexes = PyTuple_New(tp->count);
        if (indexes == NULL) goto fail;
        for (Py_ssize_t i = 0; i < tp->count; i++) {
            PyObject *index = PyLong_FromLong(p->parts[tp->first + i].index);
            if (index == NULL) {
                Py_DECREF(indexes);
                goto fail;
            }
            PyTuple_SET_ITEM(indexes, i, index);
        }
        PyObject *pair = PyTuple_Pack(2, tp->name, indexes);
        Py_DECREF(indexes);
        if (pair == NULL) goto fail;
        PyTuple_SET_ITEM(pairs, t, pair);
    }
    return pairs;
fail:
    Py_DECREF(pairs);
    return NULL;
}

/* ---- produce() ------------------------------------------------------------------------------- */

static PyObject *produce_frame(PyObject *frame, int version, PyObject *topics, long broker_id, long long now_ms,
                               PyObject *broker_generation, PyObject *crc32c, PyObject *decompress,
                               Py_ssize_t cap_room, int journal, int borrowed) {
    if (stored_type == NULL || !PyMemoryView_Check(frame) || version < 3 || version > 12) Py_RETURN_NONE;
    Py_buffer *buffer = PyMemoryView_GET_BUFFER(frame);
    if (buffer->itemsize != 1 || buffer->ndim != 1 || !PyBuffer_IsContiguous(buffer, 'C') || buffer->obj == NULL)
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)buffer->buf;
    Reader r = {frame, b, buffer->len, 8, 0};
    int ok;
    PyObject *client_id = read_client_id(&r, &ok);
    if (!ok) Py_RETURN_NONE;
    r.flexible = version >= 9;
    Plan plan = {NULL, NULL, 0, 0};
    PyObject *result = NULL, *own = NULL;
    if (!no_tags(&r) || !read_body(&r, &plan)) {  /* header tags, or a body of another shape */
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_MemoryError)) PyErr_Clear();
        goto fallback;
    }
    Py_ssize_t counted = 0;
    for (Py_ssize_t t = 0; t < plan.ntopics; t++) {
        TopicPlan *tp = &plan.topics[t];
        PyObject *topic = PyDict_GetItemWithError(topics, tp->name);
        if (topic == NULL) {
            if (PyErr_Occurred()) goto done;
            goto fallback;
        }
        int state = topic_settings(topic, tp, broker_generation, now_ms);
        if (state < 0) goto done;
        if (state == 2) {
            result = Py_NewRef(topic);
            goto done;
        }
        if (state == 0) goto fallback;
        static MemberSite partitions_site;
        tp->partitions = site_get(&partitions_site, topic, s_partitions);
        if (tp->partitions == NULL) goto done;
        if (!PyList_Check(tp->partitions)) goto fallback;
        for (Py_ssize_t i = tp->first; i < tp->first + tp->count; i++) {
            int passed = check_part(frame, b, &plan.parts[i], tp, broker_id, version, crc32c, decompress);
            if (passed < 0) goto done;
            if (!passed) goto fallback;
            if (plan.parts[i].producers != NULL && named_before(&plan, i)) goto fallback;
            counted += plan.parts[i].len + batch_overhead;
        }
    }
    if (cap_room >= 0 && counted > cap_room) goto fallback;  /* memory_cap decides, in Python */
    if (borrowed && buffer->len > large_frame && frame_buffer_fn != NULL) {  /* see setup_frames */
        own = own_frame(b, buffer->len);
        if (own == NULL) goto done;
        frame = own;
        buffer = PyMemoryView_GET_BUFFER(own);
        b = (const unsigned char *)buffer->buf;
        borrowed = 0;
    }
    Py_ssize_t frame_size = borrowed ? PY_SSIZE_T_MAX / 4 : PyObject_Length(buffer->obj);  /* borrowed: copy all */
    if (frame_size < 0) {  /* no length: never copied (memory_cap.detached) */
        PyErr_Clear();
        frame_size = 0;
    }
    Py_ssize_t stored = counted - plan.nparts * batch_overhead;  /* the batches' bytes, all stored */
    for (Py_ssize_t i = 0; i < plan.nparts; i++)
        if (append_part(frame, frame_size, stored, b, &plan.parts[i], now_ms) < 0) goto done;
    PyObject *answer = encode_answer(b, &plan, version);
    if (answer == NULL) goto done;
    PyObject *pairs = journal ? journal_pairs(&plan) : Py_NewRef(Py_None);
    if (pairs == NULL) {
        Py_DECREF(answer);
        goto done;
    }
    PyObject *count = PyLong_FromSsize_t(counted);
    result = count == NULL ? NULL : PyTuple_Pack(4, answer, count, pairs, client_id);
    Py_DECREF(answer);
    Py_XDECREF(count);
    Py_DECREF(pairs);
    goto done;
fallback:
    result = Py_NewRef(Py_None);
done:
    plan_free(&plan);
    Py_XDECREF(client_id);
    Py_XDECREF(own);
    return result;
}

#endif
