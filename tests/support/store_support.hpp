// SPDX-License-Identifier: Apache-2.0
// Helpers of the store tests: data, putting and getting bytes.
#pragma once

#include <cdc/store.hpp>

#include <cdc/corpus/datagen.hpp>
#include "test_support.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace cdc::test {

inline std::vector<std::uint8_t> read_bytes(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::vector<std::uint8_t> v;
    in.seekg(0, std::ios::end);
    const auto n = in.tellg();
    if (n <= 0) return v;
    v.resize(static_cast<std::size_t>(n));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(v.data()), n);
    return v;
}

/// Mixed data: random runs (incompressible) and text (compressible).
inline std::vector<std::uint8_t> mixed_bytes(std::size_t n, std::uint64_t seed) {
    auto v = random_bytes(n / 2, seed);
    const auto t = generate_input("text:" + std::to_string(seed + 1) + ":" + std::to_string(n - n / 2));
    v.insert(v.end(), t.begin(), t.end());
    return v;
}

inline store::PutStats put_bytes(store::Writer& w, const std::string& name, const std::vector<std::uint8_t>& data) {
    store::FileMeta m;
    m.name = name;
    m.mode = 0640;
    m.mtime_ns = 1'700'000'000'123'456'789;
    return w.put_file(m, MemorySource(std::span<const std::uint8_t>(data)));
}

inline std::vector<std::uint8_t> get_bytes(const store::Store& s, const std::string& name, const TempDir& tmp) {
    const auto out = tmp.path() / "restored.out";
    s.get(name, out);
    auto v = read_bytes(out);
    std::filesystem::remove(out);
    return v;
}

inline store::VerifyOptions full_check() {
    store::VerifyOptions o;
    o.full = true;
    return o;
}

/// Flips one byte of a file in place.
inline void flip_byte(const std::filesystem::path& p, std::uint64_t offset) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ 0x5a));
}

/// Where chunk `id` appears in a pack file (its record holds the id at
/// header + 16, the payload at header + 56), or npos: records describe
/// themselves, so a test finds one to damage without the index.
inline std::size_t id_offset_in_pack(const std::filesystem::path& pack, const store::ChunkId& id) {
    const auto bytes = read_bytes(pack);
    const std::string hay(bytes.begin(), bytes.end());
    return hay.find(std::string(reinterpret_cast<const char*>(id.data()), id.size()));
}

inline std::filesystem::path first_pack(const std::filesystem::path& store_dir) {
    for (const auto& e : std::filesystem::directory_iterator(store_dir / "packs")) return e.path();
    return {};
}

}  // namespace cdc::test
