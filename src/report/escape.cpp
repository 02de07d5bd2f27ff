// SPDX-License-Identifier: Apache-2.0
#include "escape.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <stdexcept>

namespace cdc::tools {

namespace {

// Length of the well-formed UTF-8 sequence at s[i], or 0 (Unicode 15,
// table 3-7: the allowed second bytes exclude overlong forms, surrogates
// and code points past U+10FFFF).
std::size_t utf8_length(std::string_view s, std::size_t i) noexcept {
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b = at(i);
    if (b < 0x80) return 1;
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) n = 2;
    else if (b == 0xE0) n = 3, lo = 0xA0;
    else if (b == 0xED) n = 3, hi = 0x9F;
    else if (b >= 0xE1 && b <= 0xEF) n = 3;
    else if (b == 0xF0) n = 4, lo = 0x90;
    else if (b == 0xF4) n = 4, hi = 0x8F;
    else if (b >= 0xF1 && b <= 0xF3) n = 4;
    else return 0;
    if (i + n > s.size()) return 0;
    if (at(i + 1) < lo || at(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
    return n;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

bool is_valid_utf8(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = utf8_length(s, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

std::string to_valid_utf8(std::string_view s) {
    if (is_valid_utf8(s)) return std::string(s);
    std::string out;
    out.reserve(s.size() + 8);
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = utf8_length(s, i);
        if (n == 0) {
            out.append(kReplacement);
            ++i;
        } else {
            out.append(s.substr(i, n));
            i += n;
        }
    }
    return out;
}

std::string escape_text(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t n = utf8_length(s, i);
        const auto b = static_cast<unsigned char>(s[i]);
        // C1 controls (U+0080..U+009F) are 0xC2 0x80..0x9F in UTF-8.
        const bool c1 = n == 2 && b == 0xC2 && static_cast<unsigned char>(s[i + 1]) <= 0x9F;
        if (n == 0 || c1 || b < 0x20 || b == 0x7F) {
            for (std::size_t k = 0; k < (c1 ? 2 : 1); ++k)
                out.append(fmt::format("\\x{:02X}", static_cast<unsigned char>(s[i + k])));
            i += c1 ? 2 : 1;
        } else if (b == '\\') {
            out.append("\\\\");
            ++i;
        } else {
            out.append(s.substr(i, n));
            i += n;
        }
    }
    return out;
}

std::string base64(std::string_view s) {
    std::string out(4 * ((s.size() + 2) / 3) + 1, '\0');
    const int n = ::EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                    reinterpret_cast<const unsigned char*>(s.data()), static_cast<int>(s.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

std::string base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) throw std::invalid_argument("base64: length not a multiple of 4");
    std::string out(3 * (text.size() / 4) + 1, '\0');
    const int n = ::EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                    reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
    if (n < 0) throw std::invalid_argument("base64: not base64");
    out.resize(static_cast<std::size_t>(n));
    // EVP_DecodeBlock keeps the padding's zero bytes.
    for (std::size_t pad = text.size(); pad > 0 && text[pad - 1] == '='; --pad) out.pop_back();
    return out;
}

std::string csv_field(std::string_view s) {
    const bool quote = s.find_first_of(",\"\n\r") != std::string_view::npos || s.starts_with(' ') || s.ends_with(' ');
    if (!quote) return std::string(s);
    std::string q = "\"";
    for (const char c : s) {
        if (c == '"') q.push_back('"');
        q.push_back(c);
    }
    q.push_back('"');
    return q;
}

}  // namespace cdc::tools
