// SPDX-License-Identifier: Apache-2.0
#include "pack_storage_factory.hpp"

#include "dir_packs.hpp"

#include <fmt/format.h>

#include <atomic>

namespace cdc::store::detail {

namespace {

std::atomic<S3PackStorageMaker> g_s3_maker{nullptr};

constexpr const char* kPacksKey = "packs";
constexpr const char* kEndpointKey = "s3_endpoint";
constexpr const char* kRegionKey = "s3_region";
constexpr const char* kCredentialsKey = "s3_credentials_file";
constexpr const char* kPartSizeKey = "s3_part_size";

}  // namespace

void set_s3_pack_storage_maker(S3PackStorageMaker maker) { g_s3_maker.store(maker); }

std::unique_ptr<PackStorage> make_pack_storage(const std::filesystem::path& dir, const PackLocation& where,
                                               PackStorageUse use) {
    if (!where.is_s3()) return std::make_unique<DirPackStorage>(dir);
    if (!where.url.starts_with("s3://"))
        throw OptionError(fmt::format("packs location '{}' is invalid: only s3://BUCKET/PREFIX is known (or none: "
                                      "the store's directory)",
                                      where.url),
                          "packs");
    const S3PackStorageMaker maker = g_s3_maker.load();
    if (maker == nullptr)
        throw StorageUnavailableError(fmt::format("the store '{}' keeps its packs in S3 ({}), which this program was "
                                                  "built without (the cdc tool runs its cdc-store-s3 helper for it)",
                                                  dir.string(), where.url));
    return maker(dir, where, use);
}

std::vector<std::pair<std::string, std::string>> pack_location_settings(const PackLocation& where) {
    if (!where.is_s3()) return {};
    return {{kPacksKey, where.url},
            {kEndpointKey, where.s3_endpoint},
            {kRegionKey, where.s3_region},
            {kCredentialsKey, where.s3_credentials_file},
            {kPartSizeKey, std::to_string(where.s3_part_size)}};
}

PackLocation pack_location_of(const std::unordered_map<std::string, std::string>& meta, const std::string& db) {
    PackLocation where;
    const auto get = [&](const char* key) -> std::string {
        const auto it = meta.find(key);
        return it == meta.end() ? std::string() : it->second;
    };
    where.url = get(kPacksKey);
    if (!where.is_s3()) return where;
    where.s3_endpoint = get(kEndpointKey);
    where.s3_region = get(kRegionKey);
    where.s3_credentials_file = get(kCredentialsKey);
    const std::string part = get(kPartSizeKey);
    try {
        std::size_t used = 0;
        where.s3_part_size = std::stoull(part, &used);
        if (used != part.size()) throw std::invalid_argument(part);
    } catch (const std::exception&) {
        throw DamageError(fmt::format("the store's database '{}': setting '{}' = '{}' is not a number", db,
                                      kPartSizeKey, part));
    }
    return where;
}

}  // namespace cdc::store::detail
