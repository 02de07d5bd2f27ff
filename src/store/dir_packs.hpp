// SPDX-License-Identifier: Apache-2.0
// The pack storage of a directory store: DIR/packs/NNNNNNNN.pack files.
// In a store shared by a group any member can put a link where a pack is:
// packs are opened O_NOFOLLOW relative to DIR/packs, itself opened
// O_NOFOLLOW | O_DIRECTORY, never as anything but regular files
// (docs/STORE.md, "Links"). A writer holds a pack with an exclusive flock
// for as long as it appends to it.
#pragma once

#include "format.hpp"
#include "pack_storage.hpp"

#include <filesystem>
#include <mutex>

namespace cdc::store::detail {

class DirPackStorage final : public PackStorage {
public:
    /// The packs of the store in `dir` (DIR/packs).
    explicit DirPackStorage(std::filesystem::path dir);

    std::string describe(std::uint64_t id) const override;
    std::unique_ptr<PackSink> create(std::uint64_t id) override;
    std::unique_ptr<PackSink> reopen(std::uint64_t id,
                                     const std::function<std::optional<std::uint64_t>()>& committed) override;
    void sync_names() override;
    std::unique_ptr<PackReader> open(std::uint64_t id) const override;
    std::map<std::uint64_t, std::uint64_t> list() const override;
    void remove(std::uint64_t id) override;
    void truncate(std::uint64_t id, std::uint64_t length) override;

private:
    std::filesystem::path dir_;
    std::mutex mutex_;
    bool names_changed_ = false;  // a pack was created or removed since the last sync_names()
};

}  // namespace cdc::store::detail
