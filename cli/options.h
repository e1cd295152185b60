// How the pairmd program reads its command line: one CLI11 app with a subcommand per command
// (cli/main.cpp), every option typed and checked by a CLI11 validator made from its rule
// (session/options.h, the rules the Python module checks its arguments with), and the words the
// program prints on a bad command line.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "session/options.h"

namespace pairmd::cli {

// Exit codes shared by all commands.
enum ExitCode {
  kExitOk = 0,
  kExitFailure = 1,  // the run failed (blow-up, I/O error during the run)
  kExitUsage = 2,    // bad command line or config; nothing was written
  kExitInterrupted = 130,
};

// What a step of a command returns when the command goes on (else the exit code).
constexpr int kGoOn = -1;

// The words of the command line after the command's name (for the log's record of the command).
using Args = std::vector<std::string>;

// A validator that accepts what `rule` accepts; its message is the rule's ("expected a number >
// 0, got 'x'"), which CLI11 prefixes with the option's name.
CLI::Validator number_check(const NumberRule& rule);
// A validator that accepts one of `names()`.
CLI::Validator choice_check(std::function<std::vector<std::string>()> names);
// A validator that refuses an empty value: "needs WHAT".
CLI::Validator not_empty(const std::string& what);

template <typename T>
struct IsNumber : std::is_arithmetic<T> {};
template <typename T>
struct IsNumber<std::optional<T>> : std::is_arithmetic<T> {};

// The option of `spec` on `app`, bound to `value` (a number, or text) and checked by spec's
// rule: its number rule for a number, its choices for text. The last one given counts.
template <typename T>
CLI::Option* add_option(CLI::App& app, const OptionSpec& spec, T& value) {
  CLI::Option* o = app.add_option(spec.cli, value, spec.help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  if constexpr (IsNumber<T>::value)
    o->check(number_check(spec.number));
  else if (spec.choices)
    o->check(choice_check(spec.choices));
  return o;
}

// A comma-separated list of values (--sizes 1000,8000), each checked as `add_option` checks one.
template <typename T>
CLI::Option* add_list_option(CLI::App& app, const OptionSpec& spec, std::vector<T>& values) {
  CLI::Option* o = app.add_option(spec.cli, values, spec.help)->delimiter(',');
  if constexpr (std::is_arithmetic_v<T>)
    o->check(number_check(spec.number));
  else if (spec.choices)
    o->check(choice_check(spec.choices));
  return o;
}

// The subcommand NAME of `app`: `summary` is its line in `pairmd --help`, `details` the end of
// its own --help (what it does beyond each option's line, its exit codes).
CLI::App* add_command(CLI::App& app, const std::string& name, const std::string& summary, const std::string& details);

// A bad command line of `command`: "pairmd COMMAND: MESSAGE", its usage line and where its
// options are listed, on stderr. Returns kExitUsage.
int usage_error(const CLI::App& command, const std::string& message);

}  // namespace pairmd::cli
