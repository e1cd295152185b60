#include "base/text.h"

#include <cstdio>

namespace pairmd {

namespace {

// Length of the UTF-8 sequence at s[i] (2 to 4), or 0 when the bytes there are not one.
size_t utf8_length(const std::string& s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  return n;
}

}  // namespace

std::string printable(const std::string& s, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  for (; i < s.size() && i < max_bytes;) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    const size_t n = c >= 0x80 ? utf8_length(s, i) : 0;
    if (n > 0) {
      out.append(s, i, n);
      i += n;
      continue;
    }
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += hex;
    ++i;
  }
  if (i < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

void drop_cr(std::string& line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace pairmd
