// SPDX-License-Identifier: Apache-2.0
/* The C API from a C11 program (gcc -std=c11 -Wall -Wextra -Werror):
 *   c_api_test FILE ALGORITHM MIN AVG MAX [KEY_HEX|-] [level=N seed=N poly=HEX window=N ...]
 * chunks FILE through every feeding path of cdc.h (memory, fd, read callback
 * with short reads, caller buffer, cut_lengths whole and piecewise) and
 * checks that they agree, that the digests of cdc_digests equal cdc_digest's,
 * and that errors come back as codes with messages; then prints
 * "offset,length,blake3" per chunk (as `cdc chunk --csv`) for the driver
 * (c_api_check.sh) to compare with the cdc tool. Exit 0 only if all holds. */
#define _POSIX_C_SOURCE 200809L
#include <cdc/cdc.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "c_api_test:%d: check failed: %s\n", __LINE__, #cond); \
            ++failures;                                                          \
        }                                                                        \
    } while (0)

typedef struct {
    uint64_t *offsets;
    uint32_t *lengths;
    size_t count;
} chunk_list;

static void list_free(chunk_list *l) {
    free(l->offsets);
    free(l->lengths);
    l->offsets = NULL;
    l->lengths = NULL;
    l->count = 0;
}

static int list_equal(const chunk_list *a, const chunk_list *b) {
    if (a->count != b->count) return 0;
    for (size_t i = 0; i < a->count; ++i)
        if (a->offsets[i] != b->offsets[i] || a->lengths[i] != b->lengths[i]) return 0;
    return 1;
}

/* Takes every chunk of the chunker's current source; checks each chunk's
 * bytes against `data` (the whole input). */
static int drain(cdc_chunker *c, const uint8_t *data, size_t size, chunk_list *out) {
    size_t cap = 16;
    out->offsets = malloc(cap * sizeof *out->offsets);
    out->lengths = malloc(cap * sizeof *out->lengths);
    out->count = 0;
    cdc_chunk chunk;
    int rc;
    while ((rc = cdc_chunker_next(c, &chunk)) == CDC_OK) {
        if (out->count == cap) {
            cap *= 2;
            out->offsets = realloc(out->offsets, cap * sizeof *out->offsets);
            out->lengths = realloc(out->lengths, cap * sizeof *out->lengths);
        }
        CHECK(chunk.offset + chunk.length <= size);
        CHECK(chunk.length > 0 && memcmp(chunk.data, data + chunk.offset, chunk.length) == 0);
        out->offsets[out->count] = chunk.offset;
        out->lengths[out->count] = (uint32_t)chunk.length;
        ++out->count;
    }
    CHECK(rc == CDC_END);
    CHECK(cdc_chunker_offset(c) == size);
    CHECK(cdc_chunker_next(c, &chunk) == CDC_END); /* stays at the end */
    return rc;
}

typedef struct {
    const uint8_t *data;
    size_t size, pos, step;
    int fail_at; /* fail once pos reaches this (-1: never) */
} short_reader;

static ptrdiff_t read_short(void *context, uint8_t *buffer, size_t capacity) {
    short_reader *r = context;
    if (r->fail_at >= 0 && r->pos >= (size_t)r->fail_at) return -EIO;
    size_t n = r->size - r->pos;
    if (n > capacity) n = capacity;
    if (n > r->step) n = r->step;
    memcpy(buffer, r->data + r->pos, n);
    r->pos += n;
    return (ptrdiff_t)n;
}

static ptrdiff_t read_too_much(void *context, uint8_t *buffer, size_t capacity) {
    (void)context;
    (void)buffer;
    return (ptrdiff_t)capacity + 1;
}

static int parse_hex_key(const char *hex, uint8_t key[32]) {
    if (strlen(hex) != 64) return 0;
    for (int i = 0; i < 32; ++i) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) return 0;
        key[i] = (uint8_t)v;
    }
    return 1;
}

static void check_errors(void) {
    cdc_chunker *c = NULL;
    /* an unknown name: a handle with the message, to be freed */
    CHECK(cdc_chunker_new("no-such-algorithm", NULL, &c) == CDC_E_OPTION);
    CHECK(c != NULL && strstr(cdc_chunker_error(c), "no-such-algorithm") != NULL);
    cdc_chunk chunk;
    CHECK(cdc_chunker_next(c, &chunk) == CDC_E_OPTION); /* a failed handle stays usable for errors */
    cdc_chunker_free(c);

    cdc_options opt = CDC_OPTIONS_INIT;
    opt.min_size = 65536;
    opt.max_size = 4096;
    CHECK(cdc_chunker_new("fastcdc", &opt, &c) == CDC_E_OPTION);
    CHECK(strstr(cdc_chunker_error(c), "min") != NULL);
    cdc_chunker_free(c);

    /* a parameter the name does not take is an error, never ignored */
    cdc_options_init(&opt);
    opt.params = CDC_PARAM_POLYNOMIAL;
    opt.polynomial = 0x3DA3358B4DC173u;
    CHECK(cdc_chunker_new("fastcdc-v1.0.0", &opt, &c) == CDC_E_OPTION);
    CHECK(strstr(cdc_chunker_error(c), "polynomial") != NULL);
    cdc_chunker_free(c);
    CHECK(cdc_chunker_new("restic-rabin", &opt, &c) == CDC_OK); /* restic's own default polynomial */
    cdc_chunker_free(c);
    opt.polynomial = 0x3DA3358B4DC172u; /* divisible by x: reducible */
    CHECK(cdc_chunker_new("restic-rabin", &opt, &c) == CDC_E_OPTION);
    CHECK(strstr(cdc_chunker_error(c), "polynomial") != NULL);
    cdc_chunker_free(c);
    cdc_options_init(&opt);
    opt.params = 0x80u; /* no such parameter */
    CHECK(cdc_chunker_new("borg-buzhash", &opt, &c) == CDC_E_OPTION);
    CHECK(strstr(cdc_chunker_error(c), "params") != NULL);
    cdc_chunker_free(c);
    CHECK(cdc_algorithm_params("no-such-algorithm") == 0);
    CHECK(cdc_algorithm_params("kfastcdc") == (CDC_PARAM_KEY | CDC_PARAM_KEY_REQUIRED));
    CHECK(cdc_algorithm_params("borg-buzhash") == (CDC_PARAM_SEED | CDC_PARAM_WINDOW));
    CHECK(cdc_algorithm_params("fastcdc-rs-v2020") == (CDC_PARAM_LEVEL | CDC_PARAM_SEED));

    cdc_options zero;
    memset(&zero, 0, sizeof zero);
    CHECK(cdc_chunker_new("fastcdc", &zero, &c) == CDC_E_OPTION); /* struct_size missing */
    CHECK(strstr(cdc_chunker_error(c), "struct_size") != NULL);
    cdc_chunker_free(c);

    CHECK(cdc_chunker_new("kfastcdc", NULL, &c) == CDC_E_OPTION); /* needs a key */
    cdc_chunker_free(c);

    uint8_t small[100];
    cdc_options_init(&opt);
    opt.buffer = small;
    opt.buffer_size = sizeof small;
    CHECK(cdc_chunker_new("fastcdc", &opt, &c) == CDC_E_OPTION);
    CHECK(strstr(cdc_chunker_error(c), "max_size") != NULL);
    cdc_chunker_free(c);

    /* a newer caller's struct: extra fields must be zero */
    struct {
        cdc_options base;
        uint64_t newer_field;
    } grown;
    memset(&grown, 0, sizeof grown);
    grown.base.struct_size = sizeof grown;
    CHECK(cdc_chunker_new("fastcdc", &grown.base, &c) == CDC_OK);
    cdc_chunker_free(c);
    grown.newer_field = 1;
    CHECK(cdc_chunker_new("fastcdc", &grown.base, &c) == CDC_E_OPTION);
    cdc_chunker_free(c);

    CHECK(cdc_chunker_new("fastcdc", NULL, NULL) == CDC_E_OPTION);
    cdc_chunker_free(NULL);

    CHECK(cdc_chunker_new("fastcdc", NULL, &c) == CDC_OK);
    CHECK(strcmp(cdc_chunker_error(c), "") == 0);
    CHECK(cdc_chunker_next(c, &chunk) == CDC_END); /* no source yet: an empty stream */
    CHECK(cdc_chunker_set_fd(c, -1) == CDC_E_OPTION && strstr(cdc_chunker_error(c), "fd") != NULL);
    CHECK(cdc_chunker_set_reader(c, NULL, NULL) == CDC_E_OPTION);
    CHECK(cdc_chunker_next(c, NULL) == CDC_E_OPTION);

    /* a failing callback: CDC_E_IO with the errno's text, until the next set_* */
    static const uint8_t bytes[300000];
    short_reader r = {bytes, sizeof bytes, 0, 4096, 100000};
    CHECK(cdc_chunker_set_reader(c, read_short, &r) == CDC_OK);
    int rc;
    size_t seen = 0;
    while ((rc = cdc_chunker_next(c, &chunk)) == CDC_OK) seen += chunk.length;
    CHECK(rc == CDC_E_IO);
    CHECK(strstr(cdc_chunker_error(c), strerror(EIO)) != NULL);
    CHECK(seen < 100000); /* bytes buffered before the failure never come out as a chunk */
    CHECK(cdc_chunker_next(c, &chunk) == CDC_E_IO);
    CHECK(cdc_chunker_set_memory(c, bytes, 10) == CDC_OK && strcmp(cdc_chunker_error(c), "") == 0);
    CHECK(cdc_chunker_next(c, &chunk) == CDC_OK && chunk.length == 10 && chunk.data == bytes);

    CHECK(cdc_chunker_set_reader(c, read_too_much, NULL) == CDC_OK);
    CHECK(cdc_chunker_next(c, &chunk) == CDC_E_IO && strstr(cdc_chunker_error(c), "bytes") != NULL);
    cdc_chunker_free(c);

    uint8_t digest[CDC_DIGEST_MAX_SIZE];
    CHECK(cdc_digest(99, "x", 1, digest) == CDC_E_OPTION);
    CHECK(cdc_digest_size(99) == 0);
    uint32_t too_long = 2;
    CHECK(cdc_digests(CDC_DIGEST_BLAKE3, "x", 1, &too_long, 1, digest) == CDC_E_OPTION);
    CHECK(strcmp(cdc_status_name(CDC_E_IO), "input/output error") == 0);
}

