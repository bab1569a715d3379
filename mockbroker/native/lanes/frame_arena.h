/* Buffers for large request frames (included by _reading.c): carved out of 16 MiB arenas the kernel
   backs with transparent huge pages.

   A produce request's frame is read into a buffer of its own, and its record batches are usually
   stored as views of that buffer, so every stored byte needs memory fresh from the kernel.  In 4 KiB
   pages that costs a page fault, a zeroed page and a memory-cgroup charge every 4 KiB: a third of the
   broker's CPU on a producer's stream of 64-512 KiB requests (perf, bench/replay.py).  A huge page is
   one fault and one charge for 2 MiB: the same 22 MB took 18 ms in small pages, 3 ms in huge ones.

   Frames are placed one after another in the current arena (a bump pointer); one that does not fit
   retires it and starts the next.  Each arena counts the live frames touching each of its huge pages:
   a page nothing lives in once the bump pointer has passed it is given back (MADV_DONTNEED), and the
   arena is unmapped when its last frame goes.  So a frame whose batches were copied out (or that was
   no produce request) frees its memory with its page's other frames, and memory held for nothing is
   at most one 2 MiB page per live frame.  Frames above ARENA_FRAME_MAX, and every frame where THP is
   off (/sys/kernel/mm/transparent_hugepage/enabled says never), not on Linux, or turned off
   (use_arenas(0): connection.py decides, see _huge_pages_pay), get the plain buffer (frame_buffer's
   bytearray). */
#ifndef MOCKBROKER_FRAME_ARENA_H
#define MOCKBROKER_FRAME_ARENA_H

#include <Python.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((size_t)2 << 20)
#define ARENA_BYTES ((size_t)16 << 20)
#define ARENA_PAGES (ARENA_BYTES / HUGE_PAGE)
#define ARENA_FRAME_MAX ((Py_ssize_t)(2 << 20)) /* larger frames get a buffer of their own */
#define FRAME_ALIGN ((size_t)64)

typedef struct {
    char *base;           /* ARENA_BYTES, aligned to HUGE_PAGE */
    size_t used;          /* the bump pointer: bytes handed out */
    Py_ssize_t frames;    /* live frames */
    int retired;          /* no longer the current arena: nothing more is handed out */
    unsigned int live[ARENA_PAGES]; /* live frames touching each huge page */
} Arena;

typedef struct {
    PyObject_HEAD
    Arena *arena;
    char *buf;
    Py_ssize_t size;
} ArenaFrame;

static Arena *current_arena = NULL;
static Py_ssize_t arenas_mapped = 0; /* arenas now mapped (tests ask: arena_count()) */
static int arenas_on = -1; /* -1: not yet decided (the first large frame reads the THP setting) */

static int thp_usable(void) {
#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MADV_DONTNEED)
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == NULL) return 0;
    char text[128] = {0};
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    return n > 0 && strstr(text, "[never]") == NULL;
#else
    return 0;
#endif
}

/* use_arenas(flag): large frames in huge-page arenas (1), never (0), or as the THP setting says (-1,
   the default, decided at the first large frame).  Returns the setting before. */
static PyObject *use_arenas(PyObject *module, PyObject *arg) {
    long flag = PyLong_AsLong(arg);
    if (flag == -1 && PyErr_Occurred()) return NULL;
    int before = arenas_on;
    arenas_on = flag < 0 ? -1 : flag > 0 && thp_usable();
    return PyLong_FromLong(before);
}

static PyObject *arena_count(PyObject *module, PyObject *unused) { return PyLong_FromSsize_t(arenas_mapped); }

static void page_release(Arena *a, size_t page) {
    (void)madvise(a->base + page * HUGE_PAGE, HUGE_PAGE, MADV_DONTNEED); /* errors: the page stays, harmless */
}

static int page_passed(Arena *a, size_t page) {
    return a->retired || a->used >= (page + 1) * HUGE_PAGE;
}

static void arena_drop(Arena *a) {
    (void)munmap(a->base, ARENA_BYTES);
    arenas_mapped--;
    PyMem_Free(a);
}

