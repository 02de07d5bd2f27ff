// SPDX-License-Identifier: Apache-2.0
// A tree object: the entries of one directory as bytes (docs/STORE-V2.md,
// "Trees"), the unit a snapshot stores per directory. A directory's entry
// holds its subtree's id, so an unchanged directory is the same bytes, the
// same id and is stored once.
//
// The bytes are CBOR (RFC 8949), written and read by nlohmann::json's
// to_cbor / from_cbor, which the project already depends on. Why CBOR and
// not a format of our own: it is a published, self-describing encoding with
// byte strings (names, symlink targets and xattrs are bytes, not text),
// integers of any width and maps whose keys name the fields, so a field can
// be added without a new parser, and a damaged tree can be inspected with any
// CBOR tool. Why nlohmann: it is already a dependency (Debian's
// nlohmann-json3-dev, header-only, used privately), well kept, and its SAX
// interface lets the reader bound the nesting before anything is built.
// The usual tree is read without it (detail::parse_plain: straight into
// entries, then compared with the bytes written again directly), a tenth
// of the DOM's time; anything else goes to nlohmann's reader, which names
// the fault.
//
// The layout, version 1 (every key a one-letter text string):
//   {"e": [entry...], "v": 1}
//   entry: {"n": name (bytes), "t": type (0..7, EntryType), and where not
//     zero or empty: "m" mode, "u" uid, "g" gid, "U" user, "G" group (bytes),
//     "M" mtime, "A" atime, "C" ctime (ns, signed), "i" inode, "d" device,
//     "s" size, "N" link count, "r" rdev, "l" symlink target (bytes), "k" hard link path
//     (array of bytes), "x" xattrs (array of [name, value] byte strings),
//     "D" content digest (bytes), "c" chunk ids (array of 32-byte strings),
//     "L" true when "c" lists chunk-list blobs; "h" data extents of a sparse
//     file (flat array offset, length, ...; present exactly when sparse);
//     "T" subtree id (32 bytes; on every directory, on nothing else)}
// Deterministic: entries sorted by name (bytewise, unique), map keys in
// order, every integer in its shortest form, defaults left out. The reader
// accepts exactly the bytes the writer would write for what it read (it
// writes them again and compares): one tree has one encoding and one id.
//
// What the reader rejects (TreeError, naming the entry and the field):
// anything but that layout (unknown or missing keys, wrong types, a version
// other than 1, nesting deeper than the layout, tags, floats, trailing bytes,
// a truncated item), an entry inconsistent with its type (entry_problem),
// unsorted or repeated names. Names themselves are not judged here: a name
// with '/', "..", NUL or nothing is read, and refused where it would be
// used (the restore names that one entry as damaged and restores the rest
// of its directory).
#pragma once

#include "tree.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace cdc::store::tree {

/// The tree object format written.
inline constexpr std::uint64_t kTreeFormat = 1;

/// A tree object that is not one (reading), or entries that cannot make one
/// (writing).
class TreeError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The tree object of a directory's entries (in any order: they are
/// sorted). TreeError for a bad name (name_problem), an inconsistent entry
/// (entry_problem) or a name twice.
std::vector<std::uint8_t> encode_tree(std::vector<Entry> entries);

/// The entries of a tree object, sorted by name. TreeError for anything but
/// the bytes encode_tree writes (see above).
std::vector<Entry> parse_tree(std::span<const std::uint8_t> bytes);

/// A tree object's id: BLAKE3-256 of its bytes.
BlobId tree_id(std::span<const std::uint8_t> bytes);

namespace detail {
/// The bytes encode_tree writes (for entries sorted and checked already),
/// written directly (tree_object_direct.cpp) rather than through nlohmann's
/// DOM; the tests hold the two to the same bytes.
std::vector<std::uint8_t> encode_sorted_direct(const std::vector<Entry>& entries);
/// The same bytes through nlohmann's DOM (to_cbor), which defines the
/// layout: what encode_sorted_direct is held to, and what the reader's
/// fallback compares with.
std::vector<std::uint8_t> encode_sorted_dom(const std::vector<Entry>& entries);
/// parse_tree's fast path: the entries of a tree object in exactly the
/// bytes encode_sorted_direct writes for them, each entry consistent
/// (entry_problem) and the names sorted and unique; nullopt for anything
/// else, which parse_tree hands to nlohmann's reader to name the fault.
std::optional<std::vector<Entry>> parse_plain(std::span<const std::uint8_t> bytes);
}  // namespace detail

}  // namespace cdc::store::tree