static void check_digests(const uint8_t *data, const chunk_list *l) {
    /* BLAKE3("abc"), from the reference implementation */
    static const char abc[] = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85";
    uint8_t d[CDC_DIGEST_MAX_SIZE];
    char hex[65];
    CHECK(cdc_digest(CDC_DIGEST_BLAKE3, "abc", 3, d) == CDC_OK);
    for (int i = 0; i < 32; ++i) snprintf(hex + 2 * i, 3, "%02x", d[i]);
    CHECK(strcmp(hex, abc) == 0);

    const int kinds[] = {CDC_DIGEST_BLAKE3, CDC_DIGEST_SHA256, CDC_DIGEST_XXH3};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k) {
        const size_t ds = cdc_digest_size(kinds[k]);
        uint8_t *all = malloc(l->count * ds + 1);
        size_t total = 0;
        for (size_t i = 0; i < l->count; ++i) total += l->lengths[i];
        CHECK(cdc_digests(kinds[k], data, total, l->lengths, l->count, all) == CDC_OK);
        for (size_t i = 0; i < l->count; ++i) {
            CHECK(cdc_digest(kinds[k], data + l->offsets[i], l->lengths[i], d) == CDC_OK);
            CHECK(memcmp(d, all + i * ds, ds) == 0);
        }
        free(all);
    }
}

