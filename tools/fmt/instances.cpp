// SPDX-License-Identifier: Apache-2.0
// {fmt}'s compiled part, built once (the object library `cdc_fmt_objects` of
// the top-level CMakeLists.txt): an object of libcdc.a, whose users need no
// fmt, and the `cdc_fmt` archive the rest links. In header-only mode every
// translation unit that formats instantiated fmt's whole formatting core
// again (a test file took 17.0 s to compile, 12.2 s without it). Debian's
// libfmt-dev ships fmt as headers plus a shared library only, and the cdc
// tool is static, so the out-of-line definitions come from here:
// format-inl.h without FMT_HEADER_ONLY defines fmt's non-template
// functions, and the templates that format.h declares but does not define
// are instantiated below: for char (the only character type the project
// formats), and the wchar_t twins that format.h declares `extern template`
// too.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template locale_ref::locale_ref(const std::locale& loc);
template auto locale_ref::get<std::locale>() const -> std::locale;
template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl<char>(locale_ref) -> char;
template auto thousands_sep_impl<wchar_t>(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl<wchar_t>(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE
