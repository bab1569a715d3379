/* CRC-32C of long buffers by carry-less multiplication (VPCLMULQDQ on 512-bit registers), for CPUs that
   have AVX-512 and VPCLMULQDQ: 256 bytes a step, about twice the speed of the crc32 instruction's three
   interleaved streams that the crc32c package uses (on this project's AMD EPYC; 256-bit registers,
   tried there, were no faster than the package, so CPUs without AVX-512 keep it).  Included by
   batch_checks.h; the caller checks crc32c_fold_here() first and passes buffers of at least
   CRC32C_FOLD_MIN bytes.

   How it works (Intel's "Fast CRC Computation Using PCLMULQDQ", in the reflected bit order CRC-32C
   uses).  A 16-byte lane X of the message, loaded little-endian, is the polynomial X(x) whose x^127
   term is the first bit on the wire.  Its share of the CRC is unchanged if X is replaced by a 16-byte
   Z = X * x^D mod P placed D bits further on and XORed into the data there ("folding" X forward by D
   bits).  With X's low quadword Xh and high quadword Xl, X = Xh * x^64 + Xl, and a carry-less product
   of two reflected 64-bit values comes out multiplied by x once more, so
       Z = clmul(Xh, x^(D+31) mod P) ^ clmul(Xl, x^(D-33) mod P)
   with each constant stored as a reflected 32-bit value in the low half of its quadword (which reads as
   the constant times x^32).  Four 512-bit accumulators (16 lanes) fold forward by 2048 bits over the
   buffer; they are then folded into one lane, which takes the last whole 16-byte pieces, and the crc32
   instruction finishes with that lane and the last 0-15 bytes.  The initial value ~0 is XORed into the
   first four bytes (the same as starting the register at ~0), the result inverted at the end.
   tests/records/test_crc32c_fold.py holds it to the crc32c package at every length and alignment. */
#ifndef MOCKBROKER_CRC32C_FOLD_H
#define MOCKBROKER_CRC32C_FOLD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CRC32C_FOLD_MIN 256

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8
#define CRC32C_FOLD_BUILT 1
#include <immintrin.h>

#define CRC32C_NORMAL_POLY 0x1EDC6F41u  /* x^32 + ... in the normal (not reflected) bit order */

/* x^e mod P as a reflected 32-bit value (bit 31 - j holds the x^j coefficient). */
static uint32_t crc32c_xpow(unsigned int e) {
    uint64_t r = 1;
    for (unsigned int i = 0; i < e; i++) {
        r <<= 1;
        if (r & 0x100000000ull) r ^= 0x100000000ull | CRC32C_NORMAL_POLY;
    }
    uint32_t reflected = 0;
    for (int j = 0; j < 32; j++)
        if (r & (1ull << j)) reflected |= 1u << (31 - j);
    return reflected;
}

/* Folding constants for a distance of D bits: (low quadword's, high quadword's). */
typedef struct { uint64_t low, high; } Crc32cFoldPair;

static Crc32cFoldPair crc32c_fold_pair(unsigned int d) {
    Crc32cFoldPair k = {crc32c_xpow(d + 31), crc32c_xpow(d - 33)};
    return k;
}

static struct {
    Crc32cFoldPair by2048, by512, by384, by256, by128;
} crc32c_fold_k;

static void crc32c_fold_setup(void) {
    crc32c_fold_k.by2048 = crc32c_fold_pair(2048);
    crc32c_fold_k.by512 = crc32c_fold_pair(512);
    crc32c_fold_k.by384 = crc32c_fold_pair(384);
    crc32c_fold_k.by256 = crc32c_fold_pair(256);
    crc32c_fold_k.by128 = crc32c_fold_pair(128);
}

/* 1 when this CPU runs the folding loop (checked once; the constants are in place before the answer
   is published, so a thread that finds it 1 reads them whole: callers that may run without the GIL
   ask first with the GIL held). */
static int crc32c_fold_here(void) {
    static int known = -1;
    int here = __atomic_load_n(&known, __ATOMIC_ACQUIRE);
    if (here < 0) {
        __builtin_cpu_init();
        here = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul") &&
               __builtin_cpu_supports("sse4.2");
        if (here) crc32c_fold_setup();
        __atomic_store_n(&known, here, __ATOMIC_RELEASE);
    }
    return here;
}

