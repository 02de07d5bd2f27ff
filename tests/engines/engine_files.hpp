// SPDX-License-Identifier: Apache-2.0
// Files the engine tests put and check (tests/engines/*_test.cpp): a tree of
// random files, a file's bytes, and the check after a writer was killed or
// an engine restarted that what is committed is whole and nothing else is.
#pragma once

#include "cli_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace cdc::test {

using EngineTree = std::map<std::string, std::vector<std::uint8_t>>;

/// `files` files of random bytes named PREFIX000.bin.. under `root`, of
/// `size` + 1000 x i bytes.
inline EngineTree make_tree(const std::filesystem::path& root, int files, std::size_t size, std::uint64_t seed,
                            const std::string& prefix = "f") {
    EngineTree out;
    std::filesystem::create_directories(root);
    for (int i = 0; i < files; ++i) {
        const std::string name = fmt::format("{}{:03}.bin", prefix, i);
        auto bytes = random_bytes(size + static_cast<std::size_t>(i) * 1000, seed + static_cast<std::uint64_t>(i));
        std::ofstream(root / name, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        out.emplace(name, std::move(bytes));
    }
    return out;
}

/// `files` small files of random bytes spread over `dirs` directories
/// (dK/fNNNNN.bin) under `root`, of `least` to `least + spread` bytes.
inline EngineTree make_small_files(const std::filesystem::path& root, int files, int dirs, std::size_t least,
                                   std::size_t spread, std::uint64_t seed) {
    EngineTree out;
    for (int i = 0; i < files; ++i) {
        const std::string name = fmt::format("d{}/f{:05}.bin", i % dirs, i);
        auto bytes = random_bytes(least + static_cast<std::size_t>(i) * 7919 % spread, seed + static_cast<std::uint64_t>(i));
        std::filesystem::create_directories((root / name).parent_path());
        std::ofstream(root / name, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        out.emplace(name, std::move(bytes));
    }
    return out;
}

/// The bytes of `p`; none if it does not exist.
inline std::vector<std::uint8_t> file_bytes(const std::filesystem::path& p) {
    if (!std::filesystem::exists(p)) return {};
    const std::string text = read_text(p);
    return {text.begin(), text.end()};
}

/// verify --full, every listed file of the tree "t" identical to its source
/// in `tree` (and nothing else restored), gc, verify again. Returns how many
/// files are committed.
inline std::size_t check_committed(const std::string& store, const EngineTree& tree, const std::filesystem::path& out) {
    std::filesystem::create_directories(out);
    auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    const auto list = json_of(run_tool({"store", "ls", "--json", store}));
    if (!list.empty()) {
        const auto r = run_tool({"store", "get", store, "t", "-o", out.string()});
        EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    for (const auto& m : list) {
        const std::string name = m["name"];
        const std::string leaf = name.substr(name.rfind('/') + 1);
        EXPECT_TRUE(file_bytes(out / leaf) == tree.at(leaf)) << name;
    }
    std::size_t restored = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(out)) ++restored;
    EXPECT_EQ(restored, list.size()) << "only what is committed is there";
    const auto gc = run_tool({"store", "gc", store});
    EXPECT_EQ(gc.exit_code, 0) << gc.err;
    v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    // Each put is a snapshot: its files, its header and its trees.
    const auto snapshots = json_of(run_tool({"store", "snapshots", "--json", store}));
    EXPECT_EQ(v["manifests"], list.size() + 2 * snapshots.size());
    return list.size();
}

}  // namespace cdc::test
