// SPDX-License-Identifier: Apache-2.0
// The C API (include/cdc/cdc.h): a thin layer over the C++ chunker. Every
// entry point catches every exception and turns it into a status code plus,
// where there is a handle, a message.
#include <cdc/cdc.h>

#include <cdc/cdc.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <new>
#include <optional>
#include <string>

struct cdc_chunker {
    std::shared_ptr<const cdc::CutFinder> finder;
    std::optional<cdc::Chunker> chunker;  // empty only while cdc_chunker_new fails
    std::string error;
};

namespace {

// The options as the first published cdc.h declares them. A library that
// adds fields reads them only when the caller's struct_size covers them.
constexpr std::size_t kOptionsV1Size = sizeof(cdc_options);

// Calls f() and maps what it throws to a status; the message goes to
// `error` when there is a handle to hold it.
template <class F>
int guarded(std::string* error, F&& f) noexcept {
    auto fail = [&](int status, const char* what) noexcept {
        if (error) {
            try {
                *error = what;
            } catch (...) {  // no memory for the message: the status says enough
                error->clear();
            }
        }
        return status;
    };
    try {
        const int status = f();
        if (error && status >= 0) error->clear();
        return status;
    } catch (const cdc::OptionError& e) {
        return fail(CDC_E_OPTION, e.what());
    } catch (const cdc::IoError& e) {
        return fail(CDC_E_IO, e.what());
    } catch (const std::bad_alloc&) {
        return fail(CDC_E_NOMEM, "out of memory");
    } catch (const std::exception& e) {
        return fail(CDC_E_INTERNAL, e.what());
    } catch (...) {
        return fail(CDC_E_INTERNAL, "unknown exception");
    }
}

// Adapts a C read callback to a cdc::Reader.
class CallbackReader final : public cdc::Reader {
public:
    CallbackReader(cdc_read_fn fn, void* context) : fn_(fn), context_(context) {}
    cdc::ReadResult read(std::span<std::byte> buffer) override {
        const std::ptrdiff_t n = fn_(context_, reinterpret_cast<std::uint8_t*>(buffer.data()), buffer.size());
        if (n < 0) {
            const auto err = static_cast<int>(-n);
            throw cdc::IoError(n >= -4095 ? fmt::format("read callback failed: {} ({})", std::strerror(err), n)
                                          : fmt::format("read callback failed ({})", n));
        }
        if (n == 0) return {0, true};
        if (static_cast<std::size_t>(n) > buffer.size())
            throw cdc::IoError(fmt::format("read callback returned {} bytes for a {}-byte buffer", n, buffer.size()));
        return {static_cast<std::size_t>(n), false};
    }

private:
    cdc_read_fn fn_;
    void* context_;
};

cdc::Options read_options(const cdc_options& in) {
    if (in.struct_size < kOptionsV1Size)
        throw cdc::OptionError(fmt::format("options.struct_size = {} is invalid: initialise the options with "
                                           "CDC_OPTIONS_INIT (sizeof(cdc_options) = {})",
                                           in.struct_size, sizeof(cdc_options)));
    // A caller built against a newer cdc.h: its extra fields must be unset.
    const auto* bytes = reinterpret_cast<const unsigned char*>(&in);
    for (std::size_t i = kOptionsV1Size; i < in.struct_size; ++i)
        if (bytes[i] != 0)
            throw cdc::OptionError(fmt::format("options.struct_size = {}: the options set fields this library "
                                               "({}) does not know",
                                               in.struct_size, cdc::kVersionString));
    cdc::Options o;
    o.min_size = in.min_size;
    o.normal_size = in.avg_size;
    o.max_size = in.max_size;
    if (in.key) {
        cdc::Key k;
        std::memcpy(k.data(), in.key, k.size());
        o.key = k;
    }
    constexpr unsigned kKnown = CDC_PARAM_LEVEL | CDC_PARAM_SEED | CDC_PARAM_POLYNOMIAL | CDC_PARAM_WINDOW;
    if ((in.params & ~kKnown) != 0)
        throw cdc::OptionError(fmt::format("options.params = {:#x} is invalid: only CDC_PARAM_LEVEL, "
                                           "CDC_PARAM_SEED, CDC_PARAM_POLYNOMIAL and CDC_PARAM_WINDOW ({:#x})",
                                           in.params, kKnown),
                               "params");
    if (in.params & CDC_PARAM_LEVEL) o.normalization_level = in.level;
    if (in.params & CDC_PARAM_SEED) o.seed = in.seed;
    if (in.params & CDC_PARAM_POLYNOMIAL) o.polynomial = in.polynomial;
    if (in.params & CDC_PARAM_WINDOW) o.window_size = in.window;
    return o;
}

std::span<std::byte> read_buffer(const cdc_options& in) {
    void* data = in.buffer;
    const std::size_t size = in.buffer_size;
    if ((data == nullptr) != (size == 0))
        throw cdc::OptionError(fmt::format("options.buffer and options.buffer_size ({}) must be given together",
                                           size));
    return {static_cast<std::byte*>(data), size};
}

cdc::DigestKind digest_kind(int kind) {
    switch (kind) {
        case CDC_DIGEST_BLAKE3: return cdc::DigestKind::blake3;
        case CDC_DIGEST_SHA256: return cdc::DigestKind::sha256;
        case CDC_DIGEST_XXH3: return cdc::DigestKind::xxh3;
        default: throw cdc::OptionError(fmt::format("digest kind {} is invalid", kind));
    }
}

}  // namespace

