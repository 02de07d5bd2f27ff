// SPDX-License-Identifier: Apache-2.0
/* cdc/cdc.h — the C API of cdc-chunkers (C11; also usable from C++).
 *
 * Content-defined chunking with every algorithm name of the library (the
 * boundaries are those of go-cdc-chunkers, byte for byte), fed from memory
 * (zero copy), a file descriptor or a read callback, plus chunk digests.
 *
 *   cdc_options opt = CDC_OPTIONS_INIT;        // zero sizes: the defaults
 *   opt.avg_size = 16384;
 *   cdc_chunker *c = NULL;
 *   if (cdc_chunker_new("fastcdc-v1.0.0", &opt, &c) != CDC_OK) {
 *       fprintf(stderr, "%s\n", c ? cdc_chunker_error(c) : "out of memory");
 *       cdc_chunker_free(c);
 *       return 1;
 *   }
 *   cdc_chunker_set_fd(c, fd);
 *   cdc_chunk chunk;
 *   int rc;
 *   while ((rc = cdc_chunker_next(c, &chunk)) == CDC_OK)
 *       store(chunk.offset, chunk.data, chunk.length);   // valid until the next call
 *   if (rc != CDC_END) fprintf(stderr, "%s\n", cdc_chunker_error(c));
 *   cdc_chunker_free(c);
 *
 * Errors: every function that can fail returns a cdc_status (CDC_OK = 0,
 * errors are negative). A function given a handle records a message naming
 * the problem in that handle (cdc_chunker_error); like sqlite3_open,
 * cdc_chunker_new sets *out to a handle even when it fails (unless memory
 * runs out), so that the message can be read, and that handle must be freed.
 * No C++ exception ever leaves a function of this API.
 *
 * Threads: a chunker is used by one thread at a time; distinct chunkers are
 * independent (they share only immutable tables). The free functions are
 * thread-safe.
 *
 * Link with -lcdc (pkg-config cdc-c; CMake: find_package(cdc), target
 * cdc::cdc_shared). */
#ifndef CDC_CDC_H
#define CDC_CDC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ status */

typedef enum cdc_status {
    CDC_OK = 0,            /* success (cdc_chunker_next: here is a chunk) */
    CDC_END = 1,           /* cdc_chunker_next: the stream has no more chunks */
    CDC_E_OPTION = -1,     /* invalid algorithm name, option or argument */
    CDC_E_IO = -2,         /* the source failed (read error, callback error) */
    CDC_E_NOMEM = -3,      /* out of memory */
    CDC_E_INTERNAL = -4    /* a bug: please report it with the message */
} cdc_status;

/* A constant name for a status: "ok", "end", "invalid option", ... */
const char *cdc_status_name(int status);

/* The library's version, e.g. "0.1.0". */
const char *cdc_version(void);

/* -------------------------------------------------------------- algorithms */

/* Number of algorithm names, and the name at `index` (NULL past the end),
 * in a stable order. The strings are static. */
size_t cdc_algorithm_count(void);
const char *cdc_algorithm_name(size_t index);

/* The options a name takes beyond the sizes, as CDC_PARAM_* bits (0 for an
 * unknown name): CDC_PARAM_KEY if it takes a key (CDC_PARAM_KEY_REQUIRED
 * too if it needs one), and each of the cdc_options parameters it takes. */
#define CDC_PARAM_LEVEL 0x1u
#define CDC_PARAM_SEED 0x2u
#define CDC_PARAM_POLYNOMIAL 0x4u
#define CDC_PARAM_WINDOW 0x8u
#define CDC_PARAM_KEY 0x100u
#define CDC_PARAM_KEY_REQUIRED 0x200u
unsigned int cdc_algorithm_params(const char *name);

/* ----------------------------------------------------------------- options */

/* Chunking options. Initialise with CDC_OPTIONS_INIT (or cdc_options_init):
 * `struct_size` tells the library which version of this struct the caller
 * was compiled with, so that fields can be added at the end without breaking
 * programs built against an older cdc.h. A size of zero means the
 * algorithm's default. */
typedef struct cdc_options {
    size_t struct_size;        /* sizeof(cdc_options) */
    size_t min_size;
    size_t avg_size;           /* the normal size */
    size_t max_size;
    const uint8_t *key;        /* NULL, or 32 bytes: keyed Gear table (copied) */
    /* A caller-owned scan buffer for the stream sources (fd, callback), of
     * at least max_size bytes, that outlives the chunker; NULL: the chunker
     * allocates max(2 x max_size, 256 KiB) bytes the first time it reads. */
    void *buffer;
    size_t buffer_size;
    /* The parameters some names take beyond the sizes (cdc_algorithm_params
     * says which): each is used only when its CDC_PARAM_* bit is set in
     * `params`; a parameter given to a name that does not take it is an
     * error (never ignored). Unset, a name uses its default. */
    unsigned int params;       /* CDC_PARAM_LEVEL | CDC_PARAM_SEED | ... */
    int level;                 /* fastcdc-rs-v2016/v2020: normalization level 0..3 */
    uint64_t seed;             /* fastcdc-rs-v2020 (64 bits), borg-buzhash (32 bits) */
    uint64_t polynomial;       /* restic-rabin: irreducible, degree 8..53 */
    size_t window;             /* borg-buzhash: rolling hash window in bytes */
} cdc_options;

#define CDC_OPTIONS_INIT {sizeof(cdc_options), 0, 0, 0, NULL, NULL, 0, 0u, 0, 0, 0, 0}

