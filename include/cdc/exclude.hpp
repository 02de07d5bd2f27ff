// SPDX-License-Identifier: Apache-2.0
// cdc/exclude.hpp — what a walk leaves out (cdc/walk.hpp: WalkOptions::
// exclude): gitignore-like patterns, cache directories, directories marked
// by a file. Excluded entries are neither errors nor skips: a walk tells the
// visitor (WalkVisitor::excluded) and never enters an excluded directory.
//
//   cdc::WalkExcludes ex;
//   ex.patterns.add("*.o");          // any file or directory named *.o, at any depth
//   ex.patterns.add("/build/");      // the directory build at the top of each root
//   ex.patterns.add("!keep.o");      // ... but not keep.o
//   ex.caches = true;                // directories tagged with CACHEDIR.TAG
//   ex.if_present = {".nobackup"};   // directories holding an entry .nobackup
//
// The patterns are gitignore's (gitignore(5)), matched as bytes whatever the
// locale:
// - `*` matches any run of bytes but `/`, `?` one byte but `/`, `[...]` one
//   byte of a set (`[a-z]`, `[!a-z]` or `[^a-z]` for the complement,
//   `[[:alpha:]]` and the other POSIX classes in their ASCII sense; `]`
//   first in the set is a member), `\` makes the next byte literal.
// - A pattern with a `/` at its start or in its middle is anchored: it is
//   matched against the path relative to the walked root (a leading `/`
//   says so without adding one: `/a` is the entry a at the top, `a/b`
//   only a/b at the top). A pattern without one matches an entry's name at
//   any depth (`*.o`, `tmp/`).
// - A trailing `/` makes the pattern match directories only (with followed
//   links: what they lead to).
// - `**` as a whole component: `**/x` is x at any depth, `a/**/b` is b
//   under a at any depth (a/b included), `a/**` everything inside a (not a
//   itself); `**` inside a component (`a**b`) is a `*`.
// - `!` first negates: an entry a negated pattern matches is kept even if an
//   earlier pattern excluded it (the last pattern that matches decides).
//   As in git, an entry inside an excluded directory cannot be re-included:
//   the walk never enters that directory. `\!` and `\#` start a pattern with
//   a literal `!` or `#`.
// Roots (the paths a walk is given) have no path relative to themselves:
// they are matched by their name (the last component of the path as given;
// "." and "/" have none) against the patterns that are not anchored. So
// `--exclude '*.o' *` leaves out the .o files the shell named too.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cdc {

/// Whether `name` (one path component, no `/`) matches `pattern` (one
/// component of the syntax above: `*`, `?`, `[...]`, `\`). Throws
/// OptionError (field "exclude") for a pattern with an unterminated `[` or
/// a trailing `\`. Time O(pattern x name), never exponential.
bool glob_match(std::string_view pattern, std::string_view name);

/// An ordered list of gitignore-like patterns (see above).
class ExcludePatterns {
public:
    ExcludePatterns();
    ExcludePatterns(const ExcludePatterns&);
    ExcludePatterns(ExcludePatterns&&) noexcept;
    ExcludePatterns& operator=(const ExcludePatterns&);
    ExcludePatterns& operator=(ExcludePatterns&&) noexcept;
    ~ExcludePatterns();

    /// Adds one pattern, taken as it is (no comment, no trimming). Throws
    /// OptionError (field "exclude") naming it if it is empty, is only `!`
    /// or slashes, has an unterminated `[` or ends with a lone `\`.
    void add(std::string_view pattern);

    /// Adds the patterns of a file, one a line, in order: blank lines and
    /// lines starting with `#` are ignored, a line's trailing spaces are
    /// dropped unless escaped with `\` (gitignore's rule), and so is a final
    /// carriage return (a file written on Windows). Throws IoError naming
    /// the file if it cannot be read, OptionError (field "exclude_file")
    /// naming the file and line of a bad pattern.
    void add_file(const std::string& path);

    bool empty() const noexcept;
    std::size_t size() const noexcept;

    /// Whether the entry at `path` is excluded: the last pattern that
    /// matches it decides (excluded unless that pattern is negated); none:
    /// kept. `path` is relative to the walked root, components separated by
    /// single `/` (no leading `/`, no `.` or `..` component); `is_dir` says
    /// whether it is a directory (patterns ending in `/` match only those).
    bool excluded(std::string_view path, bool is_dir) const;

    /// The same for a root, by its name (one component) against the
    /// patterns that are not anchored only.
    bool root_excluded(std::string_view name, bool is_dir) const;

private:
    struct Rule;
    std::vector<Rule> rules_;
    bool any_anchored_ = false;
};

/// The exclusion rules of a walk.
struct WalkExcludes {
    ExcludePatterns patterns;
    /// Leave out directories tagged as caches: holding a regular file
    /// CACHEDIR.TAG (not a link) that starts with the signature of the
    /// Cache Directory Tagging Specification ("Signature: 8a477f597d28d17
    /// 2789f06886806bc55"). The whole directory is left out, the tag file
    /// with it (as borg does by default; restic keeps the tag file).
    bool caches = false;
    /// Leave out directories holding an entry of one of these names (of any
    /// type, a dangling link too). Each is one component: WalkOptions
    /// refuses an empty name, ".", ".." or one with a "/" (OptionError,
    /// field "exclude_if_present").
    std::vector<std::string> if_present;

    bool empty() const noexcept { return patterns.empty() && !caches && if_present.empty(); }
};

/// The first bytes of a CACHEDIR.TAG file (the Cache Directory Tagging
/// Specification, https://bford.info/cachedir/).
inline constexpr std::string_view kCacheDirTagSignature = "Signature: 8a477f597d28d172789f06886806bc55";

}  // namespace cdc
