// kselect: the command-line front door. Subcommands are rows of the table in command.cpp.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "kselect/version.h"

namespace {

// CLI11 answers a misspelt subcommand with "A subcommand is required": name the word it did not
// know and list the subcommands of the deepest command given. "" when that is not the error.
std::string UnknownSubcommandMessage(CLI::App& app) {
  CLI::App* deepest = &app;
  std::string path = "kselect";
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (CLI::App* sub : deepest->get_subcommands()) {
      if (sub->parsed()) {
        deepest = sub;
        path += " " + sub->get_name();
        deeper = true;
        break;
      }
    }
  }
  const std::vector<CLI::App*> choices = deepest->get_subcommands({});
  const std::vector<std::string> remaining = deepest->remaining();
  if (choices.empty() || remaining.empty() || remaining.front().rfind("-", 0) == 0) return "";
  std::string message = path + ": unknown subcommand '" + remaining.front() + "' (subcommands:";
  for (size_t i = 0; i < choices.size(); ++i) {
    message += (i == 0 ? " " : ", ") + choices[i]->get_name();
  }
  return message + "; see " + path + " --help)";
}

// Every subcommand, nested ones too, takes -q/--quiet and -v/--verbose, and its --help ends with
// an example (ExampleFor). `path` is the subcommand's path ("data merge").
void AddCommonOptions(CLI::App& sub, const std::string& path, int* quiet, int* verbose) {
  sub.add_flag("-q,--quiet", *quiet, "print results and errors only (no progress)");
  sub.add_flag("-v,--verbose", *verbose,
               "print more (train: LightGBM's per-iteration log; bench: a line per problem)");
  if (const std::string& example = kselect::cli::ExampleFor(path); !example.empty()) {
    sub.footer("\nExample:\n  " + example + "\n");
  }
  for (CLI::App* child : sub.get_subcommands({})) {
    AddCommonOptions(*child, path + " " + child->get_name(), quiet, verbose);
  }
}

// `kselect help [command [subcommand]]` is `kselect [command [subcommand]] --help`.
std::vector<std::string> ArgumentsOf(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  if (!args.empty() && args.front() == "help") {
    args.erase(args.begin());
    args.emplace_back("--help");
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kselect::cli;
  // Named "kselect" in usage lines whatever path the binary was started by.
  CLI::App app{
      "kselect: ML-based GPU kernel selection and tuning for NVIDIA Hopper.\n"
      "Exit codes: 0 ok, 1 failure, 2 usage error. `kselect help COMMAND` shows a command's "
      "options and an example.",
      "kselect"};
  app.require_subcommand(1);
  app.set_version_flag("--version", kselect::ToolDescription());
  if (!PlannedCommands().empty()) {
    std::string footer = "\nPlanned (not available yet):\n";
    for (const PlannedCommand& planned : PlannedCommands()) {
      footer += "  " + std::string(planned.name) +
                std::string(12 - std::string(planned.name).size(), ' ') + planned.summary + "\n";
    }
    app.footer(footer);
  }

  std::vector<std::pair<CLI::App*, RunFunction>> runs;
  int quiet = 0, verbose = 0;
  for (const Command& command : Commands()) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    runs.emplace_back(sub, command.setup(*sub));
    AddCommonOptions(*sub, command.name, &quiet, &verbose);
  }
  std::vector<std::string> args = ArgumentsOf(argc, argv);
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    if (const std::string unknown = UnknownSubcommandMessage(app); !unknown.empty()) {
      std::cerr << unknown << "\n";
      return kExitUsage;
    }
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  SetVerbosity(quiet > 0 ? -1 : verbose);
  try {
    for (auto& [sub, run] : runs) {
      if (sub->parsed()) return run();
    }
  } catch (const kselect::CheckFailure& e) {
    std::cerr << "kselect: internal error (please report): " << e.what() << "\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "kselect: error: " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitUsage;
}
