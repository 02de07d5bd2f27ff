// SPDX-License-Identifier: Apache-2.0
// The transfer protocol's limits and the checks both sides share: names,
// chunk ids in messages, want bitmaps, and the error a session reports (a
// status code and a message, mapped to a gRPC status by the service).
// Nothing here includes gRPC: the sessions below it are fuzzed in process.
#pragma once

#include <cdc/error.hpp>
#include <cdc/store.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::transfer {

inline constexpr std::uint32_t kProtocolVersion = 1;
/// gRPC's default receive limit, which neither side raises.
inline constexpr std::size_t kMaxMessageBytes = std::size_t{4} << 20;
/// Chunk ids in one ChunkList (8192 x ~36 bytes: ~300 KB per message).
inline constexpr std::size_t kMaxListChunks = 8192;
/// Raw bytes one ChunkList may cover (bounds what a side buffers per list);
/// a store whose max chunk size is larger allows one max-size chunk.
inline constexpr std::uint64_t kMaxListBytes = std::uint64_t{16} << 20;
/// Chunk payload bytes per data message, and the size of a piece of a larger payload.
inline constexpr std::size_t kDataMessageBytes = std::size_t{1} << 20;
/// Lists a pushing client may send ahead of their data.
inline constexpr std::size_t kMaxListsAhead = 4;
/// Bytes per HashData message of the streamed hash.
inline constexpr std::size_t kHashPieceBytes = std::size_t{1} << 20;
/// A group of a GroupList (proto/cdc_transfer.proto): at most this many
/// chunks; it also ends after a chunk whose id's first four bytes (little
/// endian) are a multiple of kGroupModulus, and where its list ends.
inline constexpr std::size_t kMaxGroupChunks = 64;
/// The bytes of a group digest a server takes in place of 32 (its first
/// 16: the server keys its groups by them, so 32 bytes bought nothing).
inline constexpr std::uint32_t kShortGroupDigest = 16;
inline constexpr std::uint32_t kGroupModulus = 16;
/// Longest name accepted (the store's).
inline constexpr std::size_t kMaxNameBytes = store::kMaxNameBytes;

/// Hash of a chunk id for unordered containers (ids are uniform already).
struct IdHash {
    std::size_t operator()(const store::ChunkId& id) const noexcept {
        std::size_t h;
        std::memcpy(&h, id.data(), sizeof h);
        return h;
    }
};

/// Why a transfer stopped: the gRPC status code of that name (the service
/// and the client map between the two).
enum class Code {
    cancelled,
    unknown,
    invalid_argument,
    not_found,
    permission_denied,
    resource_exhausted,
    failed_precondition,
    aborted,
    internal,
    unavailable,
    data_loss,
    unauthenticated,
};
std::string_view code_name(Code code) noexcept;

/// A refused request (a session throws it; the stream ends with its code
/// and message) or a failed transfer (the client throws it).
class TransferError : public Error {
public:
    TransferError(Code code, const std::string& message) : Error(message), code_(code) {}
    Code code() const noexcept { return code_; }

private:
    Code code_;
};

/// Empty if `name` may travel and be stored, else why not: the store's
/// rule (store::name_problem: what a tree restore accepts), and no control
/// byte (< 0x20, 0x7f) and UTF-8 (a protobuf string).
std::string name_problem(std::string_view name);

/// The raw bytes a ChunkList may cover for a store whose max chunk size is `max_size`.
std::uint64_t max_list_bytes(std::uint64_t max_size) noexcept;

/// The ids of a ChunkList's `ids` field (32 bytes each); TransferError if
/// the length is not a multiple of 32 or does not match `count`.
std::vector<store::ChunkId> ids_from_bytes(std::string_view bytes, std::size_t count);
void append_id(std::string& bytes, const store::ChunkId& id);
/// TransferError(invalid_argument) unless `bytes` is 32 bytes long.
store::ChunkId id_from_bytes(std::string_view bytes, std::string_view what);

/// The group rule over a run of chunks, one id at a time: true if a group
/// ends after this chunk (its id, or kMaxGroupChunks since the last end).
/// The end of a list ends a group too: the caller's part.
class GroupCutter {
public:
    bool ends_after(const store::ChunkId& id) noexcept {
        const std::uint8_t* b = id.data();
        const std::uint32_t head = b[0] | std::uint32_t{b[1]} << 8 | std::uint32_t{b[2]} << 16 | std::uint32_t{b[3]} << 24;
        if (++run_ < kMaxGroupChunks && head % kGroupModulus != 0) return false;
        run_ = 0;
        return true;
    }

private:
    std::size_t run_ = 0;
};
/// Cuts a list's `ids` into groups (the rule above): calls `f(first, end)`
/// for each, in order.
template <class F>
void for_each_group(std::span<const store::ChunkId> ids, F&& f) {
    GroupCutter cut;
    std::size_t first = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (cut.ends_after(ids[i]) || i + 1 == ids.size()) {
            f(first, i + 1);
            first = i + 1;
        }
    }
}
/// A group's digest: BLAKE3-256 of "cdc-group-v1" and its ids.
store::ChunkId group_digest(std::span<const store::ChunkId> ids);

/// A want bitmap of `count` entries.
std::string make_bitmap(const std::vector<bool>& wanted);
/// The entries of a bitmap sent for a list of `count` chunks; TransferError
/// if its length is not (count + 7) / 8, a bit beyond `count` is set or the
/// number of bits set is not `bits_set`.
std::vector<bool> read_bitmap(std::string_view bitmap, std::size_t count, std::uint32_t bits_set);

/// True for a listen or connect address on the loopback interface:
/// 127.x.y.z, [::1], localhost (with a port), unix: paths.
bool is_loopback_address(std::string_view address);

/// Empty if `address` is one a server can listen on: HOST:PORT with a port
/// from 0 to 65535 (gRPC takes a missing port for 443 and a larger one
/// modulo 65536), [V6]:PORT, or unix:PATH; else why not.
std::string address_problem(std::string_view address);

/// Empty if a server may listen on `address` with these settings, else why
/// not: address_problem, and outside the loopback interface TLS and a token.
std::string listen_problem(std::string_view address, bool tls, bool token);

/// The "authorization" metadata value a client sends.
std::string bearer_header(std::string_view token);
/// True if an "authorization" value carries `token` ("Bearer <token>"). The
/// comparison takes the same time wherever the values differ (BLAKE3 of
/// both, compared with CRYPTO_memcmp).
bool bearer_matches(std::string_view header, std::string_view token);

}  // namespace cdc::transfer
