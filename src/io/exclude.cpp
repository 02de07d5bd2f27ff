// SPDX-License-Identifier: Apache-2.0
// gitignore-like patterns; see cdc/exclude.hpp.
//
// Why not fnmatch(3): FNM_PATHNAME has no `**` (any number of directories),
// and glibc's fnmatch follows LC_CTYPE: in a UTF-8 locale (which Python
// sets at start) `?` is one character instead of one byte and an
// unterminated `[` is a literal, so one pattern would select other files in
// the tool and in the binding. gitignore matches bytes. Patterns are
// compiled once; a component is matched by the iterative two-pointer
// method (on a mismatch, only the last `*` takes one more byte: a later `*`
// can absorb whatever an earlier one would have), and a path's components
// by the same method with `**` in the role of `*` and one component in the
// role of one byte. Both are O(pattern x text), never exponential.
#include <cdc/error.hpp>
#include <cdc/exclude.hpp>

#include "open_files.hpp"

#include <fmt/format.h>

#include <array>
#include <bitset>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace cdc {

namespace {

using ByteSet = std::bitset<256>;

struct Token {
    enum class Kind : std::uint8_t { byte, any, star, set };
    Kind kind = Kind::byte;
    std::uint8_t byte = 0;  ///< Kind::byte
    std::uint32_t set = 0;  ///< Kind::set: index into the rule's sets
};

// One component of a pattern: a glob, or `**` (any number of components).
struct Segment {
    bool any_dirs = false;
    bool literal = false;  ///< no wildcard: compare `text`
    std::string text;      ///< the literal bytes when `literal`
    std::vector<Token> tokens;
};

Segment any_dirs_segment() {
    Segment s;
    s.any_dirs = true;
    return s;
}

[[noreturn]] void bad_pattern(std::string_view pattern, std::string_view why) {
    throw OptionError(fmt::format("exclude pattern '{}' is invalid: {}", pattern, why), "exclude");
}

// POSIX classes in their ASCII sense (names are bytes, whatever the locale).
bool add_class(std::string_view name, ByteSet& set) {
    auto add_if = [&](auto pred) {
        for (unsigned c = 0; c < 128; ++c)
            if (pred(c)) set.set(c);
    };
    auto upper = [](unsigned c) { return c >= 'A' && c <= 'Z'; };
    auto lower = [](unsigned c) { return c >= 'a' && c <= 'z'; };
    auto digit = [](unsigned c) { return c >= '0' && c <= '9'; };
    auto alpha = [&](unsigned c) { return upper(c) || lower(c); };
    auto graph = [](unsigned c) { return c >= 33 && c <= 126; };
    if (name == "alnum") add_if([&](unsigned c) { return alpha(c) || digit(c); });
    else if (name == "alpha") add_if(alpha);
    else if (name == "blank") add_if([](unsigned c) { return c == ' ' || c == '\t'; });
    else if (name == "cntrl") add_if([](unsigned c) { return c < 32 || c == 127; });
    else if (name == "digit") add_if(digit);
    else if (name == "graph") add_if(graph);
    else if (name == "lower") add_if(lower);
    else if (name == "print") add_if([](unsigned c) { return c >= 32 && c <= 126; });
    else if (name == "punct") add_if([&](unsigned c) { return graph(c) && !alpha(c) && !digit(c); });
    else if (name == "space") add_if([](unsigned c) { return c == ' ' || (c >= 9 && c <= 13); });
    else if (name == "upper") add_if(upper);
    else if (name == "xdigit")
        add_if([&](unsigned c) { return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); });
    else return false;
    return true;
}

// Parses the set starting at p[at] == '['; returns the index after its ']'.
std::size_t parse_set(std::string_view p, std::size_t at, ByteSet& set, std::string_view whole) {
    std::size_t j = at + 1;
    bool negate = false;
    if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
        negate = true;
        ++j;
    }
    // One member (a byte, possibly escaped) at p[j]; npos at the end.
    auto member = [&](std::size_t& k) -> int {
        if (k >= p.size()) return -1;
        if (p[k] == '\\') {
            if (k + 1 >= p.size()) return -1;
            k += 2;
            return static_cast<unsigned char>(p[k - 1]);
        }
        return static_cast<unsigned char>(p[k++]);
    };
    for (bool first = true;; first = false) {
        if (j >= p.size()) bad_pattern(whole, "unterminated [");
        if (p[j] == ']' && !first) {
            if (negate) set.flip();
            return j + 1;
        }
        if (p[j] == '[' && j + 1 < p.size() && p[j + 1] == ':') {
            const std::size_t end = p.find(":]", j + 2);
            if (end != std::string_view::npos) {
                const std::string_view name = p.substr(j + 2, end - j - 2);
                if (!add_class(name, set)) bad_pattern(whole, fmt::format("unknown character class [:{}:]", name));
                j = end + 2;
                continue;
            }
        }
        const int lo = member(j);
        if (lo < 0) bad_pattern(whole, "unterminated [");
        int hi = lo;
        if (j + 1 < p.size() && p[j] == '-' && p[j + 1] != ']') {
            std::size_t k = j + 1;
            hi = member(k);
            if (hi < 0) bad_pattern(whole, "unterminated [");
            j = k;
        }
        for (int c = lo; c <= hi; ++c) set.set(static_cast<std::size_t>(c));  // (hi < lo: an empty range)
    }
}

