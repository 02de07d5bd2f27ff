// SPDX-License-Identifier: Apache-2.0
// Batched BLAKE3-256: see blake3_batch.hpp. Built on the compression
// primitives of the official C implementation (blake3_impl.h):
// blake3_hash_many (N inputs of the same number of 64-byte blocks, same
// counter, side by side in SIMD lanes) and blake3_compress_in_place (one
// block).
//
// The BLAKE3 tree, for a message of n > 1 chunks of 1024 bytes (the last one
// may be shorter): chunk i is compressed with counter i, CHUNK_START on its
// first block and CHUNK_END on its last; the chunk chaining values (CVs) are
// the leaves of a left-balanced binary tree (the left subtree holds the
// largest power of two of chunks that leaves at least one for the right).
// That tree is what pairing adjacent nodes level by level gives, an odd last
// node moving up a level unchanged: the left 2^k leaves form a complete
// subtree after k levels and, as 2^k is even, the pairing of the right part
// never straddles it. Parent nodes (the two child CVs as one 64-byte block,
// counter 0, PARENT) give CVs; the last one, PARENT | ROOT, gives the hash
// (its first 32 output bytes are the compression's CV). A message of at most
// 1024 bytes is one chunk compressed with ROOT on its last block.
#include "blake3_batch.hpp"

#include "blake3_lanes.hpp"

#include <cdc/algorithms.hpp>

// blake3_impl.h is C: include what it includes first (as C++ headers), then
// the header itself with C linkage and without the project's C++ warnings.
#include <blake3.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cstring>
#include <memory>
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__) || defined(_M_IX86)
#include <immintrin.h>
#endif

extern "C" {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wpedantic"
#include <blake3_impl.h>
#pragma GCC diagnostic pop
}