extern "C" {

const char* cdc_status_name(int status) {
    switch (status) {
        case CDC_OK: return "ok";
        case CDC_END: return "end of stream";
        case CDC_E_OPTION: return "invalid option";
        case CDC_E_IO: return "input/output error";
        case CDC_E_NOMEM: return "out of memory";
        case CDC_E_INTERNAL: return "internal error";
        default: return "unknown status";
    }
}

const char* cdc_version(void) { return cdc::kVersionString; }

size_t cdc_algorithm_count(void) { return cdc::algorithms().size(); }

const char* cdc_algorithm_name(size_t index) {
    const auto all = cdc::algorithms();
    // The registry's names are string literals (NUL-terminated).
    return index < all.size() ? all[index].name.data() : nullptr;
}

unsigned int cdc_algorithm_params(const char* name) {
    const cdc::AlgorithmInfo* a = name ? cdc::find_algorithm(name) : nullptr;
    if (a == nullptr) return 0;
    unsigned bits = 0;
    if (a->key != cdc::KeyUse::none) bits |= CDC_PARAM_KEY;
    if (a->key == cdc::KeyUse::required) bits |= CDC_PARAM_KEY_REQUIRED;
    if (a->normalization_level.accepted) bits |= CDC_PARAM_LEVEL;
    if (a->seed.accepted) bits |= CDC_PARAM_SEED;
    if (a->polynomial.accepted) bits |= CDC_PARAM_POLYNOMIAL;
    if (a->window_size.accepted) bits |= CDC_PARAM_WINDOW;
    return bits;
}

void cdc_options_init(cdc_options* options) {
    if (options) *options = cdc_options CDC_OPTIONS_INIT;
}

int cdc_chunker_new(const char* algorithm, const cdc_options* options, cdc_chunker** out) {
    if (out == nullptr) return CDC_E_OPTION;
    *out = new (std::nothrow) cdc_chunker;
    if (*out == nullptr) return CDC_E_NOMEM;
    cdc_chunker* c = *out;
    return guarded(&c->error, [&] {
        if (algorithm == nullptr) throw cdc::OptionError("algorithm is NULL");
        const cdc_options defaults = CDC_OPTIONS_INIT;
        const cdc_options& in = options ? *options : defaults;
        c->finder = cdc::make_cut_finder(algorithm, read_options(in));
        c->chunker.emplace(c->finder, cdc::Source{}, read_buffer(in));
        return CDC_OK;
    });
}

void cdc_chunker_free(cdc_chunker* chunker) { delete chunker; }

const char* cdc_chunker_error(const cdc_chunker* chunker) {
    return chunker ? chunker->error.c_str() : "chunker is NULL";
}

const char* cdc_chunker_algorithm(const cdc_chunker* chunker) {
    return chunker && chunker->finder ? chunker->finder->name().data() : "";
}

int cdc_chunker_profile(const cdc_chunker* chunker, cdc_profile* out) {
    if (chunker == nullptr || out == nullptr || !chunker->finder) return CDC_E_OPTION;
    const cdc::Profile& p = chunker->finder->profile();
    *out = cdc_profile{p.min_size,           p.normal_size, p.max_size,   p.keyed ? 1 : 0,
                       p.normalization_level, p.seed,        p.polynomial, p.window_size};
    return CDC_OK;
}

int cdc_chunker_set_memory(cdc_chunker* chunker, const void* data, size_t size) {
    if (chunker == nullptr) return CDC_E_OPTION;
    return guarded(&chunker->error, [&] {
        if (!chunker->chunker) throw cdc::OptionError("chunker was not created");
        if (data == nullptr && size != 0) throw cdc::OptionError("data is NULL");
        chunker->chunker->reset(cdc::MemorySource(std::span(static_cast<const std::byte*>(data), size)));
        return CDC_OK;
    });
}

int cdc_chunker_set_fd(cdc_chunker* chunker, int fd) {
    if (chunker == nullptr) return CDC_E_OPTION;
    return guarded(&chunker->error, [&] {
        if (!chunker->chunker) throw cdc::OptionError("chunker was not created");
        if (fd < 0) throw cdc::OptionError(fmt::format("fd = {} is invalid", fd));
        chunker->chunker->reset(cdc::FileSource(fd));
        return CDC_OK;
    });
}

int cdc_chunker_set_reader(cdc_chunker* chunker, cdc_read_fn read, void* context) {
    if (chunker == nullptr) return CDC_E_OPTION;
    return guarded(&chunker->error, [&] {
        if (!chunker->chunker) throw cdc::OptionError("chunker was not created");
        if (read == nullptr) throw cdc::OptionError("read callback is NULL");
        chunker->chunker->reset(cdc::Source::reader(std::make_unique<CallbackReader>(read, context)));
        return CDC_OK;
    });
}

int cdc_chunker_next(cdc_chunker* chunker, cdc_chunk* out) {
    if (chunker == nullptr) return CDC_E_OPTION;
    return guarded(&chunker->error, [&] {
        if (!chunker->chunker) throw cdc::OptionError("chunker was not created");
        if (out == nullptr) throw cdc::OptionError("out is NULL");
        cdc::Chunk c;
        if (!chunker->chunker->next(c)) return static_cast<int>(CDC_END);
        *out = cdc_chunk{c.offset, c.size(), c.data()};
        return static_cast<int>(CDC_OK);
    });
}

uint64_t cdc_chunker_offset(const cdc_chunker* chunker) {
    return chunker && chunker->chunker ? chunker->chunker->offset() : 0;
}

int cdc_cut_lengths(cdc_chunker* chunker, const void* data, size_t size, int at_end, uint32_t* lengths,
                    size_t capacity, size_t* count, size_t* bytes_done) {
    if (chunker == nullptr) return CDC_E_OPTION;
    return guarded(&chunker->error, [&] {
        if (!chunker->finder) throw cdc::OptionError("chunker was not created");
        if (data == nullptr && size != 0) throw cdc::OptionError("data is NULL");
        if (lengths == nullptr && capacity != 0) throw cdc::OptionError("lengths is NULL");
        if (count == nullptr) throw cdc::OptionError("count is NULL");
        const cdc::CutProgress done = cdc::cut_lengths(
            *chunker->finder, std::span(static_cast<const std::byte*>(data), size), at_end != 0,
            std::span(lengths, capacity));
        *count = done.chunks;
        if (bytes_done) *bytes_done = done.bytes;
        return CDC_OK;
    });
}

size_t cdc_max_chunks(const cdc_chunker* chunker, size_t size) {
    if (chunker == nullptr || !chunker->finder) return 0;
    return size / chunker->finder->profile().min_size + 1;
}

size_t cdc_digest_size(int kind) {
    switch (kind) {
        case CDC_DIGEST_BLAKE3:
        case CDC_DIGEST_SHA256: return 32;
        case CDC_DIGEST_XXH3: return 16;
        default: return 0;
    }
}

int cdc_digest(int kind, const void* data, size_t size, uint8_t* out) {
    return guarded(nullptr, [&] {
        if ((data == nullptr && size != 0) || out == nullptr) throw cdc::OptionError("NULL argument");
        const cdc::Digest d =
            cdc::compute_digest(digest_kind(kind), std::span(static_cast<const std::byte*>(data), size));
        std::memcpy(out, d.bytes.data(), d.size);
        return CDC_OK;
    });
}

int cdc_digests(int kind, const void* data, size_t size, const uint32_t* lengths, size_t count, uint8_t* out) {
    return guarded(nullptr, [&] {
        if (count == 0) return CDC_OK;
        if ((data == nullptr && size != 0) || lengths == nullptr || out == nullptr)
            throw cdc::OptionError("NULL argument");
        const cdc::DigestKind k = digest_kind(kind);
        const std::size_t dsize = cdc::digest_size(k);
        // compute_digests hashes BLAKE3 chunks side by side; a batch of a few
        // tens of chunks fills the lanes, and the Digest scratch stays small.
        constexpr std::size_t kBatch = 64;
        std::array<cdc::Digest, kBatch> digests;
        const auto bytes = std::span(static_cast<const std::byte*>(data), size);
        std::size_t pos = 0;
        for (std::size_t i = 0; i < count; i += kBatch) {
            const std::size_t n = std::min(kBatch, count - i);
            const auto lens = std::span(lengths + i, n);
            std::uint64_t batch_bytes = 0;
            for (const std::uint32_t l : lens) batch_bytes += l;
            if (batch_bytes > size - pos)
                throw cdc::OptionError(fmt::format("the lengths add up to more than the {} bytes given", size));
            cdc::compute_digests(k, bytes.subspan(pos, static_cast<std::size_t>(batch_bytes)), lens,
                                 std::span(digests.data(), n));
            for (std::size_t j = 0; j < n; ++j) std::memcpy(out + (i + j) * dsize, digests[j].bytes.data(), dsize);
            pos += static_cast<std::size_t>(batch_bytes);
        }
        return CDC_OK;
    });
}

}  // extern "C"
