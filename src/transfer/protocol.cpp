// SPDX-License-Identifier: Apache-2.0
#include "protocol.hpp"

#include <cdc/digest.hpp>

#include <fmt/format.h>
#include <google/protobuf/stubs/common.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace cdc::transfer {

std::string_view code_name(Code code) noexcept {
    switch (code) {
    case Code::cancelled: return "cancelled";
    case Code::unknown: return "unknown";
    case Code::invalid_argument: return "invalid argument";
    case Code::not_found: return "not found";
    case Code::permission_denied: return "permission denied";
    case Code::resource_exhausted: return "resource exhausted";
    case Code::failed_precondition: return "failed precondition";
    case Code::aborted: return "aborted";
    case Code::internal: return "internal";
    case Code::unavailable: return "unavailable";
    case Code::data_loss: return "data loss";
    case Code::unauthenticated: return "unauthenticated";
    }
    return "unknown";
}

std::string name_problem(std::string_view name) {
    if (std::string why = store::name_problem(name); !why.empty()) return why;
    for (const char ch : name) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) return fmt::format("the name holds a control byte (0x{:02x})", c);
    }
    // The protocol's names are protobuf strings: UTF-8, or the message does not parse.
    if (!google::protobuf::internal::IsStructurallyValidUTF8(name.data(), static_cast<int>(name.size())))
        return "the name is not UTF-8";
    return {};
}

std::uint64_t max_list_bytes(std::uint64_t max_size) noexcept { return std::max(kMaxListBytes, max_size); }

std::vector<store::ChunkId> ids_from_bytes(std::string_view bytes, std::size_t count) {
    if (bytes.size() % 32 != 0 || bytes.size() / 32 != count)
        throw TransferError(Code::invalid_argument,
                            fmt::format("a chunk list of {} sizes carries {} id bytes (32 per chunk expected)", count,
                                        bytes.size()));
    std::vector<store::ChunkId> ids(count);
    if (count) std::memcpy(ids.data(), bytes.data(), bytes.size());
    return ids;
}

void append_id(std::string& bytes, const store::ChunkId& id) {
    bytes.append(reinterpret_cast<const char*>(id.data()), id.size());
}

store::ChunkId id_from_bytes(std::string_view bytes, std::string_view what) {
    if (bytes.size() != 32)
        throw TransferError(Code::invalid_argument, fmt::format("{}: {} bytes where a 32-byte BLAKE3 id is expected",
                                                                what, bytes.size()));
    store::ChunkId id;
    std::memcpy(id.data(), bytes.data(), 32);
    return id;
}

store::ChunkId group_digest(std::span<const store::ChunkId> ids) {
    Hasher h(DigestKind::blake3);
    static constexpr char kTag[] = "cdc-group-v1";
    h.update(std::as_bytes(std::span(kTag, sizeof kTag - 1)));
    h.update(std::as_bytes(ids));
    const Digest d = h.finish();
    store::ChunkId id;
    std::memcpy(id.data(), d.bytes.data(), id.size());
    return id;
}

std::string make_bitmap(const std::vector<bool>& wanted) {
    std::string b((wanted.size() + 7) / 8, '\0');
    for (std::size_t i = 0; i < wanted.size(); ++i)
        if (wanted[i]) b[i / 8] = static_cast<char>(static_cast<unsigned char>(b[i / 8]) | (1u << (i % 8)));
    return b;
}

std::vector<bool> read_bitmap(std::string_view bitmap, std::size_t count, std::uint32_t bits_set) {
    if (bitmap.size() != (count + 7) / 8)
        throw TransferError(Code::invalid_argument, fmt::format("a want bitmap of {} bytes for a list of {} chunks",
                                                                bitmap.size(), count));
    std::vector<bool> wanted(count);
    std::uint64_t set = 0;
    for (std::size_t i = 0; i < bitmap.size() * 8; ++i) {
        const bool bit = ((static_cast<unsigned>(static_cast<unsigned char>(bitmap[i / 8])) >> (i % 8)) & 1u) != 0;
        if (!bit) continue;
        if (i >= count) throw TransferError(Code::invalid_argument, "a want bitmap sets a bit beyond its list");
        wanted[i] = true;
        ++set;
    }
    if (set != bits_set)
        throw TransferError(Code::invalid_argument,
                            fmt::format("a want bitmap sets {} bits but says {}", set, bits_set));
    return wanted;
}

bool is_loopback_address(std::string_view address) {
    if (address.starts_with("unix:")) return true;
    std::string_view host = address;
    if (host.starts_with("ipv4:")) host.remove_prefix(5);
    if (host.starts_with("ipv6:")) host.remove_prefix(5);
    if (host.starts_with('[')) {
        const std::size_t close = host.find(']');
        if (close == std::string_view::npos) return false;
        host = host.substr(1, close - 1);
        return host == "::1";
    }
    if (const std::size_t colon = host.rfind(':'); colon != std::string_view::npos) host = host.substr(0, colon);
    if (host == "localhost") return true;
    // 127.0.0.0/8 written as a dotted quad.
    if (!host.starts_with("127.")) return false;
    int parts = 0;
    std::size_t i = 0;
    while (i <= host.size()) {
        std::size_t j = i;
        unsigned value = 0;
        while (j < host.size() && host[j] >= '0' && host[j] <= '9' && j - i < 3) value = value * 10 + unsigned(host[j++] - '0');
        if (j == i || value > 255) return false;
        ++parts;
        if (j == host.size()) break;
        if (host[j] != '.') return false;
        i = j + 1;
    }
    return parts == 4;
}

std::string address_problem(std::string_view address) {
    if (address.starts_with("unix:") || address.starts_with("unix-abstract:"))
        return address.substr(address.find(':') + 1).empty() ? fmt::format("'{}' names no socket path", address)
                                                               : std::string();
    std::string_view rest = address;
    if (rest.starts_with("ipv4:") || rest.starts_with("ipv6:")) rest.remove_prefix(5);
    const std::size_t bracket = rest.rfind(']');
    const std::size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos || (bracket != std::string_view::npos && colon < bracket) || colon == 0)
        return fmt::format("'{}' is not HOST:PORT (a port is needed: 0 for any free one)", address);
    const std::string_view port = rest.substr(colon + 1);
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535)
        return fmt::format("'{}': the port '{}' is not a number from 0 to 65535", address, port);
    return {};
}

std::string listen_problem(std::string_view address, bool tls, bool token) {
    if (std::string why = address_problem(address); !why.empty()) return why;
    if (is_loopback_address(address)) return {};
    if (!tls && !token)
        return fmt::format("'{}' is not a loopback address: serving it needs TLS (--tls-cert, --tls-key) and a token "
                           "(--token-file)",
                           address);
    if (!tls) return fmt::format("'{}' is not a loopback address: serving it needs TLS (--tls-cert, --tls-key)", address);
    if (!token) return fmt::format("'{}' is not a loopback address: serving it needs a token (--token-file)", address);
    return {};
}

std::string bearer_header(std::string_view token) { return std::string("Bearer ").append(token); }

bool bearer_matches(std::string_view header, std::string_view token) {
    // Hashing first gives equal lengths, so that the comparison's time says
    // nothing about where the values differ, nor about the token's length.
    const Digest a = compute_digest(DigestKind::blake3, std::as_bytes(std::span(header.data(), header.size())));
    const std::string expected = bearer_header(token);
    const Digest b = compute_digest(DigestKind::blake3, std::as_bytes(std::span(expected.data(), expected.size())));
    return CRYPTO_memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()) == 0;
}

}  // namespace cdc::transfer
