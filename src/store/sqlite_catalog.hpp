// SPDX-License-Identifier: Apache-2.0
// The catalog in SQLite (WAL) inside the store's directory: DIR/index.db,
// the tables of docs/STORE.md ("Database"). The only place with the
// store's SQL, with sqlite_catalog.cpp (schema, settings, lookups,
// manifests, flush) and sqlite_catalog_gc.cpp (gc, verify, stats).
#pragma once

#include "catalog.hpp"
#include "sqlite.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cdc::store::detail {

class SqliteCatalog final : public Catalog {
public:
    /// Creates DIR/index.db (with the store's file mode), its schema and
    /// `settings`, in one transaction.
    static std::unique_ptr<Catalog> create(const std::filesystem::path& dir,
                                                 const std::vector<std::pair<std::string, std::string>>& settings);
    /// Opens DIR/index.db: DamageError if it is missing.
    static std::unique_ptr<Catalog> open(const std::filesystem::path& dir);
    ~SqliteCatalog() override;

    std::string describe() const override { return db_.path(); }
    std::unique_ptr<Catalog> connect() const override;

    std::unordered_map<std::string, std::string> settings() override;
    void upgrade_for_writing() override;

    void begin_read() override;
    void end_read() override;
    void cancel_read() noexcept override;
    bool reading() const noexcept override { return view_ != nullptr; }

    std::optional<Location> find_chunk(const ChunkId& id, std::string_view context) override;
    std::optional<std::uint32_t> chunk_size(const ChunkId& id) override;
    void find_present(std::span<const ChunkId> ids, IdSet& found) override;
    void for_each_chunk(const std::function<void(const ChunkId&, const Location&)>& f,
                        const std::function<void(const ChunkId&, const std::string&)>& damaged,
                        std::string_view context, const std::set<std::uint64_t>* only_packs) override;

    std::map<std::uint64_t, std::uint64_t> packs() override;
    std::uint64_t max_pack_id() override;
    std::vector<std::uint64_t> packs_below(std::uint64_t below, std::size_t limit) override;
    std::optional<std::uint64_t> pack_length(std::uint64_t pack) override;

    std::vector<ManifestInfo> list(std::string_view prefix) override;
    std::optional<ManifestInfo> find(std::string_view name) override;
    std::optional<StoredFile> stored_file(std::string_view name, std::optional<std::uint64_t> size,
                                          std::string_view context) override;
    std::optional<StoredFile> stored_file(std::int64_t row) override;
    std::vector<StoredFile> files_starting_with(const ChunkId& first, std::size_t limit,
                                                std::optional<std::uint64_t> size,
                                                std::optional<std::uint64_t> chunks) override;
    bool still_there(const StoredFile& file) override;
    std::unique_ptr<ListReader> read_list(std::int64_t row) override;
    void remove(std::span<const std::string> names, std::string_view store_name) override;
    void rename(std::span<const Move> moves, std::string_view store_name) override;
    void for_each_manifest(
        const std::function<void(const std::string&, std::uint64_t, std::uint64_t, ListReader&)>& f) override;
    std::uint64_t pending_manifests() override;

    void commit(FlushBatch& batch) override;

    GcSweep sweep() override;
    std::map<std::uint64_t, std::uint64_t> live_bytes() override;
    void drop_packs(const std::set<std::uint64_t>& packs) override;
    void move_chunks(std::span<const std::pair<std::uint64_t, std::uint64_t>> pack_sizes,
                     std::span<const PendingRow> moved, std::span<const std::uint64_t> dropped) override;
    void compact() override;

    Totals totals() override;
    std::vector<std::string> check(bool full) override;

private:
    explicit SqliteCatalog(Db db);
    /// The row checks, made at first use (they read the max chunk size).
    CatalogCheck& row_check();
    void write_manifests(FlushBatch& batch);
    /// The gc's scratch tables (temp: this connection's own).
    void make_temp_tables();

    Db db_;
    std::unique_ptr<Transaction> view_;
    std::unique_ptr<CatalogCheck> check_;
    Stmt find_stmt_;      // find_chunk
    Stmt size_stmt_;      // chunk_size, find_present's few
    Stmt batch_stmt_;     // find_present's batches
    Stmt length_stmt_;    // a pack's committed length (the checks)
    Stmt by_name_stmt_;   // stored_file(name)
    Stmt similar_stmt_;   // files_starting_with
    Stmt same_stmt_;      // still_there
    Stmt list_stmt_;      // read_list's, while list_stmt_used_ is false
    bool list_stmt_used_ = false;
};

}  // namespace cdc::store::detail