Segment compile_segment(std::string_view p, std::vector<ByteSet>& sets, std::string_view whole) {
    Segment s;
    s.literal = true;
    for (std::size_t i = 0; i < p.size();) {
        const char c = p[i];
        Token t;
        if (c == '\\') {
            if (i + 1 >= p.size()) bad_pattern(whole, "it ends with a lone \\");
            t.byte = static_cast<std::uint8_t>(p[i + 1]);
            i += 2;
        } else if (c == '*') {
            s.literal = false;
            ++i;
            if (!s.tokens.empty() && s.tokens.back().kind == Token::Kind::star) continue;  // ** inside a name: *
            t.kind = Token::Kind::star;
        } else if (c == '?') {
            s.literal = false;
            t.kind = Token::Kind::any;
            ++i;
        } else if (c == '[') {
            s.literal = false;
            ByteSet set;
            i = parse_set(p, i, set, whole);
            t.kind = Token::Kind::set;
            t.set = static_cast<std::uint32_t>(sets.size());
            sets.push_back(set);
        } else {
            t.byte = static_cast<std::uint8_t>(c);
            ++i;
        }
        if (t.kind == Token::Kind::byte) s.text.push_back(static_cast<char>(t.byte));
        s.tokens.push_back(t);
    }
    return s;
}

bool match_segment(const Segment& s, const std::vector<ByteSet>& sets, std::string_view name) {
    if (s.literal) return name == s.text;
    const auto& tk = s.tokens;
    const std::size_t T = tk.size();
    std::size_t t = 0, n = 0;
    std::size_t star_t = std::string_view::npos, star_n = 0;
    while (n < name.size()) {
        if (t < T) {
            const Token& k = tk[t];
            const auto b = static_cast<unsigned char>(name[n]);
            if (k.kind == Token::Kind::star) {
                star_t = t++;
                star_n = n;
                continue;
            }
            const bool one = k.kind == Token::Kind::any || (k.kind == Token::Kind::byte && k.byte == b) ||
                             (k.kind == Token::Kind::set && sets[k.set].test(b));
            if (one) {
                ++t;
                ++n;
                continue;
            }
        }
        if (star_t == std::string_view::npos) return false;
        t = star_t + 1;  // the last * takes one byte more
        n = ++star_n;
    }
    while (t < T && tk[t].kind == Token::Kind::star) ++t;
    return t == T;
}

}  // namespace

struct ExcludePatterns::Rule {
    std::string text;  ///< as given (for messages)
    bool negated = false;
    bool dir_only = false;
    bool anchored = false;
    std::vector<Segment> segments;
    std::vector<ByteSet> sets;

    // The components of a path: `**` in the role of `*`, one segment
    // matching one component in the role of one byte (see the top).
    bool match_components(const std::vector<std::string_view>& comps) const {
        const std::size_t S = segments.size();
        std::size_t s = 0, c = 0;
        std::size_t star_s = std::string_view::npos, star_c = 0;
        while (c < comps.size()) {
            if (s < S) {
                if (segments[s].any_dirs) {
                    star_s = s++;
                    star_c = c;
                    continue;
                }
                if (match_segment(segments[s], sets, comps[c])) {
                    ++s;
                    ++c;
                    continue;
                }
            }
            if (star_s == std::string_view::npos) return false;
            s = star_s + 1;
            c = ++star_c;
        }
        while (s < S && segments[s].any_dirs) ++s;
        return s == S;
    }
};

bool glob_match(std::string_view pattern, std::string_view name) {
    std::vector<ByteSet> sets;
    return match_segment(compile_segment(pattern, sets, pattern), sets, name);
}

ExcludePatterns::ExcludePatterns() = default;
ExcludePatterns::ExcludePatterns(const ExcludePatterns&) = default;
ExcludePatterns::ExcludePatterns(ExcludePatterns&&) noexcept = default;
ExcludePatterns& ExcludePatterns::operator=(const ExcludePatterns&) = default;
ExcludePatterns& ExcludePatterns::operator=(ExcludePatterns&&) noexcept = default;
ExcludePatterns::~ExcludePatterns() = default;

