// SPDX-License-Identifier: Apache-2.0
// cdc store key list|add|remove|passwd: the key slots of an encrypted store
// (docs/STORE.md "Encryption"): each slot wraps the store's master key under
// one password; a change writes the new slot before it removes the old.
#include "cmd_store.hpp"
#include "password.hpp"
#include "time_text.hpp"

#include "key_ring.hpp"  // (src/crypto)

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cdc::cli {

namespace {

using crypto::DirKeySlots;

constexpr const char* kPasswordFlag = "--password-file";
constexpr const char* kNewPasswordFlag = "--new-password-file";

/// Runs f(); a wrong password and a refused request are usage errors (exit
/// 2); a damaged slot, an I/O error: failures (exit 4).
template <class F>
int with_key_errors(F&& f) {
    try {
        return f();
    } catch (const crypto::WrongPasswordError& e) {
        throw UsageError(e.what());
    } catch (const crypto::KeyRingError& e) {
        throw UsageError(e.what());
    }
}

crypto::SecretBytes current_password(const std::string& file) {
    return get_password(file, kPasswordFlag, true, Ask::once, "password");
}

crypto::SecretBytes new_password(const std::string& file) {
    return get_password(file, kNewPasswordFlag, false, Ask::twice, "new password");
}

void warn_damaged(const crypto::UnlockedKey& k, bool quiet) {
    if (quiet) return;
    for (const std::string& problem : k.damaged) print_warning(problem);
}

std::string mib(std::uint64_t bytes) {
    if (bytes % (std::uint64_t{1} << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
    return fmt::format("{} KiB", bytes >> 10);
}

// ---------------------------------------------------------------- list

struct ListArgs {
    std::string dir;
    bool json = false;
    bool quiet = false;
};

int run_list(const ListArgs& a) {
    const DirKeySlots storage(a.dir, DirKeySlots::Mode::read);
    const auto slots = crypto::list_key_slots(storage);
    bool damaged = false;
    if (a.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& s : slots) {
            nlohmann::json j = {{"id", s.id}, {"ok", s.problem.empty()}};
            if (s.problem.empty()) {
                j["created"] = s.created;
                j["store_id"] = s.store_id;
                j["kdf"] = "argon2id";
                j["opslimit"] = s.kdf.opslimit;
                j["memlimit"] = s.kdf.memlimit;
            } else {
                j["problem"] = s.problem;
            }
            list.push_back(std::move(j));
        }
        nlohmann::json out = {{"slots", std::move(list)}};
        tools::put_name(out, "dir", a.dir);
        fmt::print("{}\n", tools::json_text(out));
    } else {
        for (const auto& s : slots) {
            if (s.problem.empty())
                fmt::print("{}  {}  argon2id {} pass{}, {}  store {}\n", s.id,
                           local_time_text(s.created * 1'000'000'000), s.kdf.opslimit, s.kdf.opslimit == 1 ? "" : "es",
                           mib(s.kdf.memlimit), s.store_id);
            else
                fmt::print("{}  damaged\n", s.id);
        }
    }
    for (const auto& s : slots)
        if (!s.problem.empty()) {
            print_error(s.problem);
            damaged = true;
        }
    finish_stdout();
    return damaged ? kExitFailure : kExitOk;
}

// ---------------------------------------------------------------- add

struct AddArgs {
    std::string dir;
    std::string password_file;
    std::string new_password_file;
    bool json = false;
    bool quiet = false;
};

int run_add(const AddArgs& a) {
    DirKeySlots storage(a.dir, DirKeySlots::Mode::write);
    const crypto::SecretBytes password = current_password(a.password_file);
    const crypto::UnlockedKey unlocked = crypto::open_key_ring(storage, password.span());
    warn_damaged(unlocked, a.quiet);
    const crypto::SecretBytes fresh = new_password(a.new_password_file);
    const std::string id = crypto::add_key_slot(storage, unlocked, fresh.span(), crypto::kdf_params_for_new_slot());
    const std::size_t count = storage.list().size();
    if (a.json) {
        nlohmann::json out = {{"added", id}, {"opened_with", unlocked.slot_id}, {"slots", count}};
        tools::put_name(out, "dir", a.dir);
        fmt::print("{}\n", tools::json_text(out));
    } else if (!a.quiet) {
        fmt::print("added key slot {} to '{}' ({} slots)\n", id, a.dir, count);
    }
    finish_stdout();
    return kExitOk;
}

// ---------------------------------------------------------------- remove

struct RemoveArgs {
    std::string dir;
    std::string slot;
    std::string password_file;
    bool json = false;
    bool quiet = false;
};

int run_remove(const RemoveArgs& a) {
    if (!crypto::parse_slot_id(a.slot))
        throw UsageError(fmt::format("'{}' is not a key slot id (16 hex digits, as cdc store key list shows)", a.slot));
    DirKeySlots storage(a.dir, DirKeySlots::Mode::write);
    const crypto::SecretBytes password = current_password(a.password_file);
    crypto::remove_key_slot(storage, a.slot, password.span());
    const std::size_t count = storage.list().size();
    if (a.json) {
        nlohmann::json out = {{"removed", a.slot}, {"slots", count}};
        tools::put_name(out, "dir", a.dir);
        fmt::print("{}\n", tools::json_text(out));
    } else if (!a.quiet) {
        fmt::print("removed key slot {} from '{}' ({} left)\n", a.slot, a.dir, count);
    }
    finish_stdout();
    return kExitOk;
}

// ---------------------------------------------------------------- passwd

struct PasswdArgs {
    std::string dir;
    std::string password_file;
    std::string new_password_file;
    bool json = false;
    bool quiet = false;
};

int run_passwd(const PasswdArgs& a) {
    DirKeySlots storage(a.dir, DirKeySlots::Mode::write);
    const crypto::SecretBytes old_password = current_password(a.password_file);
    // The old password is checked before the new one is asked for.
    const crypto::UnlockedKey unlocked = crypto::open_key_ring(storage, old_password.span());
    warn_damaged(unlocked, a.quiet);
    const crypto::SecretBytes fresh = new_password(a.new_password_file);
    const crypto::PasswordChange change =
        crypto::change_password(storage, unlocked, fresh.span(), crypto::kdf_params_for_new_slot());
    if (a.json) {
        nlohmann::json out = {{"removed", change.removed}, {"added", change.added}};
        tools::put_name(out, "dir", a.dir);
        fmt::print("{}\n", tools::json_text(out));
    } else if (!a.quiet) {
        fmt::print("changed the password of '{}': key slot {} replaces {}\n", a.dir, change.added, change.removed);
    }
    finish_stdout();
    return kExitOk;
}

void add_dir(CLI::App& c, std::string& dir) {
    c.add_option("DIR", dir, "the store's directory (its key slots: DIR/keys/)")->required()->type_name("");
}

void add_password_file(CLI::App& c, std::string& file) {
    c.add_option(kPasswordFlag, file,
                 "the store's password: the file's content (one trailing newline dropped); default: "
                 "CDC_PASSWORD_FILE, CDC_PASSWORD, else asked on the terminal")
        ->type_name("FILE");
}

void add_new_password_file(CLI::App& c, std::string& file) {
    c.add_option(kNewPasswordFlag, file,
                 "the new password: the file's content (one trailing newline dropped); default: asked twice on the "
                 "terminal")
        ->type_name("FILE");
}

const char* const kPasswordNotes =
    "Passwords come from --password-file FILE, else the file named by CDC_PASSWORD_FILE, else CDC_PASSWORD, else "
    "the terminal (without echo); never from a command-line value. A new password comes from --new-password-file "
    "FILE or the terminal (asked twice). Each new slot's Argon2id parameters are tuned to take about 0.5 s on this "
    "machine (CDC_TEST_FAST_KDF=1: the weakest parameters, for tests only).";

}  // namespace

void add_store_key(CLI::App& st, int& exit_code) {
    auto* key = st.add_subcommand("key", "the passwords of an encrypted store (key slots): list, add, remove, passwd");
    key->require_subcommand(1);
    document(*key, {.notes = "Each key slot wraps the store's master key under one password (Argon2id, "
                             "XChaCha20-Poly1305); several passwords may open one store. See docs/STORE.md.",
                    .examples = {{"cdc store key list /srv/store", "the slots of a store"}},
                    .exit_codes = {}});
    const auto wrong = ExitStatus{kExitUsage, "usage error, a wrong password, or a request refused"};
    {
        auto a = std::make_shared<ListArgs>();
        auto* c = key->add_subcommand("list", "list the key slots of a store (no password needed)");
        add_dir(*c, a->dir);
        add_json_flag(*c, a->json, "{dir, slots: [{id, ok, created, store_id, kdf, opslimit, memlimit} or {id, ok: "
                                   "false, problem}]}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = "Text output: slot id, creation time, Argon2id parameters and store id, one slot a "
                               "line; a damaged slot is listed as such and its problem printed on stderr.",
                      .examples = {{"cdc store key list /srv/store", "the slots and their parameters"},
                                   {"cdc store key list --json /srv/store", "the same as JSON"}},
                      .exit_codes = exit_codes({{kExitFailure, "a key slot is damaged (named), or an error stopped "
                                                               "the run"}})});
        c->callback([a, &exit_code] { exit_code = with_key_errors([&] { return run_list(*a); }); });
    }
    {
        auto a = std::make_shared<AddArgs>();
        auto* c = key->add_subcommand("add", "add a password: a new key slot, opened with an existing password");
        add_dir(*c, a->dir);
        add_password_file(*c, a->password_file);
        add_new_password_file(*c, a->new_password_file);
        add_json_flag(*c, a->json, "{dir, added, opened_with, slots}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = kPasswordNotes,
                      .examples = {{"cdc store key add /srv/store", "asks for a password of the store, then the new "
                                                                    "one twice"},
                                   {"cdc store key add --password-file old.txt --new-password-file new.txt "
                                    "/srv/store",
                                    "both from files"}},
                      .exit_codes = exit_codes({wrong})});
        c->callback([a, &exit_code] { exit_code = with_key_errors([&] { return run_add(*a); }); });
    }
    {
        auto a = std::make_shared<RemoveArgs>();
        auto* c = key->add_subcommand("remove", "remove a key slot (never the last one)");
        add_dir(*c, a->dir);
        c->add_option("SLOT", a->slot, "the slot's id (cdc store key list)")->required()->type_name("");
        add_password_file(*c, a->password_file);
        add_json_flag(*c, a->json, "{dir, removed, slots}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = std::string("The password given must open another slot than SLOT, which stays: the "
                                           "store remains open to a password you know. ") +
                               kPasswordNotes,
                      .examples = {{"cdc store key remove /srv/store 3f2a9c0d1e4b5a67", "remove one password"}},
                      .exit_codes = exit_codes({wrong})});
        c->callback([a, &exit_code] { exit_code = with_key_errors([&] { return run_remove(*a); }); });
    }
    {
        auto a = std::make_shared<PasswdArgs>();
        auto* c = key->add_subcommand("passwd", "change a password: a new key slot replaces the one it opens");
        add_dir(*c, a->dir);
        add_password_file(*c, a->password_file);
        add_new_password_file(*c, a->new_password_file);
        add_json_flag(*c, a->json, "{dir, removed, added}");
        add_quiet_flag(*c, a->quiet);
        document(*c, {.notes = std::string("The new slot is written (and synced) before the old one is removed: "
                                           "interrupted at any instant, the old password or the new one opens the "
                                           "store. ") +
                               kPasswordNotes,
                      .examples = {{"cdc store key passwd /srv/store", "asks for the old password, then the new one "
                                                                       "twice"}},
                      .exit_codes = exit_codes({wrong})});
        c->callback([a, &exit_code] { exit_code = with_key_errors([&] { return run_passwd(*a); }); });
    }
}

}  // namespace cdc::cli
