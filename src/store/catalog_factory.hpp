// SPDX-License-Identifier: Apache-2.0
// Which Catalog a store has (docs/STORE.md, "A PostgreSQL catalog"): SQLite
// in its directory (DIR/index.db), or a PostgreSQL database named by
// DIR/catalog (its connection string, never a password). PgCatalog lives in
// the cdc_store_pg library (libpq), which registers itself with
// enable_pg_catalog(): the static `cdc` links no libpq and runs its
// cdc-store-s3 helper for such stores, as for S3 packs.
#pragma once

#include "catalog.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cdc::store::detail {

/// DIR/catalog: the connection string of a store whose catalog is in PostgreSQL.
inline constexpr std::string_view kCatalogName = "catalog";

/// Makes a PostgreSQL catalog: with `settings`, creates its schema and
/// settings in the database (StoreError if it holds a store already);
/// without, opens it (DamageError if the database holds no store).
using PgCatalogMaker = std::unique_ptr<Catalog> (*)(const std::string& url,
                                                    const std::vector<std::pair<std::string, std::string>>* settings);
void set_pg_catalog_maker(PgCatalogMaker maker);

/// Whether `url` names a PostgreSQL database (postgresql:// or postgres://).
bool is_pg_url(std::string_view url);
/// OptionError for a catalog location that is not one, or that carries a
/// password (PGPASSWORD, a PGPASSFILE or ~/.pgpass hold it, never a
/// command line nor the store's directory).
void check_catalog_url(std::string_view url);

/// The catalog a new store gets: SQLite in `dir` (an empty `url`) or the
/// PostgreSQL database `url` (DIR/catalog is written by the caller).
/// StorageUnavailableError for PostgreSQL in a program built without it.
std::unique_ptr<Catalog> create_catalog(const std::filesystem::path& dir, const std::string& url,
                                        const std::vector<std::pair<std::string, std::string>>& settings);
/// The catalog of the store in `dir`; `url` gets its location (empty: SQLite).
std::unique_ptr<Catalog> open_catalog(const std::filesystem::path& dir, std::string& url);
/// The PostgreSQL catalog location DIR/catalog holds; empty if there is
/// none (the store's catalog is DIR/index.db).
std::string catalog_url(const std::filesystem::path& dir);
/// Writes DIR/catalog (atomically, durably).
void write_catalog_file(const std::filesystem::path& dir, const std::string& url);

}  // namespace cdc::store::detail
