/* Optional C codec for the request every consumer sends most: FetchResponse, versions 4-18, written
   from the very objects of the generated codec (mockbroker/protocol/generated/fetch_response.py), and
   FetchRequest decoded into them (fetch_request_reader.h: setup_request, decode_request).

   setup(FetchResponse, FetchableTopicResponse, PartitionData, AbortedTransaction, EpochEndOffset,
         LeaderIdAndEpoch, SnapshotId, hole_threshold)
       Called once by mockbroker.protocol.fast_fetch: finds where each slot of those classes lives.

   encode_response(response, version, out, holes) -> True or None
       Appends the body to the bytearray ``out`` when every field is what a usual answer holds (no
       diverging epoch, leader hint or snapshot id, no node endpoints, no unknown tags, plain lists,
       values in range, records None, one bytes-like object or a list of them), as the generated
       writer would, record buffers larger than ``hole_threshold`` left as holes (``(offset in out,
       buffer)`` appended to ``holes``, as runtime.write_records leaves them); None (``out`` and
       ``holes`` unchanged) otherwise, and the generated writer runs instead.

   tests/protocol/test_fast_fetch.py holds it equal to the generated writer.  The writer and the reader
   live in mockbroker/native/codecs/ (fetch_response_writer.h, fetch_request_reader.h); this file
   gathers them and the lane's headers into the module.

   answer_from_logs (fetch_from_logs.h), setup_wanted, wanted_from_request (fetch_wanted.h): the usual
   Fetch answered straight from the partition logs, frame and all, and its partitions found; setup_wait, park
   (fetch_wait.h): its long poll; fetch_lane (fetch_lane.h): all of it from the frame; for mockbroker/handlers/k01_fetch.py (tests/protocol/test_fetch_from_logs.py holds them equal to the
   handler's Python path).
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "wire_writer.h"

#define MAX_SLOTS 13 /* FetchRequest's */

#include "struct_slots.h"
#include "fetch_request_reader.h"
#include "fetch_response_writer.h"
#include "fetch_from_logs.h"
#include "fetch_wanted.h"
#include "fetch_wait.h"
#include "fetch_lane.h"

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(*generated classes, hole_threshold): learn where their slots live."},
    {"encode_response", encode_response, METH_VARARGS,
     "encode_response(response, version, out, holes) -> True, or None when the generated writer must run."},
    {"setup_request", setup_request, METH_VARARGS,
     "setup_request(*generated request classes, zero_uuid): learn where their slots live."},
    {"decode_request", decode_request, METH_VARARGS,
     "decode_request(frame, pos, version) -> (FetchRequest, end), or None when the generated reader must run."},
    {"answer_from_logs", answer_from_logs, METH_VARARGS,
     "answer_from_logs(wanted, version, correlation_id, broker_id, budget, isolation) -> (frame, record bytes), or "
     "None when the Python path must answer (fetch_from_logs.h)."},
    {"setup_wait", setup_wait, METH_VARARGS, "setup_wait(Encoded, fallback): what park()'s waiters answer with."},
    {"park", (PyCFunction)(void (*)(void))park, METH_FASTCALL,
     "park(ctx, req, wanted, answer, loop, connection, version, correlation_id, broker_id, budget, isolation, "
     "min_bytes, wait_s): a long poll answered from the logs (fetch_wait.h)."},
    {"fetch_lane", fetch_lane, METH_VARARGS,
     "fetch_lane(frame, version, correlation_id, topics, topics_by_id, broker_id, fetch_max_bytes, about_kind) -> "
     "(request, client_id, about, wanted, answer, bytes), or None (fetch_lane.h)."},
    {"setup_wanted", setup_wanted, METH_O, "setup_wanted(Wanted): learn where the handler's Wanted keeps its fields."},
    {"wanted_from_request", wanted_from_request, METH_VARARGS,
     "wanted_from_request(topics, known, broker_id, use_ids) -> [Wanted], or None (fetch_from_logs.h)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "mockbroker.native._fastfetch",
    "Optional C codec for FetchResponse and FetchRequest (see protocol/fast_fetch.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__fastfetch(void) { return PyModule_Create(&module); }
