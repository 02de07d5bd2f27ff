#include <cdc/corpus/datagen.hpp>

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <array>
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
    SplitMix64 rng(seed);
    std::size_t i = 0;
    for (std::uint64_t k = 1; i < out.size(); ++k) {
        const std::string_view word = kWords[rng.next() % 64];
        for (std::size_t c = 0; c < word.size() && i < out.size(); ++c) out[i++] = static_cast<std::uint8_t>(word[c]);
        if (i < out.size()) out[i++] = (k % 12 == 0) ? '\n' : ' ';
    }
}

std::vector<std::uint8_t> generate_input(std::string_view spec) {
    if (spec == "empty") return {};
    if (spec == "byte42") return {0x42};
    const auto colon = spec.find(':');
    if (colon == std::string_view::npos)
        throw OptionError(fmt::format("input spec '{}' is invalid: expected empty, byte42, zeros:LEN, "
                                      "repeat:WORD:LEN, splitmix64:SEED:LEN or text:SEED:LEN",
                                      spec));
    const std::string_view kind = spec.substr(0, colon);
    const std::string_view rest = spec.substr(colon + 1);
    if (kind == "zeros") return std::vector<std::uint8_t>(parse_number(rest, spec), 0);
    const auto colon2 = rest.rfind(':');
    if (colon2 == std::string_view::npos)
        throw OptionError(fmt::format("input spec '{}' is invalid: expected {}:X:LEN", spec, kind));
    const std::string_view arg = rest.substr(0, colon2);
    const std::uint64_t len = parse_number(rest.substr(colon2 + 1), spec);
    std::vector<std::uint8_t> out(len);
    if (kind == "repeat") {
        if (arg.empty()) throw OptionError(fmt::format("input spec '{}' is invalid: empty word", spec));
        for (std::size_t i = 0; i < len; ++i) out[i] = static_cast<std::uint8_t>(arg[i % arg.size()]);
    } else if (kind == "splitmix64") {
        fill_splitmix64(out, parse_number(arg, spec));
    } else if (kind == "text") {
        fill_text(out, parse_number(arg, spec));
    } else {
        throw OptionError(fmt::format("input spec '{}' is invalid: unknown kind '{}'", spec, kind));
    }
    return out;
}

}  // namespace cdc