/* Sets every field to CDC_OPTIONS_INIT. */
void cdc_options_init(cdc_options *options);

/* ---------------------------------------------------------------- chunker */

typedef struct cdc_chunker cdc_chunker;

/* One chunk: its offset in the stream, its length and a pointer to its bytes,
 * valid until the next call on the chunker (next, set_*, free) or, for a
 * memory source, as long as that memory lives. */
typedef struct cdc_chunk {
    uint64_t offset;
    size_t length;
    const uint8_t *data;
} cdc_chunk;

/* The sizes and parameters a chunker uses once defaults are applied. */
typedef struct cdc_profile {
    size_t min_size;
    size_t avg_size;
    size_t max_size;
    int keyed;
    /* The parameters in use (defaults applied); 0 for those the name does
     * not take (cdc_algorithm_params). */
    int level;
    uint64_t seed;
    uint64_t polynomial;
    size_t window;
} cdc_profile;

/* A read callback: writes up to `capacity` bytes to `buffer` and returns
 * their number (> 0), 0 at the end of the stream, or a negative value on
 * failure (-errno, if there is one: the chunker's message names it). It may
 * return fewer bytes than asked for. */
typedef ptrdiff_t (*cdc_read_fn)(void *context, uint8_t *buffer, size_t capacity);

/* Creates a chunker for `algorithm` (e.g. "fastcdc-v1.0.0") with `options`
 * (NULL: the defaults), validated. On success *out is the chunker, with an
 * empty source. On failure *out is a handle that holds the message (or NULL
 * if memory ran out): read it with cdc_chunker_error, then free it. */
int cdc_chunker_new(const char *algorithm, const cdc_options *options, cdc_chunker **out);

/* Frees a chunker (NULL is ignored). */
void cdc_chunker_free(cdc_chunker *chunker);

/* The message of the last failure on this chunker ("" if none). Valid until
 * the next call on the chunker. */
const char *cdc_chunker_error(const cdc_chunker *chunker);

/* The algorithm name and the resolved profile. */
const char *cdc_chunker_algorithm(const cdc_chunker *chunker);
int cdc_chunker_profile(const cdc_chunker *chunker, cdc_profile *out);

/* Moves the chunker onto a new stream (its buffer is kept, the offset is 0):
 *  - memory: `size` bytes at `data`, chunked in place (no copy); the memory
 *    must stay valid and unchanged while chunks are taken from it;
 *  - fd: an open descriptor, read with read(2) (not closed by the chunker);
 *  - reader: a callback and its context. */
int cdc_chunker_set_memory(cdc_chunker *chunker, const void *data, size_t size);
int cdc_chunker_set_fd(cdc_chunker *chunker, int fd);
int cdc_chunker_set_reader(cdc_chunker *chunker, cdc_read_fn read, void *context);

/* The next chunk: CDC_OK and *out, CDC_END at the end of the stream, or an
 * error (CDC_E_IO if the source failed; every later call returns the same
 * error until a set_* call). */
int cdc_chunker_next(cdc_chunker *chunker, cdc_chunk *out);

/* Bytes of the current stream consumed so far (the next chunk's offset). */
uint64_t cdc_chunker_offset(const cdc_chunker *chunker);

/* All the cut lengths of a buffer at once, with the chunker's algorithm (its
 * source is not used nor changed). Cuts chunks from the start of `data` and
 * writes their lengths to `lengths`, until `capacity` lengths are written or
 * no further chunk can be cut. With `at_end` non-zero the buffer ends the
 * stream and every byte is cut once capacity >= cdc_max_chunks(chunker,
 * size); with `at_end` zero a chunk is cut only where a full max_size window
 * is present, and the rest waits for more data (call again with it in
 * front). *bytes_done (may be NULL) receives the bytes consumed and
 * *count the lengths written. */
int cdc_cut_lengths(cdc_chunker *chunker, const void *data, size_t size, int at_end, uint32_t *lengths,
                    size_t capacity, size_t *count, size_t *bytes_done);

/* The most chunks a buffer of `size` bytes can hold: size / min_size + 1. */
size_t cdc_max_chunks(const cdc_chunker *chunker, size_t size);

/* ----------------------------------------------------------------- digests */

typedef enum cdc_digest_kind {
    CDC_DIGEST_BLAKE3 = 1,  /* BLAKE3-256, 32 bytes */
    CDC_DIGEST_SHA256 = 2,  /* SHA-256, 32 bytes */
    CDC_DIGEST_XXH3 = 3     /* XXH3-128, 16 bytes (not cryptographic) */
} cdc_digest_kind;

#define CDC_DIGEST_MAX_SIZE 32

/* The digest length in bytes, or 0 for an unknown kind. */
size_t cdc_digest_size(int kind);

/* The digest of `size` bytes at `data`, written to out[0 .. digest_size). */
int cdc_digest(int kind, const void *data, size_t size, uint8_t *out);

/* The digests of `count` consecutive chunks: chunk 0 starts at data[0] and
 * chunk i + 1 right after chunk i, with lengths[i] bytes (the lengths must
 * add up to at most `size`). Digest i is written to
 * out[i * cdc_digest_size(kind) ..]. For BLAKE3 the chunks are hashed side
 * by side (SIMD lanes): much faster than one cdc_digest per small chunk. */
int cdc_digests(int kind, const void *data, size_t size, const uint32_t *lengths, size_t count, uint8_t *out);

#ifdef __cplusplus
}
#endif

#endif /* CDC_CDC_H */
