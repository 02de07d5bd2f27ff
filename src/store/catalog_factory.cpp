// SPDX-License-Identifier: Apache-2.0
#include "catalog_factory.hpp"

#include "format.hpp"
#include "sqlite_catalog.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <unistd.h>

namespace cdc::store::detail {

namespace {

std::atomic<PgCatalogMaker> g_pg_maker{nullptr};

PgCatalogMaker pg_maker(const std::filesystem::path& dir, const std::string& url) {
    const PgCatalogMaker maker = g_pg_maker.load();
    if (maker == nullptr)
        throw StorageUnavailableError(fmt::format("the store '{}' keeps its catalog in PostgreSQL ({}), which this "
                                                  "program was built without (the cdc tool runs its cdc-store-s3 "
                                                  "helper for it)",
                                                  dir.string(), url));
    return maker;
}

}  // namespace

void set_pg_catalog_maker(PgCatalogMaker maker) { g_pg_maker.store(maker); }

bool is_pg_url(std::string_view url) { return url.starts_with("postgresql://") || url.starts_with("postgres://"); }

void check_catalog_url(std::string_view url) {
    if (!is_pg_url(url))
        throw OptionError(fmt::format("catalog location '{}' is invalid: only postgresql://[USER@]HOST[:PORT]/DB is "
                                      "known (or none: SQLite in the store's directory)",
                                      url),
                          "catalog");
    // USER:PASSWORD@ before the host, or a password=... parameter.
    const std::string_view rest = url.substr(url.find("://") + 3);
    const std::string_view authority = rest.substr(0, rest.find_first_of("/?"));
    const auto at = authority.rfind('@');
    const bool in_userinfo = at != std::string_view::npos && authority.substr(0, at).find(':') != std::string_view::npos;
    const auto q = url.find('?');
    const bool in_query = q != std::string_view::npos &&
                          (url.find("?password=", q) == q || url.find("&password=", q) != std::string_view::npos);
    if (in_userinfo || in_query)
        throw OptionError("the catalog location carries a password: give it in PGPASSWORD, a PGPASSFILE or "
                          "~/.pgpass instead (it is never recorded in the store's directory)",
                          "catalog");
}

std::unique_ptr<Catalog> create_catalog(const std::filesystem::path& dir, const std::string& url,
                                        const std::vector<std::pair<std::string, std::string>>& settings) {
    if (url.empty()) return SqliteCatalog::create(dir, settings);
    return pg_maker(dir, url)(url, &settings);
}

std::unique_ptr<Catalog> open_catalog(const std::filesystem::path& dir, std::string& url) {
    url = catalog_url(dir);
    if (url.empty()) return SqliteCatalog::open(dir);
    return pg_maker(dir, url)(url, nullptr);
}

std::string catalog_url(const std::filesystem::path& dir) {
    std::string url;
    const auto file = dir / kCatalogName;
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::symlink_status(file, ec))) return url;
    // (Never through a link: it says where the store's catalog is.)
    const Fd fd = open_store_file(file, O_RDONLY, 0);
    if (!fd) throw StoreError(fmt::format("cannot open '{}': {}", file.string(), open_failure(errno)));
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw StoreError(fmt::format("cannot read '{}': {}", file.string(), std::strerror(errno)));
        if (n == 0) break;
        url.append(buf, static_cast<std::size_t>(n));
        if (url.size() > 65536) throw DamageError(fmt::format("'{}' is too long for a catalog location", file.string()));
    }
    while (!url.empty() && (url.back() == '\n' || url.back() == '\r' || url.back() == ' ')) url.pop_back();
    try {
        check_catalog_url(url);
    } catch (const OptionError& e) {
        throw DamageError(fmt::format("the store '{}': '{}' does not hold a catalog location ({})", dir.string(),
                                      file.string(), e.what()));
    }
    return url;
}

void write_catalog_file(const std::filesystem::path& dir, const std::string& url) {
    const auto tmp = dir / (std::string(kCatalogName) + ".tmp");
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << url << '\n';
        out.flush();
        if (!out) throw StoreError(fmt::format("cannot write '{}'", tmp.string()));
    }
    {
        Fd f(::open(tmp.c_str(), O_RDONLY | O_CLOEXEC));
        if (!f) throw StoreError(fmt::format("cannot open '{}': {}", tmp.string(), std::strerror(errno)));
        ::fchmod(f.get(), store_file_mode(dir));
        fsync_fd(f.get(), tmp.string(), false);
    }
    std::filesystem::rename(tmp, dir / kCatalogName);
    fsync_dir(dir);
}

}  // namespace cdc::store::detail
