// Text read from files and command lines, made safe and short for messages, and numbers in the
// form messages print them.
#pragma once

#include <cstddef>
#include <string>

namespace pairmd {

// `s` as a message may echo it: control characters, DEL and bytes that are not UTF-8 as \xNN
// (so that garbage cannot move the cursor or change the terminal), cut after `max_bytes` of
// input with "..." and the length.
std::string printable(const std::string& s, size_t max_bytes = 80);

// Drops the carriage return of a line that ended in CR LF (std::getline keeps it).
void drop_cr(std::string& line);

// A number as %g prints it (6 significant digits): 1e+300, not 300 digits; nan, inf.
std::string number_text(double v);

}  // namespace pairmd
