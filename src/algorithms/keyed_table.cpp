// SPDX-License-Identifier: Apache-2.0
// Keyed Gear tables (ALGORITHMS.md "Keyed tables"): BLAKE3 keyed hash of the
// static table (2048 little-endian bytes), extended to 2048 output bytes.
// Each table is derived once per key, with its shifted copies for the
// AVX-512 kernels, and shared while anyone holds it.
#include "params.hpp"

#include <blake3.h>

#include <map>
#include <mutex>

namespace cdc {

namespace {
std::shared_ptr<const detail::KeyedGear> derive(const Key& key) {
    std::array<std::uint8_t, 2048> message{};
    const GearTable& g = gear_table();
    for (std::size_t i = 0; i < 256; ++i)
        for (std::size_t b = 0; b < 8; ++b) message[8 * i + b] = static_cast<std::uint8_t>(g[i] >> (8 * b));
    blake3_hasher hasher;
    blake3_hasher_init_keyed(&hasher, key.data());
    blake3_hasher_update(&hasher, message.data(), message.size());
    std::array<std::uint8_t, 2048> out{};
    blake3_hasher_finalize(&hasher, out.data(), out.size());
    auto keyed = std::make_shared<detail::KeyedGear>();
    for (std::size_t i = 0; i < 256; ++i) {
        std::uint64_t v = 0;
        for (std::size_t b = 0; b < 8; ++b) v |= std::uint64_t{out[8 * i + b]} << (8 * b);
        keyed->table[i] = v;
    }
    keyed->shifted = detail::shift_gear(keyed->table);
    return keyed;
}
}  // namespace

std::shared_ptr<const GearTable> keyed_gear_table(const Key& key) {
    auto keyed = detail::keyed_gear(key);
    return {keyed, &keyed->table};  // shares ownership of the whole entry
}

std::shared_ptr<const detail::KeyedGear> detail::keyed_gear(const Key& key) {
    static std::mutex mutex;
    static std::map<Key, std::weak_ptr<const KeyedGear>> cache;
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) {
        if (auto table = it->second.lock()) return table;
    }
    std::erase_if(cache, [](const auto& entry) { return entry.second.expired(); });
    auto table = derive(key);
    cache[key] = table;
    return table;
}

}  // namespace cdc
