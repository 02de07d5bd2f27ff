// SPDX-License-Identifier: Apache-2.0
#include "dir_packs.hpp"

#include "../io/open_files.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::store::detail {

namespace {

std::string pack_name(std::uint64_t id) { return fmt::format("{:08}.pack", id); }

/// DIR/packs (O_DIRECTORY, never through a link); empty with errno set.
Fd open_packs_dir(const std::filesystem::path& dir) {
    const auto path = dir / kPacksDir;
    Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (!fd && errno == ENOTDIR && ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) errno = ELOOP;
    return fd;
}

/// Pack `id` as a regular file, relative to DIR/packs (ELOOP for a link,
/// kNotRegularFile for anything else); empty with errno set.
Fd open_pack(const std::filesystem::path& dir, std::uint64_t id, int flags, unsigned mode = 0) {
    const Fd packs = open_packs_dir(dir);
    if (!packs) return Fd{};
    return Fd(cdc::detail::open_regular_file(packs.get(), pack_name(id).c_str(), flags, static_cast<mode_t>(mode),
                                             false));
}

class FileReader final : public PackReader {
public:
    FileReader(Fd fd, std::string what) : fd_(std::move(fd)), what_(std::move(what)) {}
    std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) const override {
        return pread_full(fd_.get(), out.data(), out.size(), offset, what_);
    }
    std::uint64_t size() const override {
        struct stat st {};
        if (::fstat(fd_.get(), &st) != 0) throw StoreError(fmt::format("{}: {}", what_, std::strerror(errno)));
        return static_cast<std::uint64_t>(st.st_size);
    }

private:
    Fd fd_;
    std::string what_;
};

class FileSink final : public PackSink {
public:
    FileSink(std::uint64_t id, Fd fd, std::uint64_t size, std::string what)
        : id_(id), fd_(std::move(fd)), size_(size), what_(std::move(what)) {}
    std::uint64_t id() const override { return id_; }
    std::uint64_t size() const override { return size_; }
    void append(std::span<const std::uint8_t> bytes) override {
        if (broken_) throw StoreError(fmt::format("{}: an earlier write failed", what_));
        try {
            write_all(fd_.get(), bytes.data(), bytes.size(), what_);
        } catch (...) {
            // A partial write leaves bytes beyond the committed length (cut
            // off later); the file offset no longer matches size_.
            broken_ = true;
            throw;
        }
        size_ += bytes.size();
    }
    void sync() override { fsync_fd(fd_.get(), what_, true); }

private:
    std::uint64_t id_;
    Fd fd_;  // held with an exclusive flock: its writer's while open
    std::uint64_t size_;
    std::string what_;
    bool broken_ = false;
};

}  // namespace

DirPackStorage::DirPackStorage(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::string DirPackStorage::describe(std::uint64_t id) const { return pack_path(dir_, id).string(); }

std::unique_ptr<PackSink> DirPackStorage::create(std::uint64_t id) {
    const std::string path = describe(id);
    std::error_code ec;
    std::filesystem::create_directories(dir_ / kPacksDir, ec);
    // (the directory's mode now: a store chmodded to share it shares its new packs)
    const unsigned mode = store_file_mode(dir_);
    Fd fd = open_pack(dir_, id, O_RDWR | O_CREAT | O_EXCL, mode);
    if (!fd) {
        if (errno == EEXIST) return nullptr;
        throw StoreError(fmt::format("cannot create pack '{}': {}", path, open_failure(errno)));
    }
    // The store's mode, whatever the umask: in a store shared by a group
    // the members append to each other's packs.
    if (::fchmod(fd.get(), mode) != 0)
        throw StoreError(fmt::format("cannot chmod new pack '{}': {}", path, std::strerror(errno)));
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
        throw StoreError(fmt::format("cannot lock new pack '{}': {}", path, std::strerror(errno)));
    const auto header = pack_header(id);
    write_all(fd.get(), header.data(), header.size(), fmt::format("pack '{}'", path));
    {
        std::lock_guard lock(mutex_);
        names_changed_ = true;
    }
    return std::make_unique<FileSink>(id, std::move(fd), header.size(), fmt::format("pack '{}'", path));
}

std::unique_ptr<PackSink> DirPackStorage::reopen(std::uint64_t id,
                                                 const std::function<std::optional<std::uint64_t>()>& committed) {
    Fd fd = open_pack(dir_, id, O_RDWR);  // (never a link another user put there)
    if (!fd) return nullptr;
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return nullptr;  // another writer appends to it
    const std::optional<std::uint64_t> length = committed();
    if (!length) return nullptr;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) < *length)
        return nullptr;  // damaged: left to verify
    // Bytes beyond the committed length are an interrupted writer's: cut them off.
    if (static_cast<std::uint64_t>(st.st_size) > *length && ::ftruncate(fd.get(), static_cast<off_t>(*length)) != 0)
        return nullptr;
    if (::lseek(fd.get(), 0, SEEK_END) < 0) return nullptr;
    return std::make_unique<FileSink>(id, std::move(fd), *length, fmt::format("pack '{}'", describe(id)));
}

void DirPackStorage::sync_names() {
    {
        std::lock_guard lock(mutex_);
        if (!names_changed_) return;
        names_changed_ = false;
    }
    fsync_dir(dir_ / kPacksDir);
}

std::unique_ptr<PackReader> DirPackStorage::open(std::uint64_t id) const {
    Fd f = open_pack(dir_, id, O_RDONLY);
    if (!f) {
        const int e = errno;
        if (e == ENOENT) return nullptr;
        const auto text = fmt::format("pack '{}' cannot be opened: {}", describe(id), open_failure(e));
        if (e == ELOOP || e == cdc::detail::kNotRegularFile) throw DamageError(text);
        throw StoreError(text);
    }
    return std::make_unique<FileReader>(std::move(f), fmt::format("pack {:08}", id));
}

std::map<std::uint64_t, std::uint64_t> DirPackStorage::list() const {
    std::map<std::uint64_t, std::uint64_t> out;
    Fd packs = open_packs_dir(dir_);
    if (!packs) return out;
    DIR* d = ::fdopendir(packs.get());
    if (d == nullptr) return out;
    packs.release();  // (closedir closes it)
    while (const dirent* e = ::readdir(d)) {
        const auto id = parse_pack_name(e->d_name);
        if (!id) continue;
        struct stat st {};
        out.emplace(*id, ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0
                             ? static_cast<std::uint64_t>(st.st_size)
                             : 0);
    }
    ::closedir(d);
    return out;
}

void DirPackStorage::remove(std::uint64_t id) {
    if (const Fd packs = open_packs_dir(dir_)) (void)::unlinkat(packs.get(), pack_name(id).c_str(), 0);
    std::lock_guard lock(mutex_);
    names_changed_ = true;
}

void DirPackStorage::truncate(std::uint64_t id, std::uint64_t length) {
    // (through the file itself: truncate(2) would follow a link put in its place)
    if (const Fd f = open_pack(dir_, id, O_WRONLY)) (void)::ftruncate(f.get(), static_cast<off_t>(length));
}

}  // namespace cdc::store::detail
