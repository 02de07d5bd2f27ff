// SPDX-License-Identifier: Apache-2.0
// Which PackStorage a store has (docs/STORE.md, "Packs in S3"): its
// directory's (DirPackStorage) or an S3 bucket's (S3PackStorage, in the
// cdc_store_s3 library, which registers itself with enable_s3_packs(): the
// static `cdc` links no libcurl). The location is kept in the store's
// settings (the catalog's meta rows), which stay in the store's directory.
#pragma once

#include "pack_storage.hpp"

#include <cdc/store.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cdc::store::detail {

/// How a new store's packs are checked (init) or an existing store's opened.
enum class PackStorageUse { open, init };

/// Makes an S3 pack storage; `use` init also checks that the bucket answers
/// with the credentials and that the prefix holds no object yet.
using S3PackStorageMaker = std::unique_ptr<PackStorage> (*)(const std::filesystem::path& dir,
                                                            const PackLocation& where, PackStorageUse use);
/// Registers the maker of S3 pack storages (enable_s3_packs).
void set_s3_pack_storage_maker(S3PackStorageMaker maker);

/// The pack storage of the store in `dir`: OptionError for a location that
/// is not valid, StorageUnavailableError for S3 packs in a program without
/// S3 support, StoreError (an S3Error) when init's checks fail.
std::unique_ptr<PackStorage> make_pack_storage(const std::filesystem::path& dir, const PackLocation& where,
                                               PackStorageUse use);

/// The settings rows (key, value) that record `where` (none for DIR/packs).
std::vector<std::pair<std::string, std::string>> pack_location_settings(const PackLocation& where);
/// The location recorded in a store's settings; DamageError naming `db`
/// for a value that does not parse.
PackLocation pack_location_of(const std::unordered_map<std::string, std::string>& meta, const std::string& db);

}  // namespace cdc::store::detail