static void arena_retire(Arena *a) {
    a->retired = 1;
    if (a->frames == 0) {
        arena_drop(a);
        return;
    }
    for (size_t page = 0; page * HUGE_PAGE < a->used; page++)
        if (a->live[page] == 0) page_release(a, page);
}

static Arena *arena_new(void) {
    size_t span = ARENA_BYTES + HUGE_PAGE;
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    char *base = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (base > raw) (void)munmap(raw, (size_t)(base - raw));
    if (raw + span > base + ARENA_BYTES) (void)munmap(base + ARENA_BYTES, (size_t)(raw + span - (base + ARENA_BYTES)));
    if (madvise(base, ARENA_BYTES, MADV_HUGEPAGE) != 0) {
        (void)munmap(base, ARENA_BYTES);
        return NULL;
    }
    Arena *a = PyMem_Calloc(1, sizeof(Arena));
    if (a == NULL) {
        (void)munmap(base, ARENA_BYTES);
        return NULL;
    }
    a->base = base;
    arenas_mapped++;
    return a;
}

/* Where a frame of ``size`` bytes goes (and its arena), or NULL: no arena (the caller uses a bytearray). */
static char *arena_take(Py_ssize_t size, Arena **owner) {
    size_t need = ((size_t)size + FRAME_ALIGN - 1) & ~(FRAME_ALIGN - 1);
    if (current_arena == NULL || current_arena->used + need > ARENA_BYTES) {
        Arena *next = arena_new();
        if (next == NULL) return NULL; /* out of mappings, or no THP after all: plain buffers */
        if (current_arena != NULL) arena_retire(current_arena);
        current_arena = next;
    }
    Arena *a = current_arena;
    size_t at = a->used;
    a->used += need;
    for (size_t page = at / HUGE_PAGE; page <= (at + (size_t)size - 1) / HUGE_PAGE; page++) a->live[page]++;
    a->frames++;
    *owner = a;
    return a->base + at;
}

static void arena_give_back(Arena *a, char *buf, Py_ssize_t size) {
    if (--a->frames == 0 && a->retired) {
        arena_drop(a);
        return;
    }
    size_t at = (size_t)(buf - a->base);
    for (size_t page = at / HUGE_PAGE; page <= (at + (size_t)size - 1) / HUGE_PAGE; page++)
        if (--a->live[page] == 0 && page_passed(a, page)) page_release(a, page);
}

static void arena_frame_dealloc(ArenaFrame *self) {
    if (self->arena != NULL) arena_give_back(self->arena, self->buf, self->size);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int arena_frame_getbuffer(ArenaFrame *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->buf, self->size, 0, flags);
}

static Py_ssize_t arena_frame_length(ArenaFrame *self) {
    return self->size;
}

static PyBufferProcs arena_frame_as_buffer = {(getbufferproc)arena_frame_getbuffer, NULL};
static PySequenceMethods arena_frame_as_sequence = {.sq_length = (lenfunc)arena_frame_length};

static PyTypeObject ArenaFrameType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "mockbroker.native._reading.ArenaFrame",
    .tp_doc = "One large request frame's bytes in a huge-page arena (a writable buffer; len() is its size).",
    .tp_basicsize = sizeof(ArenaFrame),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)arena_frame_dealloc,
    .tp_as_buffer = &arena_frame_as_buffer,
    .tp_as_sequence = &arena_frame_as_sequence,
};

/* An ArenaFrame of ``size`` bytes whose pages are present, or NULL without an error: use a bytearray. */
static PyObject *arena_frame(Py_ssize_t size) {
    if (size <= 0 || size > ARENA_FRAME_MAX) return NULL;
    if (arenas_on < 0) arenas_on = thp_usable();
    if (!arenas_on) return NULL;
    ArenaFrame *self = PyObject_New(ArenaFrame, &ArenaFrameType);
    if (self == NULL) {
        PyErr_Clear();
        return NULL;
    }
    self->arena = NULL;
    self->size = size;
    self->buf = arena_take(size, &self->arena);
    if (self->buf == NULL) {
        arenas_on = 0;
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

#endif
