// SPDX-License-Identifier: Apache-2.0
// Property: the tree object reader (src/store/tree_object.hpp) refuses any
// input that is not a tree object with a TreeError, never crashes, never
// recurses or allocates beyond its input, and what it accepts is a canonical
// tree: sorted unique names, every entry consistent (entry_problem), and,
// names being good, written again to exactly the input's bytes, by
// encode_tree's direct writer and by nlohmann's to_cbor alike. A tree
// written by encode_tree reads back equal.
//
// Half of the inputs are raw bytes; the other half build a tree of entries
// drawn from the input (so that the fuzzer reaches well-formed objects),
// write it, check that it reads back, then garble the bytes (flip, cut,
// insert) as the input says and read them again.
#include "fuzz_input.hpp"

#include "../../src/store/tree_object.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace tr = cdc::store::tree;
using cdc::fuzz::Bytes;

void check_accepted(std::span<const std::uint8_t> input) {
    std::vector<tr::Entry> entries;
    try {
        entries = tr::parse_tree(input);
    } catch (const tr::TreeError&) {
        return;
    }
    bool names_ok = true;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        if (!tr::entry_problem(entries[i]).empty()) std::abort();
        if (i > 0 && !(entries[i - 1].name < entries[i].name)) std::abort();
        names_ok = names_ok && tr::name_problem(entries[i].name).empty();
    }
    if (names_ok) {
        const std::vector<std::uint8_t> again = tr::encode_tree(entries);
        if (!std::equal(again.begin(), again.end(), input.begin(), input.end())) std::abort();
        // (encode_tree writes directly: nlohmann's to_cbor defines the bytes)
        if (tr::detail::encode_sorted_dom(entries) != again) std::abort();
    }
}

std::string text(Bytes& in, std::size_t max) {
    std::string s(in.u8() % (max + 1), '\0');
    for (char& c : s) c = static_cast<char>(in.u8());
    return s;
}

tr::Entry entry(Bytes& in, std::size_t index) {
    tr::Entry e;
    e.name = "n" + std::to_string(index) + text(in, 6);
    std::replace(e.name.begin(), e.name.end(), '/', '_');
    std::replace(e.name.begin(), e.name.end(), '\0', '_');
    e.type = static_cast<tr::EntryType>(in.u8() % tr::kEntryTypeCount);
    e.mode = in.u16() & 07777;
    if (in.u8() & 1) e.uid = in.u16() * 65537u;
    if (in.u8() & 1) e.user = text(in, 8);
    e.mtime_ns = static_cast<std::int64_t>(in.u16()) * 1'000'003 - 20'000'000'000;
    e.atime_ns = static_cast<std::int64_t>(in.u16()) << 40;
    e.inode = in.u16();
    for (int n = in.u8() % 3; n > 0; --n) e.xattrs.push_back({"user.x" + std::to_string(n), text(in, 12)});
    std::sort(e.xattrs.begin(), e.xattrs.end(), [](const tr::Xattr& a, const tr::Xattr& b) { return a.name < b.name; });
    switch (e.type) {
        case tr::EntryType::hardlink:
            e.link = {"a", "b" + std::to_string(in.u8())};
            [[fallthrough]];
        case tr::EntryType::file:
            e.size = in.u16() * 4096u;
            e.nlink = 1 + in.u8() % 3;
            if (in.u8() & 1 && e.size > 0) {
                e.sparse = true;
                std::uint64_t at = 0;
                for (int n = in.u8() % 4; n > 0 && at < e.size; --n) {
                    const std::uint64_t off = at + in.u16() % (e.size - at);
                    const std::uint64_t len = 1 + in.u16() % (e.size - off);
                    e.extents.push_back({off, len});
                    at = off + len + 1;
                }
            }
            for (int n = in.u8() % 3; n > 0; --n) {
                tr::BlobId id{};
                id[0] = in.u8();
                id[31] = in.u8();
                e.content.chunks.push_back(id);
            }
            e.content.chunks_are_lists = (in.u8() & 1) != 0;
            if (in.u8() & 1) e.content.digest = text(in, 32);
            break;
        case tr::EntryType::directory: e.subtree[0] = in.u8(); break;
        case tr::EntryType::symlink: e.target = "t" + text(in, 20); break;
        case tr::EntryType::char_device:
        case tr::EntryType::block_device: e.rdev = in.u16(); break;
        default: break;
    }
    std::replace(e.target.begin(), e.target.end(), '\0', '_');
    return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    if ((data[0] & 1) == 0) {
        check_accepted({data + 1, size - 1});
        return 0;
    }
    Bytes in(data + 1, size - 1);
    std::vector<tr::Entry> entries;
    for (std::size_t i = 0, n = in.u8() % 8; i < n; ++i) entries.push_back(entry(in, i));
    std::vector<std::uint8_t> bytes = tr::encode_tree(entries);
    std::sort(entries.begin(), entries.end(), [](const tr::Entry& a, const tr::Entry& b) { return a.name < b.name; });
    if (tr::parse_tree(bytes) != entries) std::abort();
    if (tr::detail::encode_sorted_dom(entries) != bytes) std::abort();
    // Garble: each op a flip, a cut or an insertion at a place the input picks.
    for (int ops = in.u8() % 4; ops > 0 && !bytes.empty(); --ops) {
        const std::size_t at = in.u16() % bytes.size();
        switch (in.u8() % 3) {
            case 0: bytes[at] ^= static_cast<std::uint8_t>(1 + in.u8() % 255); break;
            case 1: bytes.resize(at); break;
            default: bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at), in.u8()); break;
        }
    }
    check_accepted(bytes);
    return 0;
}