/* "level=N", "seed=N", "poly=HEX" or "window=N" into the options; 0 if
 * the argument is none of them. */
static int parse_param(const char *arg, cdc_options *opt) {
    const char *eq = strchr(arg, '=');
    if (eq == NULL) return 0;
    const size_t n = (size_t)(eq - arg);
    const char *value = eq + 1;
    if (n == 5 && strncmp(arg, "level", n) == 0) {
        opt->params |= CDC_PARAM_LEVEL;
        opt->level = atoi(value);
    } else if (n == 4 && strncmp(arg, "seed", n) == 0) {
        opt->params |= CDC_PARAM_SEED;
        opt->seed = strtoull(value, NULL, 10);
    } else if (n == 4 && strncmp(arg, "poly", n) == 0) {
        opt->params |= CDC_PARAM_POLYNOMIAL;
        opt->polynomial = strtoull(value, NULL, 16);
    } else if (n == 6 && strncmp(arg, "window", n) == 0) {
        opt->params |= CDC_PARAM_WINDOW;
        opt->window = (size_t)strtoull(value, NULL, 10);
    } else {
        return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: c_api_test FILE ALGORITHM MIN AVG MAX [KEY_HEX|-] [level=N seed=N poly=HEX window=N]\n");
        return 2;
    }
    const char *path = argv[1];
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    const size_t size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(size + 1);
    if (fread(data, 1, size, f) != size) {
        perror(path);
        return 2;
    }
    fclose(f);

    CHECK(strlen(cdc_version()) >= 5);
    CHECK(cdc_algorithm_count() >= 10 && cdc_algorithm_name(cdc_algorithm_count()) == NULL);
    int known = 0;
    for (size_t i = 0; i < cdc_algorithm_count(); ++i) known |= strcmp(cdc_algorithm_name(i), argv[2]) == 0;
    CHECK(known);

    cdc_options opt = CDC_OPTIONS_INIT;
    opt.min_size = strtoull(argv[3], NULL, 10);
    opt.avg_size = strtoull(argv[4], NULL, 10);
    opt.max_size = strtoull(argv[5], NULL, 10);
    uint8_t key[32];
    if (argc >= 7 && strcmp(argv[6], "-") != 0) {
        if (!parse_hex_key(argv[6], key)) {
            fprintf(stderr, "bad key\n");
            return 2;
        }
        opt.key = key;
    }
    for (int i = 7; i < argc; ++i) {
        if (!parse_param(argv[i], &opt)) {
            fprintf(stderr, "bad parameter %s\n", argv[i]);
            return 2;
        }
    }
    /* every parameter given is one the name takes (else new fails below) */
    CHECK((opt.params & ~cdc_algorithm_params(argv[2])) == 0);
    cdc_chunker *c = NULL;
    if (cdc_chunker_new(argv[2], &opt, &c) != CDC_OK) {
        fprintf(stderr, "c_api_test: %s\n", c ? cdc_chunker_error(c) : "out of memory");
        cdc_chunker_free(c);
        return 1;
    }
    CHECK(strcmp(cdc_chunker_algorithm(c), argv[2]) == 0);
    cdc_profile p;
    CHECK(cdc_chunker_profile(c, &p) == CDC_OK && p.min_size > 0 && p.min_size <= p.max_size);
    /* the profile reports the parameters given */
    if (opt.params & CDC_PARAM_LEVEL) CHECK(p.level == opt.level);
    if (opt.params & CDC_PARAM_SEED) CHECK(p.seed == opt.seed);
    if (opt.params & CDC_PARAM_POLYNOMIAL) CHECK(p.polynomial == opt.polynomial);
    if (opt.params & CDC_PARAM_WINDOW) CHECK(p.window == opt.window);
    if (cdc_algorithm_params(argv[2]) & CDC_PARAM_POLYNOMIAL) CHECK(p.polynomial != 0); /* its default */
    CHECK(p.keyed == (opt.key != NULL));

    /* memory: chunks point into the caller's bytes (no copy) */
    chunk_list mem;
    CHECK(cdc_chunker_set_memory(c, data, size) == CDC_OK);
    cdc_chunk first;
    if (size > 0 && cdc_chunker_next(c, &first) == CDC_OK) CHECK(first.data == data && first.offset == 0);
    CHECK(cdc_chunker_set_memory(c, data, size) == CDC_OK); /* back to the start */
    drain(c, data, size, &mem);

    /* all cut lengths at once, and piecewise (at_end = 0, then the rest) */
    const size_t cap = cdc_max_chunks(c, size);
    uint32_t *lengths = malloc(cap * sizeof *lengths + 1);
    size_t count = 0, done = 0;
    CHECK(cdc_cut_lengths(c, data, size, 1, lengths, cap, &count, &done) == CDC_OK);
    CHECK(count == mem.count && done == size);
    for (size_t i = 0; i < count && i < mem.count; ++i) CHECK(lengths[i] == mem.lengths[i]);
    size_t pos = 0, n = 0;
    for (size_t piece = p.max_size + 12345; pos < size;) {
        const size_t len = size - pos < piece ? size - pos : piece;
        const int at_end = pos + len == size;
        CHECK(cdc_cut_lengths(c, data + pos, len, at_end, lengths + n, cap - n, &count, &done) == CDC_OK);
        CHECK(at_end ? done == len : done <= len);
        n += count;
        pos += done;
        if (at_end) break;
    }
    CHECK(n == mem.count && pos == size);
    for (size_t i = 0; i < n && i < mem.count; ++i) CHECK(lengths[i] == mem.lengths[i]);
    free(lengths);

    /* a file descriptor */
    chunk_list other;
    const int fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && cdc_chunker_set_fd(c, fd) == CDC_OK);
    drain(c, data, size, &other);
    CHECK(list_equal(&mem, &other));
    list_free(&other);
    close(fd);

    /* a read callback, short reads of several sizes */
    const size_t steps[] = {1, 997, 4096, 65537, (size_t)1 << 30};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; ++i) {
        if (steps[i] < 4096 && size > (1u << 20)) continue; /* keep the test fast */
        short_reader r = {data, size, 0, steps[i], -1};
        CHECK(cdc_chunker_set_reader(c, read_short, &r) == CDC_OK);
        drain(c, data, size, &other);
        CHECK(list_equal(&mem, &other));
        list_free(&other);
    }
    cdc_chunker_free(c);

    /* a caller-owned buffer of exactly max_size bytes */
    void *buffer = malloc(p.max_size);
    opt.buffer = buffer;
    opt.buffer_size = p.max_size;
    CHECK(cdc_chunker_new(argv[2], &opt, &c) == CDC_OK);
    short_reader r = {data, size, 0, 65536, -1};
    CHECK(cdc_chunker_set_reader(c, read_short, &r) == CDC_OK);
    drain(c, data, size, &other);
    CHECK(list_equal(&mem, &other));
    list_free(&other);
    cdc_chunker_free(c);
    free(buffer);

    check_digests(data, &mem);
    check_errors();

    /* offset,length,blake3 per chunk, as `cdc chunk --csv` */
    uint8_t *digests = malloc(mem.count * 32 + 1);
    CHECK(cdc_digests(CDC_DIGEST_BLAKE3, data, size, mem.lengths, mem.count, digests) == CDC_OK);
    printf("offset,length,digest\n");
    for (size_t i = 0; i < mem.count; ++i) {
        printf("%llu,%u,", (unsigned long long)mem.offsets[i], (unsigned)mem.lengths[i]);
        for (int j = 0; j < 32; ++j) printf("%02x", digests[i * 32 + (size_t)j]);
        printf("\n");
    }
    free(digests);
    list_free(&mem);
    free(data);
    if (failures) fprintf(stderr, "c_api_test: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
