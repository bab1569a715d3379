/* LZ4 frames decompressed in C with the system's liblz4 (loaded with dlopen when the produce lane is set
   up; without it every lz4 batch goes through mockbroker.records.compression, as before).

   Why: a compressed batch's records are checked after decompressing them.  Through python-lz4 each batch
   costs four Python calls, a fresh decompression context, liblz4 copying every block through its own
   buffer (the output buffer it is given is not stable) and a bytes object; on librdkafka's lz4 load that
   was about a sixth of the broker's CPU.  Here one context is reused and the frame is decoded straight
   into one scratch region that is larger than any output allowed (the cap plus the largest LZ4 block),
   so liblz4 never copies: the region is reserved once and only the pages an output touches are
   resident (pages past SCRATCH_KEEP are handed back after a large output).

   lz4_frame_into_scratch() answers 1 only for exactly one well-formed frame that uses all of ``src`` and
   decompresses to at most ``cap`` bytes (checksums verified as the frame asks).  Anything else answers
   0 and the caller leaves the batch to the Python path, which accepts concatenated frames and names
   every problem; this never accepts a batch that path would refuse.  The scratch is one per process:
   the caller must hold the GIL from the call until it is done reading the output (lz4_scratch_busy is
   set meanwhile, so a second broker thread finding it busy takes the Python path).

   Only the ABI of liblz4's frame API is named here (stable since liblz4 1.8; LZ4F_VERSION is 100).
*/
#ifndef MOCKBROKER_LZ4_FRAMES_H
#define MOCKBROKER_LZ4_FRAMES_H

#include <Python.h>
#include <dlfcn.h>
#include <stddef.h>
#include <sys/mman.h>

#define LZ4F_ABI_VERSION 100
#define LZ4_LARGEST_BLOCK (4 << 20) /* block max size id 7 */
#define SCRATCH_KEEP (4 << 20)       /* resident bytes the scratch may keep between batches */

typedef struct {
    unsigned stable_dst; /* the output buffer stays put between calls: liblz4 keeps no copy of it */
    unsigned skip_checksums;
    unsigned reserved[2];
} Lz4DecompressOptions;

typedef size_t (*Lz4CreateFn)(void **, unsigned);
typedef size_t (*Lz4DecompressFn)(void *, void *, size_t *, const void *, size_t *, const Lz4DecompressOptions *);
typedef unsigned (*Lz4IsErrorFn)(size_t);
typedef void (*Lz4ResetFn)(void *);

static Lz4DecompressFn lz4_decompress_fn = NULL;
static Lz4IsErrorFn lz4_is_error_fn = NULL;
static Lz4ResetFn lz4_reset_fn = NULL;
static void *lz4_dctx = NULL;
static char *lz4_scratch = NULL;
static size_t lz4_scratch_size = 0, lz4_scratch_cap = 0, lz4_scratch_touched = 0;
static int lz4_scratch_busy = 0;
static unsigned long long lz4_frames_taken = 0; /* frames decompressed here (tests ask) */

/* Load liblz4 and reserve the scratch for outputs of up to ``cap`` bytes: 1 when ready, 0 when the
   library (or the reservation) is not available. */
static int lz4_frames_setup(size_t cap) {
    if (lz4_dctx != NULL) return cap <= lz4_scratch_cap;
    void *lib = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) return 0;
    Lz4CreateFn create = (Lz4CreateFn)dlsym(lib, "LZ4F_createDecompressionContext");
    lz4_decompress_fn = (Lz4DecompressFn)dlsym(lib, "LZ4F_decompress");
    lz4_is_error_fn = (Lz4IsErrorFn)dlsym(lib, "LZ4F_isError");
    lz4_reset_fn = (Lz4ResetFn)dlsym(lib, "LZ4F_resetDecompressionContext");
    if (create == NULL || lz4_decompress_fn == NULL || lz4_is_error_fn == NULL || lz4_reset_fn == NULL) return 0;
    size_t size = cap + LZ4_LARGEST_BLOCK + 1; /* room for a whole last block past the cap: no copies */
    void *region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED) return 0;
    void *dctx = NULL;
    if (lz4_is_error_fn(create(&dctx, LZ4F_ABI_VERSION)) || dctx == NULL) {
        munmap(region, size);
        return 0;
    }
    lz4_scratch = region;
    lz4_scratch_size = size;
    lz4_scratch_cap = cap;
    lz4_dctx = dctx;
    return 1;
}

static void lz4_scratch_done(void) {
    if (lz4_scratch_touched > SCRATCH_KEEP) { /* a large output: give its pages back */
        madvise(lz4_scratch + SCRATCH_KEEP, lz4_scratch_touched - SCRATCH_KEEP, MADV_DONTNEED);
        lz4_scratch_touched = SCRATCH_KEEP;
    }
    lz4_scratch_busy = 0;
}

/* Decompress the one frame in src[0:n] into the scratch; *out_len is its size.  1: done (the caller
   reads lz4_scratch[0:*out_len] and calls lz4_scratch_done); 0: not here (nothing to release). */
static int lz4_frame_into_scratch(const unsigned char *src, size_t n, size_t cap, size_t *out_len) {
    if (lz4_dctx == NULL || lz4_scratch_busy || cap > lz4_scratch_cap) return 0;
    lz4_scratch_busy = 1;
    lz4_reset_fn(lz4_dctx);
    Lz4DecompressOptions options = {1, 0, {0, 0}};
    size_t produced = lz4_scratch_size, consumed = n;
    size_t hint = lz4_decompress_fn(lz4_dctx, lz4_scratch, &produced, src, &consumed, &options);
    if (produced > lz4_scratch_touched) lz4_scratch_touched = produced;
    /* hint 0: the frame is complete; it must have used every byte and stayed within the cap */
    if (lz4_is_error_fn(hint) || hint != 0 || consumed != n || produced > cap) {
        lz4_reset_fn(lz4_dctx);
        lz4_scratch_done();
        return 0;
    }
    lz4_frames_taken++;
    *out_len = produced;
    return 1;
}

#endif