namespace cdc::detail {
namespace {

constexpr std::size_t kChunkLen = BLAKE3_CHUNK_LEN;  // 1024
constexpr std::size_t kBlockLen = BLAKE3_BLOCK_LEN;  // 64
constexpr std::size_t kCvLen = BLAKE3_OUT_LEN;       // 32
constexpr std::size_t kBlocksPerChunk = kChunkLen / kBlockLen;

// Messages of more than this many chunks go through blake3_hasher, which
// fills the SIMD lanes on its own from 16 chunks on (and the group scratch
// stays small).
constexpr std::size_t kMaxBatchedChunks = 64;
// One group: at most this many chunks / messages hashed together.
constexpr std::size_t kGroupChunks = 1024;
constexpr std::size_t kGroupMessages = 256;
// Below this many partial last chunks, they are compressed one block at a
// time: a 16-lane step costs about three single-block compressions.
constexpr std::size_t kMinLanes = 4;

constexpr std::uint8_t flag(int f) { return static_cast<std::uint8_t>(f); }

struct Message {
    const std::uint8_t* data;
    std::size_t out;     // index in the caller's `out`
    std::uint32_t len;
    std::uint32_t full;  // full 1024-byte chunks (the last one included if full)
    std::uint32_t nodes; // nodes left at the current tree level
    std::uint32_t cv;    // first CV slot in Scratch::cvs
};

struct Scratch {
    std::array<Message, kGroupMessages> msgs;
    std::array<std::uint16_t, kGroupMessages> active;
    // hash_many inputs and outputs: a level-0 call has one input per message,
    // a parent level at most kGroupChunks / 2 pairs.
    std::array<const std::uint8_t*, kGroupChunks / 2> inputs;
    alignas(64) std::array<std::uint8_t, kGroupChunks / 2 * kCvLen> outputs;
    // Per message, its CVs of the current level from slot Message::cv on.
    alignas(64) std::array<std::uint8_t, kGroupChunks * kCvLen> cvs;
};
static_assert(kGroupMessages <= kGroupChunks / 2, "a batched message has >= 2 chunks");

// The length of a message's last chunk if partial (else 0), and its blocks.
std::uint32_t last_chunk_len(const Message& msg) { return msg.len - msg.full * static_cast<std::uint32_t>(kChunkLen); }
std::size_t last_chunk_blocks(const Message& msg) { return (last_chunk_len(msg) + kBlockLen - 1) / kBlockLen; }

// Whether the CPU can run the 16-lane compression: the library's own CPU
// check (AVX-512 F/BW/VL/DQ, as the chunking kernels; the compression needs
// only F). The CPU's, not CDC_KERNEL's choice: that one picks cut kernels.
bool has_chunk_lanes() { return best_kernel_level() >= KernelLevel::avx512; }

// How the messages are hashed: from the IV with no extra flag (plain
// BLAKE3), or from the key words with KEYED_HASH on every compression.
struct Mode {
    std::uint32_t key[8];
    std::uint8_t flags;
    const std::uint8_t* key_bytes;  // null for plain BLAKE3
};

Mode plain_mode() {
    Mode m{};
    std::memcpy(m.key, IV, sizeof m.key);
    return m;
}

Mode keyed_mode(const std::uint8_t* key) {
    Mode m{};
    load_key_words(key, m.key);
    m.flags = flag(KEYED_HASH);
    m.key_bytes = key;
    return m;
}

// A message's partial last chunk: its bytes, its CV slot and its counter.
Blake3LaneChunk last_chunk(const Message& msg, std::uint8_t* cvs) {
    return Blake3LaneChunk{msg.data + std::size_t{msg.full} * kChunkLen, cvs + (msg.cv + msg.full) * kCvLen, msg.full,
                           last_chunk_len(msg)};
}

Scratch& scratch() {
    thread_local std::unique_ptr<Scratch> s;
    if (!s) s = std::make_unique<Scratch>();
    return *s;
}

void store_words(std::uint8_t* out, const std::uint32_t words[8]) {
    for (std::size_t w = 0; w < 8; ++w)
        for (std::size_t b = 0; b < 4; ++b) out[4 * w + b] = static_cast<std::uint8_t>(words[w] >> (8 * b));
}

// CV (or, with end_flags = ROOT, the hash) of one chunk of 0..1024 bytes.
void chunk_cv(const Mode& mode, const std::uint8_t* p, std::size_t len, std::uint64_t counter,
              std::uint8_t end_flags, std::uint8_t out[kCvLen]) {
    std::uint32_t cv[8];
    std::memcpy(cv, mode.key, sizeof cv);
    std::uint8_t start = flag(CHUNK_START | mode.flags);
    for (; len > kBlockLen; p += kBlockLen, len -= kBlockLen) {
        blake3_compress_in_place(cv, p, static_cast<std::uint8_t>(kBlockLen), counter, start);
        start = mode.flags;
    }
    std::uint8_t block[kBlockLen] = {};  // the last block is zero-padded
    if (len > 0) std::memcpy(block, p, len);
    blake3_compress_in_place(cv, block, static_cast<std::uint8_t>(len), counter,
                             flag(start | CHUNK_END | end_flags));
    store_words(out, cv);
}

void digest_one(const Mode& mode, const std::uint8_t* p, std::size_t len, Digest& d) {
    d.size = static_cast<std::uint8_t>(kCvLen);
    if (len <= kChunkLen) {
        chunk_cv(mode, p, len, 0, flag(ROOT), d.bytes.data());
        return;
    }
    blake3_hasher h;
    if (mode.key_bytes != nullptr)
        blake3_hasher_init_keyed(&h, mode.key_bytes);
    else
        blake3_hasher_init(&h);
    blake3_hasher_update(&h, p, len);
    blake3_hasher_finalize(&h, d.bytes.data(), kCvLen);
}

// Hashes the `n` messages of s.msgs (each of 2..kMaxBatchedChunks chunks,
// kGroupChunks at most in all) into out[Message::out]; `lanes`: with the
// 16-lane compression of the partial last chunks.
void hash_group(const Mode& mode, Scratch& s, std::size_t n, [[maybe_unused]] bool lanes, std::span<Digest> out) {
    std::uint8_t* const cvs = s.cvs.data();
    std::uint8_t* const tmp = s.outputs.data();

    // 1. Full chunks, by chunk index: the i-th chunks of all the messages
    //    that have one share the counter i.
    std::size_t n_active = 0;
    for (std::size_t m = 0; m < n; ++m)
        if (s.msgs[m].full > 0) s.active[n_active++] = static_cast<std::uint16_t>(m);
    for (std::uint32_t i = 0; n_active > 0; ++i) {
        for (std::size_t k = 0; k < n_active; ++k) s.inputs[k] = s.msgs[s.active[k]].data + i * kChunkLen;
        blake3_hash_many(s.inputs.data(), n_active, kBlocksPerChunk, mode.key, i, false, mode.flags,
                         flag(CHUNK_START), flag(CHUNK_END), tmp);
        std::size_t kept = 0;
        for (std::size_t k = 0; k < n_active; ++k) {
            const Message& msg = s.msgs[s.active[k]];
            std::memcpy(cvs + (msg.cv + i) * kCvLen, tmp + k * kCvLen, kCvLen);
            if (msg.full > i + 1) s.active[kept++] = s.active[k];
        }
        n_active = kept;
    }

    // 2. The partial last chunks, in the order of their number of blocks (a
    //    counting sort), so that the chunks compressed side by side finish
    //    together: a 16-lane compression runs for the longest of its chunks.
    std::array<std::uint16_t, kBlocksPerChunk + 1> start{};  // start[b - 1]: first slot of the chunks of b blocks
    for (std::size_t m = 0; m < n; ++m) ++start[last_chunk_blocks(s.msgs[m])];
    start[0] = 0;  // messages without a partial last chunk
    for (std::size_t b = 1; b <= kBlocksPerChunk; ++b) start[b] = static_cast<std::uint16_t>(start[b] + start[b - 1]);
    const std::size_t n_last = start[kBlocksPerChunk];
    for (std::size_t m = 0; m < n; ++m)
        if (const std::size_t blocks = last_chunk_blocks(s.msgs[m]); blocks > 0)
            s.active[start[blocks - 1]++] = static_cast<std::uint16_t>(m);
    std::size_t done = 0;
#if defined(CDC_X86_KERNELS)
    while (lanes && n_last - done >= kMinLanes) {
        const std::size_t k = std::min(kBlake3Lanes, n_last - done);
        std::array<Blake3LaneChunk, kBlake3Lanes> chunks;
        for (std::size_t l = 0; l < k; ++l) chunks[l] = last_chunk(s.msgs[s.active[done + l]], cvs);
        blake3_chunk_cvs_avx512(chunks.data(), k, mode.key, mode.flags);
        done += k;
    }
#endif
    for (; done < n_last; ++done) {
        const Blake3LaneChunk c = last_chunk(s.msgs[s.active[done]], cvs);
        chunk_cv(mode, c.data, c.len, c.counter, 0, c.cv);
    }

    // 3. Parent levels, all messages side by side, until each has two nodes
    //    left: the children of its root.
    n_active = 0;
    for (std::size_t m = 0; m < n; ++m)
        if (s.msgs[m].nodes > 2) s.active[n_active++] = static_cast<std::uint16_t>(m);
    while (n_active > 0) {
        std::size_t pairs = 0;
        for (std::size_t k = 0; k < n_active; ++k) {
            const Message& msg = s.msgs[s.active[k]];
            for (std::uint32_t j = 0; j < msg.nodes / 2; ++j) s.inputs[pairs++] = cvs + (msg.cv + 2 * j) * kCvLen;
        }
        blake3_hash_many(s.inputs.data(), pairs, 1, mode.key, 0, false, flag(PARENT | mode.flags), 0, 0, tmp);
        pairs = 0;
        std::size_t kept = 0;
        for (std::size_t k = 0; k < n_active; ++k) {
            Message& msg = s.msgs[s.active[k]];
            const std::uint32_t half = msg.nodes / 2;
            std::memcpy(cvs + msg.cv * kCvLen, tmp + pairs * kCvLen, half * kCvLen);
            pairs += half;
            if (msg.nodes % 2 != 0)  // the odd last node moves up unchanged
                std::memcpy(cvs + (msg.cv + half) * kCvLen, cvs + (msg.cv + msg.nodes - 1) * kCvLen, kCvLen);
            msg.nodes = (msg.nodes + 1) / 2;
            if (msg.nodes > 2) s.active[kept++] = s.active[k];
        }
        n_active = kept;
    }

    // 4. The roots of the whole group in one call.
    for (std::size_t m = 0; m < n; ++m) s.inputs[m] = cvs + s.msgs[m].cv * kCvLen;
    blake3_hash_many(s.inputs.data(), n, 1, mode.key, 0, false, flag(PARENT | ROOT | mode.flags), 0, 0, tmp);
    for (std::size_t m = 0; m < n; ++m) {
        Digest& d = out[s.msgs[m].out];
        d.size = static_cast<std::uint8_t>(kCvLen);
        std::memcpy(d.bytes.data(), tmp + m * kCvLen, kCvLen);
    }
}

void digests(const Mode& mode, std::span<const std::byte> data, std::span<const std::uint32_t> lengths,
             std::span<Digest> out, LastChunks last_chunks) {
    assert(out.size() == lengths.size());
    const bool lanes = last_chunks == LastChunks::side_by_side && has_chunk_lanes();
    Scratch& s = scratch();
    const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
    std::size_t n = 0;       // messages in the group
    std::uint32_t used = 0;  // CV slots in the group
    for (std::size_t m = 0; m < lengths.size(); ++m) {
        const std::uint32_t len = lengths[m];
        const std::size_t chunks = (std::size_t{len} + kChunkLen - 1) / kChunkLen;
        if (chunks <= 1 || chunks > kMaxBatchedChunks) {
            digest_one(mode, p, len, out[m]);
        } else {
            if (n == kGroupMessages || used + chunks > kGroupChunks) {
                hash_group(mode, s, n, lanes, out);
                n = 0;
                used = 0;
            }
            s.msgs[n++] = Message{p, m, len, static_cast<std::uint32_t>(len / kChunkLen),
                                  static_cast<std::uint32_t>(chunks), used};
            used += static_cast<std::uint32_t>(chunks);
        }
        p += len;
    }
    if (n > 0) hash_group(mode, s, n, lanes, out);
}

}  // namespace

void blake3_digests(std::span<const std::byte> data, std::span<const std::uint32_t> lengths, std::span<Digest> out,
                    LastChunks last_chunks) {
    static const Mode plain = plain_mode();
    digests(plain, data, lengths, out, last_chunks);
}

void blake3_keyed_digests(std::span<const std::byte> data, std::span<const std::uint32_t> lengths,
                          const std::uint8_t* key, std::span<Digest> out, LastChunks last_chunks) {
    digests(keyed_mode(key), data, lengths, out, last_chunks);
}

}  // namespace cdc::detail
