// The subcommands of the `pairmd` program, one file each. Each returns the process exit code.
// Their options are parsed by CLI11 (parse_command_line); every one has --help.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace pairmd::cli {

// Exit codes shared by all commands.
enum ExitCode {
  kExitOk = 0,
  kExitFailure = 1,  // the run failed (blow-up, I/O error during the run)
  kExitUsage = 2,    // bad command line or config; nothing was written
  kExitInterrupted = 130,
};

using Args = std::vector<std::string>;

int cmd_run(const Args& args);
int cmd_check(const Args& args);
int cmd_minimize(const Args& args);
int cmd_compare(const Args& args);
int cmd_potential_map(const Args& args);
int cmd_place_ions(const Args& args);
int cmd_demux(const Args& args);
int cmd_sop_build(const Args& args);

// What parse_command_line returns when the command goes on.
constexpr int kParsed = -1;

// How a command reports a bad command line: "pairmd COMMAND: unexpected argument 'X'" and
// "pairmd COMMAND: --name needs a value", each followed by its usage text where it has one.
struct CommandLineErrors {
  std::string command;           // "run", "place-ions", ...
  std::string usage_unexpected;  // printed after an unexpected argument
  std::string usage_no_value;    // printed after an option without its value
};

// Sets up the CLI11 app of one subcommand (made as CLI::App{description, "pairmd run"}): unknown
// words are kept as extras, so that the command reports them in its own words. Commands register
// their options as text and check the values themselves, so that their messages stay their own.
void prepare_app(CLI::App& app);

// Parses `args` (the words after the subcommand) with `app`. Returns kParsed, or the exit code:
// kExitOk after --help (printed on stdout), kExitUsage after a bad command line (printed on
// stderr as `errors` says).
int parse_command_line(CLI::App& app, const Args& args, const CommandLineErrors& errors);

// The value of option `opt` as a number: the whole text must be one, else std::invalid_argument
// with "OPT: expected a number, got 'TEXT'".
double option_number(const std::string& opt, const std::string& text);

// "a, b or c" of registry names, for help texts.
std::string choices(const std::vector<std::string>& names, const char* last = " or ");

}  // namespace pairmd::cli
