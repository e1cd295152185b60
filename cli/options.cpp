#include "cli/options.h"

#include <iostream>

namespace pairmd::cli {

CLI::Validator number_check(const NumberRule& rule) {
  return CLI::Validator(
      [rule](std::string& text) {
        double v = 0;
        return rule.parse(text, v);
      },
      rule.expected(), "NUMBER_RULE");
}

CLI::Validator choice_check(std::function<std::vector<std::string>()> names) {
  std::string all;
  for (const std::string& n : names()) all += (all.empty() ? "" : ",") + n;
  return CLI::Validator([names](std::string& text) { return check_choice(text, names()); }, "{" + all + "}", "CHOICE");
}

CLI::Validator not_empty(const std::string& what) {
  return CLI::Validator([what](std::string& text) { return text.empty() ? "needs " + what : std::string(); }, "",
                        "NOT_EMPTY");
}

CLI::App* add_command(CLI::App& app, const std::string& name, const std::string& summary, const std::string& details) {
  CLI::App* sub = app.add_subcommand(name, summary);
  sub->footer(details);
  return sub;
}

int usage_error(const CLI::App& command, const std::string& message) {
  const std::string name = "pairmd " + command.get_name();
  std::cerr << name << ": " << message << "\n"
            << CLI::Formatter().make_usage(&command, name) << "(" << name << " --help lists its options)\n";
  return kExitUsage;
}

}  // namespace pairmd::cli