#define CRC32C_LANE_TARGET __attribute__((target("pclmul,sse4.2")))
#define CRC32C_ZMM_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))

CRC32C_LANE_TARGET static inline __m128i crc32c_fold128(__m128i x, Crc32cFoldPair k, __m128i next) {
    __m128i kv = _mm_set_epi64x((long long)k.high, (long long)k.low);
    __m128i low = _mm_clmulepi64_si128(x, kv, 0x00);
    __m128i high = _mm_clmulepi64_si128(x, kv, 0x11);
    return _mm_xor_si128(_mm_xor_si128(low, high), next);
}

/* The end: ``lane`` stands for everything before p; the last whole 16-byte pieces are folded into it,
   the crc32 instruction sums it and the last 0-15 bytes. */
CRC32C_LANE_TARGET static uint32_t crc32c_fold_finish(__m128i lane, const unsigned char *p, size_t n) {
    for (; n >= 16; p += 16, n -= 16)
        lane = crc32c_fold128(lane, crc32c_fold_k.by128, _mm_loadu_si128((const void *)p));
    uint64_t crc = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(lane));
    crc = _mm_crc32_u64(crc, (uint64_t)_mm_extract_epi64(lane, 1));
    uint32_t small = (uint32_t)crc;
    for (; n > 0; p++, n--) small = _mm_crc32_u8(small, *p);
    return ~small;
}

CRC32C_ZMM_TARGET static inline __m512i crc32c_fold512(__m512i x, __m512i k, __m512i next) {
    __m512i low = _mm512_clmulepi64_epi128(x, k, 0x00);
    __m512i high = _mm512_clmulepi64_epi128(x, k, 0x11);
    return _mm512_ternarylogic_epi64(low, high, next, 0x96); /* low ^ high ^ next */
}

CRC32C_ZMM_TARGET static inline __m512i crc32c_k512(Crc32cFoldPair k) {
    return _mm512_set_epi64((long long)k.high, (long long)k.low, (long long)k.high, (long long)k.low,
                            (long long)k.high, (long long)k.low, (long long)k.high, (long long)k.low);
}

/* Four 512-bit accumulators, 256 bytes a step; n >= 256. */
CRC32C_ZMM_TARGET static uint32_t crc32c_fold_zmm(const unsigned char *p, size_t n) {
    const __m512i by2048 = crc32c_k512(crc32c_fold_k.by2048);
    __m512i x0 = _mm512_loadu_si512((const void *)p);
    __m512i x1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i x2 = _mm512_loadu_si512((const void *)(p + 128));
    __m512i x3 = _mm512_loadu_si512((const void *)(p + 192));
    x0 = _mm512_xor_si512(x0, _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1));
    p += 256;
    n -= 256;
    for (; n >= 256; p += 256, n -= 256) {
        x0 = crc32c_fold512(x0, by2048, _mm512_loadu_si512((const void *)p));
        x1 = crc32c_fold512(x1, by2048, _mm512_loadu_si512((const void *)(p + 64)));
        x2 = crc32c_fold512(x2, by2048, _mm512_loadu_si512((const void *)(p + 128)));
        x3 = crc32c_fold512(x3, by2048, _mm512_loadu_si512((const void *)(p + 192)));
    }
    const __m512i by512 = crc32c_k512(crc32c_fold_k.by512);
    x1 = crc32c_fold512(x0, by512, x1);
    x2 = crc32c_fold512(x1, by512, x2);
    x3 = crc32c_fold512(x2, by512, x3);
    __m128i lane = _mm512_extracti32x4_epi32(x3, 3);
    lane = crc32c_fold128(_mm512_extracti32x4_epi32(x3, 2), crc32c_fold_k.by128, lane);
    lane = crc32c_fold128(_mm512_extracti32x4_epi32(x3, 1), crc32c_fold_k.by256, lane);
    lane = crc32c_fold128(_mm512_castsi512_si128(x3), crc32c_fold_k.by384, lane);
    return crc32c_fold_finish(lane, p, n);
}

/* The CRC-32C (initial ~0, result inverted, as Kafka's batches carry it) of p[0:n], n >= CRC32C_FOLD_MIN,
   on a CPU where crc32c_fold_here() said 1. */
static uint32_t crc32c_fold(const unsigned char *p, size_t n) { return crc32c_fold_zmm(p, n); }
#endif

#endif