bool ExcludePatterns::empty() const noexcept { return rules_.empty(); }
std::size_t ExcludePatterns::size() const noexcept { return rules_.size(); }

void ExcludePatterns::add(std::string_view pattern) {
    Rule r;
    r.text = pattern;
    std::string_view p = pattern;
    if (p.empty()) bad_pattern(pattern, "it is empty");
    if (p.front() == '!') {
        r.negated = true;
        p.remove_prefix(1);
    }
    while (!p.empty() && p.back() == '/' && !(p.size() >= 2 && p[p.size() - 2] == '\\')) {
        r.dir_only = true;
        p.remove_suffix(1);
    }
    if (!p.empty() && p.front() == '/') r.anchored = true;
    std::vector<std::string_view> parts;
    for (std::size_t at = 0; at <= p.size();) {
        std::size_t slash = p.find('/', at);
        if (slash == std::string_view::npos) slash = p.size();
        if (slash > at) parts.push_back(p.substr(at, slash - at));
        at = slash + 1;
    }
    if (parts.empty()) bad_pattern(pattern, "it names no file (only '!' or slashes)");
    if (parts.size() > 1) r.anchored = true;
    for (const auto part : parts) {
        if (part == "." || part == "..")
            bad_pattern(pattern, "paths have no . or .. component (a leading / anchors a pattern to the root)");
        if (r.anchored && part == "**") {
            if (r.segments.empty() || !r.segments.back().any_dirs) r.segments.push_back(any_dirs_segment());
            continue;
        }
        r.segments.push_back(compile_segment(part, r.sets, pattern));
    }
    // A trailing `**` is everything inside, not the directory itself: one
    // component or more (`*` then `**`).
    if (r.segments.back().any_dirs) {
        r.segments.back() = compile_segment("*", r.sets, pattern);
        r.segments.push_back(any_dirs_segment());
    }
    any_anchored_ = any_anchored_ || r.anchored;
    rules_.push_back(std::move(r));
}

void ExcludePatterns::add_file(const std::string& path) {
    const int fd = detail::open_regular_file(AT_FDCWD, path.c_str(), O_RDONLY, 0, true);
    if (fd < 0)
        throw IoError(fmt::format("cannot read exclude file '{}': {}", path,
                                  errno == detail::kNotRegularFile ? "not a regular file" : std::strerror(errno)));
    std::string text;
    std::array<char, 65536> buf{};
    for (;;) {
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int e = errno;
            ::close(fd);
            throw IoError(fmt::format("cannot read exclude file '{}': {}", path, std::strerror(e)));
        }
        if (n == 0) break;
        text.append(buf.data(), static_cast<std::size_t>(n));
    }
    ::close(fd);
    std::size_t line_no = 0;
    for (std::size_t at = 0; at < text.size();) {
        std::size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        std::string_view line(text.data() + at, end - at);
        at = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        while (!line.empty() && line.back() == ' ' && !(line.size() >= 2 && line[line.size() - 2] == '\\'))
            line.remove_suffix(1);
        if (line.empty() || line.front() == '#') continue;
        try {
            add(line);
        } catch (const OptionError& e) {
            throw OptionError(fmt::format("{}:{}: {}", path, line_no, e.what()), "exclude_file");
        }
    }
}

bool ExcludePatterns::excluded(std::string_view path, bool is_dir) const {
    if (rules_.empty()) return false;
    const std::size_t slash = path.rfind('/');
    const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    std::vector<std::string_view> comps;
    if (any_anchored_)
        for (std::size_t at = 0; at <= path.size();) {
            std::size_t s = path.find('/', at);
            if (s == std::string_view::npos) s = path.size();
            comps.push_back(path.substr(at, s - at));
            at = s + 1;
        }
    for (auto it = rules_.rbegin(); it != rules_.rend(); ++it) {
        const Rule& r = *it;
        if (r.dir_only && !is_dir) continue;
        const bool match = r.anchored ? r.match_components(comps) : match_segment(r.segments[0], r.sets, name);
        if (match) return !r.negated;
    }
    return false;
}

bool ExcludePatterns::root_excluded(std::string_view name, bool is_dir) const {
    for (auto it = rules_.rbegin(); it != rules_.rend(); ++it) {
        const Rule& r = *it;
        if (r.anchored || (r.dir_only && !is_dir)) continue;
        if (match_segment(r.segments[0], r.sets, name)) return !r.negated;
    }
    return false;
}

}  // namespace cdc
