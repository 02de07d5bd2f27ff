// SPDX-License-Identifier: Apache-2.0
#include <cdc/corpus/datagen.hpp>

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <array>
#include <algorithm>
#include <charconv>
#include <string>

namespace cdc {

namespace {
constexpr std::array<std::string_view, 64> kWords = {
    "the",   "of",    "and",   "to",    "in",    "is",    "that",  "for",   "it",    "as",     "was",
    "with",  "be",    "by",    "on",    "not",   "he",    "this",  "are",   "or",    "his",    "from",
    "at",    "which", "but",   "have",  "an",    "had",   "they",  "you",   "were",  "their",  "one",
    "all",   "we",    "can",   "her",   "has",   "there", "been",  "if",    "more",  "when",   "will",
    "would", "who",   "so",    "no",    "data",  "chunk", "backup", "plakar", "store", "index", "block",
    "hash",  "file",  "stream", "cut",  "point", "gear",  "table", "window", "boundary"};

std::uint64_t parse_number(std::string_view text, std::string_view spec) {
    std::uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty())
        throw OptionError(fmt::format("input spec '{}' is invalid: '{}' is not a number", spec, text));
    return v;
}
}  // namespace

void fill_splitmix64(std::span<std::uint8_t> out, std::uint64_t seed) {
    SplitMix64(seed).fill(out);
}

void fill_text(std::span<std::uint8_t> out, std::uint64_t seed) {
    InputGenerator g(InputGenerator::Kind::text, seed, out.size());
    g.read(out);
}

InputGenerator::InputGenerator(Kind kind, std::uint64_t seed, std::uint64_t length, std::string word)
    : kind_(kind), left_(length), repeat_(std::move(word)), rng_(seed) {}

InputGenerator::InputGenerator(std::string_view spec) : rng_(0) {
    kind_ = Kind::zeros;
    if (spec == "empty") return;
    if (spec == "byte42") {
        kind_ = Kind::repeat;
        repeat_.assign(1, '\x42');
        left_ = 1;
        return;
    }
    const auto colon = spec.find(':');
    if (colon == std::string_view::npos)
        throw OptionError(fmt::format("input spec '{}' is invalid: expected empty, byte42, zeros:LEN, "
                                      "repeat:WORD:LEN, splitmix64:SEED:LEN or text:SEED:LEN",
                                      spec));
    const std::string_view kind = spec.substr(0, colon);
    const std::string_view rest = spec.substr(colon + 1);
    if (kind == "zeros") {
        left_ = parse_number(rest, spec);
        return;
    }
    const auto colon2 = rest.rfind(':');
    if (colon2 == std::string_view::npos)
        throw OptionError(fmt::format("input spec '{}' is invalid: expected {}:X:LEN", spec, kind));
    const std::string_view arg = rest.substr(0, colon2);
    left_ = parse_number(rest.substr(colon2 + 1), spec);
    if (kind == "repeat") {
        if (arg.empty()) throw OptionError(fmt::format("input spec '{}' is invalid: empty word", spec));
        kind_ = Kind::repeat;
        repeat_.assign(arg);
    } else if (kind == "splitmix64") {
        kind_ = Kind::splitmix64;
        rng_ = SplitMix64(parse_number(arg, spec));
    } else if (kind == "text") {
        kind_ = Kind::text;
        rng_ = SplitMix64(parse_number(arg, spec));
    } else {
        throw OptionError(fmt::format("input spec '{}' is invalid: unknown kind '{}'", spec, kind));
    }
}

std::size_t InputGenerator::read(std::span<std::uint8_t> out) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(out.size(), left_));
    std::size_t i = 0;
    switch (kind_) {
        case Kind::zeros: std::fill_n(out.begin(), n, std::uint8_t{0}); i = n; break;
        case Kind::repeat:
            for (; i < n; ++i, pos_ = (pos_ + 1) % repeat_.size()) out[i] = static_cast<std::uint8_t>(repeat_[pos_]);
            break;
        case Kind::splitmix64:
            // Each output as 8 little-endian bytes, whatever the block sizes.
            while (i < n) {
                if (pending_bytes_ == 0) {
                    pending_ = rng_.next();
                    pending_bytes_ = 8;
                }
                out[i++] = static_cast<std::uint8_t>(pending_);
                pending_ >>= 8;
                --pending_bytes_;
            }
            break;
        case Kind::text:
            // Words from the list, a newline after every 12th word, else a space.
            while (i < n) {
                if (pos_ == word_.size()) {
                    if (separator_) {
                        out[i++] = (words_ % 12 == 0) ? '\n' : ' ';
                        separator_ = false;
                        continue;
                    }
                    word_ = kWords[rng_.next() % 64];
                    pos_ = 0;
                    ++words_;
                    separator_ = true;
                    continue;
                }
                out[i++] = static_cast<std::uint8_t>(word_[pos_++]);
            }
            break;
    }
    left_ -= n;
    return n;
}

std::vector<std::uint8_t> generate_input(std::string_view spec) {
    InputGenerator g(spec);
    std::vector<std::uint8_t> out(static_cast<std::size_t>(g.left()));
    g.read(out);
    return out;
}

}  // namespace cdc
