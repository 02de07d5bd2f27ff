// SPDX-License-Identifier: Apache-2.0
#include "key_ring.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::crypto {

namespace {

constexpr const char* kKeysDir = "keys";
constexpr std::string_view kTempPrefix = ".tmp-";
// A slot is ~300 bytes: anything much larger is not one (read no further).
constexpr std::size_t kMaxSlotFileBytes = 4096;

std::string errno_text(int e) { return std::strerror(e); }

IoError io_error(std::string_view what, const std::string& path, int e) {
    return IoError(fmt::format("{} '{}': {}", what, path, errno_text(e)));
}

void fsync_or_throw(int fd, const std::string& path) {
    if (::fsync(fd) != 0) throw io_error("cannot sync", path, errno);
}

class Fd {
public:
    explicit Fd(int fd) noexcept : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const noexcept { return fd_; }
    int release() noexcept { return std::exchange(fd_, -1); }

private:
    int fd_;
};

std::int64_t now_seconds() { return static_cast<std::int64_t>(std::time(nullptr)); }

// Every slot parsed: intact ones with their fields, damaged ones with the problem.
struct Parsed {
    std::string id;
    std::optional<KeySlot> slot;
    std::string problem;
};

std::vector<Parsed> parse_all(const KeySlotStorage& storage) {
    std::vector<Parsed> out;
    for (const std::string& id : storage.list()) {
        Parsed p{id, std::nullopt, {}};
        try {
            const auto bytes = storage.read(id);
            if (!bytes) continue;  // removed meanwhile
            p.slot = parse_key_slot(*bytes, storage.name_of(id), id);
        } catch (const KeySlotError& e) {  // (a link, not a regular file, damaged)
            p.problem = e.what();
        }
        out.push_back(std::move(p));
    }
    return out;
}

// The store the intact slots belong to (one), checked against `expected`.
std::string store_of(const KeySlotStorage& storage, const std::vector<Parsed>& slots, std::string_view expected) {
    std::string store;
    std::string first;
    for (const Parsed& p : slots) {
        if (!p.slot) continue;
        if (!expected.empty() && p.slot->store_id != expected)
            throw KeySlotError(fmt::format("key slot '{}' belongs to store {}, not to {}", storage.name_of(p.id),
                                           p.slot->store_id, expected));
        if (store.empty()) {
            store = p.slot->store_id;
            first = p.id;
        } else if (p.slot->store_id != store) {
            throw KeySlotError(fmt::format("the key slots of '{}' belong to different stores: {} ({}) and {} ({})",
                                           storage.where(), store, first, p.slot->store_id, p.id));
        }
    }
    return store;
}

std::string damaged_note(const std::vector<Parsed>& slots) {
    std::string note;
    for (const Parsed& p : slots)
        if (!p.slot) note += fmt::format("; {}", p.problem);
    return note;
}

UnlockedKey open_parsed(const KeySlotStorage& storage, const std::vector<Parsed>& slots,
                        std::span<const std::uint8_t> password, std::string_view expected,
                        std::string_view skip = {}) {
    if (slots.empty()) throw KeyRingError(fmt::format("'{}' has no key slot", storage.where()));
    const std::string store = store_of(storage, slots, expected);
    std::size_t tried = 0;
    std::vector<std::string> damaged;
    for (const Parsed& p : slots)
        if (!p.slot) damaged.push_back(p.problem);
    for (const Parsed& p : slots) {
        if (!p.slot || p.id == skip) continue;
        ++tried;
        if (auto key = unwrap_master_key(*p.slot, password))
            return UnlockedKey{std::move(*key), p.id, store, std::move(damaged)};
    }
    if (tried == 0 && skip.empty())
        throw KeySlotError(fmt::format("no key slot of '{}' is intact{}", storage.where(), damaged_note(slots)));
    throw WrongPasswordError(fmt::format("wrong password: it opens none of the {} key slot{} of '{}'{}", tried,
                                         tried == 1 ? "" : "s", storage.where(), damaged_note(slots)));
}

}  // namespace

// ---------------------------------------------------------------- DirKeySlots

