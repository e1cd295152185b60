#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <string>

#include "cli/commands.h"

namespace pairmd::cli {

double option_number(const std::string& opt, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty()) throw std::invalid_argument(opt + ": expected a number, got '" + text + "'");
  return v;
}

void prepare_app(CLI::App& app) {
  // Unknown options and surplus words are the command's to report (parse_command_line).
  app.allow_extras(true);
  app.get_formatter()->column_width(34);
}

int parse_command_line(CLI::App& app, const Args& args, const CommandLineErrors& errors) {
  // "--name=" gives option `name` the empty value (CLI11 would read it as a missing value).
  std::vector<std::string> words;
  for (const std::string& a : args) {
    if (a.size() > 3 && a.rfind("--", 0) == 0 && a.back() == '=' && a.find('=') == a.size() - 1) {
      words.push_back(a.substr(0, a.size() - 1));
      words.push_back("");
    } else {
      words.push_back(a);
    }
  }
  std::reverse(words.begin(), words.end());  // CLI11 takes the words last first
  try {
    app.parse(words);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::ArgumentMismatch& e) {
    // An option without its value: CLI11 says "--name: 1 required TEXT missing".
    const std::string what = e.what();
    std::cerr << "pairmd " << errors.command << ": " << what.substr(0, what.find(':')) << " needs a value\n"
              << errors.usage_no_value;
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    std::cerr << "pairmd " << errors.command << ": " << e.what() << "\n";
    return kExitUsage;
  }
  const std::vector<std::string> extra = app.remaining();
  if (!extra.empty()) {
    std::cerr << "pairmd " << errors.command << ": unexpected argument '" << extra.front() << "'\n"
              << errors.usage_unexpected;
    return kExitUsage;
  }
  return kParsed;
}

std::string choices(const std::vector<std::string>& names, const char* last) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + names[i];
  return s;
}

}  // namespace pairmd::cli
