// SPDX-License-Identifier: Apache-2.0
// The key slots of a store, together: where they are kept (KeySlotStorage;
// DirKeySlots: the files DIR/keys/<slot id>) and what the `cdc store key`
// commands do with them. Every change writes a new slot before it removes
// one, so a crash at any instant leaves the old password working, or the
// new one, or both; the last slot is never removed.
#pragma once

#include "key_slot.hpp"
#include "master_key.hpp"

#include <cdc/error.hpp>

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::crypto {

/// The password opens none of the store's intact key slots (exit 2).
class WrongPasswordError : public Error {
public:
    using Error::Error;
};

/// Where a store's key slots are kept, one blob per slot named by its id.
class KeySlotStorage {
public:
    virtual ~KeySlotStorage() = default;
    /// The ids of the slots present (16 hex digits each), sorted.
    virtual std::vector<std::string> list() const = 0;
    /// A slot's bytes; nullopt if it is gone (removed since list()).
    virtual std::optional<std::vector<std::uint8_t>> read(std::string_view id) const = 0;
    /// Writes a new slot, durably before it returns; never replaces one
    /// (KeyRingError if `id` exists). A crash leaves it whole or absent.
    virtual void write_new(std::string_view id, std::span<const std::uint8_t> bytes) = 0;
    /// Removes a slot, durably before it returns.
    virtual void remove(std::string_view id) = 0;
    /// The slot's name in messages (its file).
    virtual std::string name_of(std::string_view id) const = 0;
    /// The store's name in messages (its directory).
    virtual std::string where() const = 0;
};

/// The slots as files DIR/keys/<id> (mode: DIR's read/write bits; keys/ its
/// rwx bits), never opened through a symbolic link. A new slot is written to
/// keys/.tmp-<id>, fsync'd, renamed into place (never over a file) and the
/// directory fsync'd; a removal is fsync'd likewise.
class DirKeySlots final : public KeySlotStorage {
public:
    enum class Mode {
        read,    ///< keys/ must exist (KeyRingError "no key slots" otherwise)
        write,   ///< as read, and holds an exclusive lock (flock on keys/) while it lives,
                 ///< so that changes never interleave; removes temporary files a killed change left
        create,  ///< as write, making keys/ first if it is absent
    };
    DirKeySlots(const std::filesystem::path& store_dir, Mode mode);
    ~DirKeySlots() override;
    DirKeySlots(const DirKeySlots&) = delete;
    DirKeySlots& operator=(const DirKeySlots&) = delete;

    std::vector<std::string> list() const override;
    std::optional<std::vector<std::uint8_t>> read(std::string_view id) const override;
    void write_new(std::string_view id, std::span<const std::uint8_t> bytes) override;
    void remove(std::string_view id) override;
    std::string name_of(std::string_view id) const override;
    std::string where() const override;

private:
    std::filesystem::path dir_;
    int keys_fd_ = -1;
    unsigned file_mode_ = 0600;
};

/// What list_key_slots says of one slot: its fields, or why it is unusable.
struct SlotInfo {
    std::string id;
    std::string name;         ///< its file
    std::string problem;      ///< empty for an intact slot, else what is wrong (KeySlotError's message)
    std::int64_t created = 0; ///< (intact slots only, as the fields below)
    std::string store_id;
    KdfParams kdf;
};

/// Every slot present, intact or not (sorted by id).
std::vector<SlotInfo> list_key_slots(const KeySlotStorage& storage);

/// The master key, once a password opened a slot.
struct UnlockedKey {
    MasterKey key;
    std::string slot_id;                 ///< the slot the password opened
    std::string store_id;
    std::vector<std::string> damaged;    ///< problems of other slots (for a warning)
};

/// Opens the store's master key with `password`: parses every slot (damaged
/// ones are set aside), checks that the intact ones belong to one store
/// (`expected_store_id` when given), then tries the password on each.
/// WrongPasswordError if it opens none (the message counts the slots tried
/// and names the damaged ones); KeySlotError if no slot is intact or the
/// slots disagree on the store; KeyRingError if there is no slot.
UnlockedKey open_key_ring(const KeySlotStorage& storage, std::span<const std::uint8_t> password,
                          std::string_view expected_store_id = {});

/// The first slot of a new encrypted store (refused if any slot exists):
/// `key` wrapped under `password`. Returns the slot's id.
std::string create_key_ring(KeySlotStorage& storage, const MasterKey& key, std::string_view store_id,
                            std::span<const std::uint8_t> password, const KdfParams& kdf);

/// A new slot for `new_password`, wrapping the key `unlocked` holds. Returns its id.
std::string add_key_slot(KeySlotStorage& storage, const UnlockedKey& unlocked,
                         std::span<const std::uint8_t> new_password, const KdfParams& kdf);

/// Replaces the slot `unlocked` was opened with by one for `new_password`:
/// the new slot is written (durably) before the old one is removed.
struct PasswordChange {
    std::string removed;  ///< the old slot's id
    std::string added;    ///< the new slot's id
};
PasswordChange change_password(KeySlotStorage& storage, const UnlockedKey& unlocked,
                               std::span<const std::uint8_t> new_password, const KdfParams& kdf);
/// The same, opening the key with `old_password` first.
PasswordChange change_password(KeySlotStorage& storage, std::span<const std::uint8_t> old_password,
                               std::span<const std::uint8_t> new_password, const KdfParams& kdf,
                               std::string_view expected_store_id = {});

/// Removes slot `id`. Refused (KeyRingError) for the last slot, an unknown
/// id, or when `password` opens no other slot than `id` (the store must stay
/// open to a password the caller knows); WrongPasswordError when it opens
/// none. A damaged slot may be removed this way.
void remove_key_slot(KeySlotStorage& storage, std::string_view id, std::span<const std::uint8_t> password,
                     std::string_view expected_store_id = {});

}  // namespace cdc::crypto