DirKeySlots::DirKeySlots(const std::filesystem::path& store_dir, Mode mode) : dir_(store_dir) {
    const std::string dir = store_dir.string();
    Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.get() < 0) {
        const int e = errno;
        if (e == ENOENT || e == ENOTDIR)  // (a missing path: the caller's mistake)
            throw KeyRingError(fmt::format("'{}' is not a directory: {}", dir, errno_text(e)));
        throw io_error("cannot open the store", dir, e);
    }
    struct stat st {};
    if (::fstat(dfd.get(), &st) != 0) throw io_error("cannot stat", dir, errno);
    file_mode_ = st.st_mode & 0666;
    const std::string keys = (store_dir / kKeysDir).string();
    int kfd = ::openat(dfd.get(), kKeysDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (kfd < 0 && errno == ENOENT && mode == Mode::create) {
        if (::mkdirat(dfd.get(), kKeysDir, 0700) != 0 && errno != EEXIST) throw io_error("cannot make", keys, errno);
        kfd = ::openat(dfd.get(), kKeysDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (kfd >= 0) {
            // (mkdir's mode goes through the umask: set DIR's bits exactly)
            if (::fchmod(kfd, st.st_mode & 0777) != 0) {
                const int e = errno;
                ::close(kfd);
                throw io_error("cannot set the mode of", keys, e);
            }
            fsync_or_throw(dfd.get(), dir);  // the new directory entry
        }
    }
    if (kfd < 0) {
        const int e = errno;
        if (e == ENOENT) throw KeyRingError(fmt::format("'{}' has no key slots (no {}/ directory)", dir, kKeysDir));
        if (e == ELOOP || e == ENOTDIR)
            throw KeySlotError(fmt::format("'{}' is not a directory (a link or a file): not opened", keys));
        throw io_error("cannot open", keys, e);
    }
    keys_fd_ = kfd;
    if (mode == Mode::read) return;
    if (::flock(keys_fd_, LOCK_EX) != 0) {
        const int e = errno;
        ::close(keys_fd_);
        throw io_error("cannot lock", keys, e);
    }
    // Under the lock no other change runs: a temporary file is what a
    // killed change left (it never became a slot).
    const int dup_fd = ::dup(keys_fd_);
    DIR* d = dup_fd < 0 ? nullptr : ::fdopendir(dup_fd);
    if (d == nullptr) {
        const int e = errno;
        if (dup_fd >= 0) ::close(dup_fd);
        ::close(keys_fd_);
        throw io_error("cannot list", keys, e);
    }
    std::vector<std::string> stale;
    while (const dirent* ent = ::readdir(d))
        if (std::string_view(ent->d_name).starts_with(kTempPrefix)) stale.emplace_back(ent->d_name);
    ::closedir(d);
    for (const std::string& name : stale) ::unlinkat(keys_fd_, name.c_str(), 0);
}

DirKeySlots::~DirKeySlots() {
    if (keys_fd_ >= 0) ::close(keys_fd_);  // (releases the lock)
}

std::vector<std::string> DirKeySlots::list() const {
    const int dup_fd = ::dup(keys_fd_);
    DIR* d = dup_fd < 0 ? nullptr : ::fdopendir(dup_fd);
    if (d == nullptr) {
        const int e = errno;
        if (dup_fd >= 0) ::close(dup_fd);
        throw io_error("cannot list", (dir_ / kKeysDir).string(), e);
    }
    ::rewinddir(d);  // (a dup shares the offset of an earlier listing)
    std::vector<std::string> ids;
    errno = 0;
    while (const dirent* ent = ::readdir(d))
        if (parse_slot_id(ent->d_name)) ids.emplace_back(ent->d_name);
    const int e = errno;
    ::closedir(d);
    if (e != 0) throw io_error("cannot list", (dir_ / kKeysDir).string(), e);
    std::sort(ids.begin(), ids.end());
    return ids;
}

std::optional<std::vector<std::uint8_t>> DirKeySlots::read(std::string_view id) const {
    const std::string name(id);
    Fd fd(::openat(keys_fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (fd.get() < 0) {
        if (errno == ENOENT) return std::nullopt;
        if (errno == ELOOP) throw KeySlotError(fmt::format("key slot '{}' is a symbolic link: not opened", name_of(id)));
        throw io_error("cannot open the key slot", name_of(id), errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) throw io_error("cannot stat", name_of(id), errno);
    if (!S_ISREG(st.st_mode)) throw KeySlotError(fmt::format("key slot '{}' is not a regular file", name_of(id)));
    std::vector<std::uint8_t> bytes(kMaxSlotFileBytes + 1);
    std::size_t got = 0;
    while (got < bytes.size()) {
        const ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw io_error("cannot read the key slot", name_of(id), errno);
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    bytes.resize(got);
    return bytes;
}

void DirKeySlots::write_new(std::string_view id, std::span<const std::uint8_t> bytes) {
    const std::string name(id);
    const std::string temp = std::string(kTempPrefix) + name;
    const std::string temp_path = (dir_ / kKeysDir / temp).string();
    {
        Fd fd(::openat(keys_fd_, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (fd.get() < 0) throw io_error("cannot create", temp_path, errno);
        bool ok = ::fchmod(fd.get(), file_mode_) == 0;
        for (std::size_t done = 0; ok && done < bytes.size();) {
            const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
            if (n < 0 && errno == EINTR) continue;
            ok = n > 0;
            if (ok) done += static_cast<std::size_t>(n);
        }
        ok = ok && ::fsync(fd.get()) == 0;
        if (!ok) {
            const int e = errno;
            ::unlinkat(keys_fd_, temp.c_str(), 0);
            throw io_error("cannot write", temp_path, e);
        }
    }
    // RENAME_NOREPLACE: a slot is never replaced, even by one of the same id.
    if (::renameat2(keys_fd_, temp.c_str(), keys_fd_, name.c_str(), RENAME_NOREPLACE) != 0) {
        const int e = errno;
        ::unlinkat(keys_fd_, temp.c_str(), 0);
        if (e == EEXIST) throw KeyRingError(fmt::format("key slot '{}' exists already", name_of(id)));
        throw io_error("cannot rename into place", name_of(id), e);
    }
    fsync_or_throw(keys_fd_, (dir_ / kKeysDir).string());
}

void DirKeySlots::remove(std::string_view id) {
    const std::string name(id);
    if (::unlinkat(keys_fd_, name.c_str(), 0) != 0) throw io_error("cannot remove the key slot", name_of(id), errno);
    fsync_or_throw(keys_fd_, (dir_ / kKeysDir).string());
}

std::string DirKeySlots::name_of(std::string_view id) const { return (dir_ / kKeysDir / std::string(id)).string(); }

std::string DirKeySlots::where() const { return dir_.string(); }

// ---------------------------------------------------------------- operations

std::vector<SlotInfo> list_key_slots(const KeySlotStorage& storage) {
    std::vector<SlotInfo> out;
    for (Parsed& p : parse_all(storage)) {
        SlotInfo info;
        info.id = p.id;
        info.name = storage.name_of(p.id);
        info.problem = std::move(p.problem);
        if (p.slot) {
            info.created = p.slot->created;
            info.store_id = p.slot->store_id;
            info.kdf = p.slot->kdf;
        }
        out.push_back(std::move(info));
    }
    return out;
}

UnlockedKey open_key_ring(const KeySlotStorage& storage, std::span<const std::uint8_t> password,
                          std::string_view expected_store_id) {
    return open_parsed(storage, parse_all(storage), password, expected_store_id);
}

std::string create_key_ring(KeySlotStorage& storage, const MasterKey& key, std::string_view store_id,
                            std::span<const std::uint8_t> password, const KdfParams& kdf) {
    if (const auto ids = storage.list(); !ids.empty())
        throw KeyRingError(fmt::format("'{}' has key slots already ({} of them)", storage.where(), ids.size()));
    const KeySlot slot = wrap_master_key(key, password, store_id, kdf, now_seconds());
    storage.write_new(slot.id_hex(), serialize(slot));
    return slot.id_hex();
}

std::string add_key_slot(KeySlotStorage& storage, const UnlockedKey& unlocked,
                         std::span<const std::uint8_t> new_password, const KdfParams& kdf) {
    const KeySlot slot = wrap_master_key(unlocked.key, new_password, unlocked.store_id, kdf, now_seconds());
    storage.write_new(slot.id_hex(), serialize(slot));
    return slot.id_hex();
}

PasswordChange change_password(KeySlotStorage& storage, std::span<const std::uint8_t> old_password,
                               std::span<const std::uint8_t> new_password, const KdfParams& kdf,
                               std::string_view expected_store_id) {
    return change_password(storage, open_key_ring(storage, old_password, expected_store_id), new_password, kdf);
}

PasswordChange change_password(KeySlotStorage& storage, const UnlockedKey& unlocked,
                               std::span<const std::uint8_t> new_password, const KdfParams& kdf) {
    PasswordChange change;
    change.removed = unlocked.slot_id;
    change.added = add_key_slot(storage, unlocked, new_password, kdf);  // durable first
    storage.remove(unlocked.slot_id);
    return change;
}

void remove_key_slot(KeySlotStorage& storage, std::string_view id, std::span<const std::uint8_t> password,
                     std::string_view expected_store_id) {
    const std::vector<Parsed> slots = parse_all(storage);
    const auto it = std::find_if(slots.begin(), slots.end(), [&](const Parsed& p) { return p.id == id; });
    if (it == slots.end())
        throw KeyRingError(fmt::format("'{}' has no key slot {} (cdc store key list shows them)", storage.where(), id));
    if (slots.size() == 1)
        throw KeyRingError(fmt::format("key slot {} is the last one of '{}': removing it would lock the store for "
                                       "good (add another first)",
                                       id, storage.where()));
    const bool other_intact =
        std::any_of(slots.begin(), slots.end(), [&](const Parsed& p) { return p.slot && p.id != id; });
    if (!other_intact)
        throw KeyRingError(fmt::format("no key slot of '{}' but {} is intact: removing it would lock the store for "
                                       "good{}",
                                       storage.where(), id, damaged_note(slots)));
    try {
        (void)open_parsed(storage, slots, password, expected_store_id, id);
    } catch (const WrongPasswordError&) {
        if (it->slot && unwrap_master_key(*it->slot, password))
            throw KeyRingError(fmt::format("the password given opens key slot {} itself: give the password of "
                                           "another slot, which stays",
                                           id));
        throw;
    }
    storage.remove(id);
}

}  // namespace cdc::crypto
