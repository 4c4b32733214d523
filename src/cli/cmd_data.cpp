// kselect data info | merge | filter | schema | report: inspecting and reshaping canonical
// datasets, and the baselines report over them.
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/dataset_io.h"
#include "cli/gemm_args.h"
#include "core/text.h"
#include "kselect/baselines.h"
#include "kselect/catalogue.h"
#include "kselect/dataset.h"
#include "providers/tile/tile_engine.h"

namespace kselect::cli {
namespace {

struct DataArgs {
  // info
  std::string info_input;
  bool json = false;
  // merge
  std::vector<std::string> merge_inputs;
  std::string merge_output;
  bool allow_mixed = false;
  bool across_runs = false;
  bool allow_duplicates = false;
  // filter
  std::string filter_input;
  std::string filter_output;
  std::optional<std::string> m, n, k;  // "16", "1:16", "17:" or ":16"
  std::optional<std::string> provider, run_id, dtype, layout, op_type, device_kind, arch;
  bool valid_only = false;
  bool peer_picks_only = false;
  std::string catalogue;  // keep rows in this rule set's catalogue (and the heuristic's picks)
  // schema
  bool markdown = false;
  // report
  std::vector<std::string> report_inputs;
  std::vector<std::string> full_sample;
  std::string rules = "default";
  std::string rules_dir;  // empty: $KSELECT_RULES_DIR, else the install's or source tree's rules/
  std::string json_output;
  std::string markdown_output;
};

int RunDataInfo(const DataArgs& args) {
  // Streamed: only the summary's columns, batch by batch (a 1.2 M-row file in well under 1 GB).
  Dataset metadata_only;
  auto summary = SummarizeDatasetFileChecked(args.info_input, &metadata_only.metadata);
  if (!summary.ok()) return ReportError("data info", summary.status());
  std::cout << (args.json ? SummaryToJson(*summary, metadata_only) + "\n"
                          : SummaryToText(*summary, metadata_only));
  return kExitOk;
}

int RunMerge(const DataArgs& args) {
  if (args.across_runs && args.allow_mixed) {
    return ReportError("data merge",
                       InvalidArgumentError("--across-runs averages repeats of one device kind; "
                                            "it cannot be combined with --allow-mixed"));
  }
  if (auto s = text::CheckOutputFile(args.merge_output, "--output", args.merge_inputs); !s.ok()) {
    return ReportError("data merge", s);
  }
  if (!args.allow_duplicates) {
    if (auto s = text::CheckDistinctInputs(args.merge_inputs); !s.ok()) {
      return ReportError("data merge", s);
    }
  }
  nlohmann::json sources = nlohmann::json::array();
  int64_t total = 0;
  for (const std::string& path : args.merge_inputs) {
    auto info = InspectDatasetFileChecked(path);
    if (!info.ok()) return ReportError("data merge", info.status());
    sources.push_back({{"path", path}, {"rows", info->rows}});
    total += info->rows;
  }
  const std::map<std::string, std::string> metadata = {
      {std::string(kMetaSources), sources.dump()},
      {std::string(kMetaOptions), nlohmann::json{{"command", "data merge"},
                                                 {"allow_mixed", args.allow_mixed},
                                                 {"across_runs", args.across_runs}}
                                      .dump()}};
  auto rows =
      MergeDatasetFilesChecked(args.merge_inputs, args.merge_output, metadata, args.allow_mixed,
                               args.across_runs ? MergeScope::kAcrossRuns : MergeScope::kWithinRun,
                               ShowProgress("data merge"));
  if (!rows.ok()) return ReportError("data merge", rows.status());
  std::cout << "wrote " << args.merge_output << ": " << *rows << " rows from " << total
            << " rows in " << args.merge_inputs.size() << " file(s)\n";
  return kExitOk;
}

// The folder holding <provider>/<name>.json: --rules-dir, else $KSELECT_RULES_DIR, else the
// source tree's rules/.
std::string RulesRoot(const std::string& rules_dir) {
  return rules_dir.empty() ? tile::DefaultRulesRoot() : rules_dir;
}

// A provider's catalogue under one rule set: the rules, and for a provider that generates its
// configs the ConfigKeys it generates (an enumerating provider's rows were enumerated by it).
struct Catalogue {
  RuleSet rules;
  std::optional<std::set<std::string>> generated;
};

StatusOr<Catalogue> LoadCatalogue(const std::string& rules_root, Provider provider,
                                  const std::string& name) {
  Catalogue catalogue;
  KSELECT_ASSIGN_OR_RETURN(catalogue.rules, FindRuleSet(rules_root, provider, name));
  if (!catalogue.rules.generator.empty()) {
    KSELECT_ASSIGN_OR_RETURN(const tile::TileRuleSet set, tile::GenerateRuleSet(catalogue.rules));
    catalogue.generated.emplace();
    for (const auto& c : set.space) catalogue.generated->insert(ConfigKey(c));
  }
  return catalogue;
}

// Keeps the rows whose config the rule set `name` keeps for the row's problem, and every row of
// a heuristic pick (a peer_rank or peer_rank_b): those are timed whatever the catalogue, as the
// peers to beat.
// `fingerprints` gets each rule set's fingerprint by provider name as catalogues are loaded.
class CatalogueRows {
 public:
  CatalogueRows(std::string name, std::string rules_root)
      : name_(std::move(name)), rules_root_(std::move(rules_root)) {}

  StatusOr<bool> Keep(const DatasetRow& row) {
    KSELECT_ASSIGN_OR_RETURN(const Measurement m, MeasurementFromRow(row));
    const Provider provider = ProviderOf(m.config);
    auto it = catalogues_.find(provider);
    if (it == catalogues_.end()) {
      auto catalogue = LoadCatalogue(rules_root_, provider, name_);
      if (!catalogue.ok()) {
        return catalogue.status().WithContext("--catalogue " + name_ + " for the " +
                                              std::string(ProviderName(provider)) + " rows");
      }
      fingerprints_[std::string(ProviderName(provider))] =
          FingerprintText(catalogue->rules.fingerprint);
      it = catalogues_.emplace(provider, std::move(*catalogue)).first;
    }
    const Catalogue& catalogue = it->second;
    const bool generated =
        !catalogue.generated || catalogue.generated->contains(ConfigKey(m.config));
    return m.peer_rank.has_value() || m.peer_rank_b.has_value() ||
           (generated && RejectingRule(catalogue.rules, m.problem, m.config).empty());
  }
  const nlohmann::json& fingerprints() const { return fingerprints_; }

 private:
  std::string name_, rules_root_;
  std::map<Provider, Catalogue> catalogues_;
  nlohmann::json fingerprints_ = nlohmann::json::object();
};

// "16" (exactly), "1:16" (1 to 16), "17:" (17 and up), ":16" (up to 16): whole numbers >= 1.
StatusOr<DimRange> ParseDimRange(const std::string& text) {
  const size_t colon = text.find(':');
  auto bound = [](std::string_view part, int64_t open) -> StatusOr<int64_t> {
    if (part.empty()) return open;
    KSELECT_ASSIGN_OR_RETURN(const int64_t value, text::ParseInt64(part));
    if (value < 1) {
      return InvalidArgumentError("must be a positive whole number, got " + std::string(part));
    }
    return value;
  };
  if (colon == std::string::npos) {
    auto value = text::ParseInt64(text);
    if (!value.ok()) {
      return InvalidArgumentError("'" + text + "' is not a whole number within 64 bits");
    }
    if (*value < 1) return InvalidArgumentError("must be a positive whole number, got " + text);
    return DimRange(*value);
  }
  const std::string_view view(text);
  auto lo = bound(view.substr(0, colon), 1);
  auto hi = bound(view.substr(colon + 1), std::numeric_limits<int64_t>::max());
  if (!lo.ok() || !hi.ok() || text == ":") {
    return InvalidArgumentError("'" + text +
                                "' is not a range: give N, LO:HI, LO: or :HI with whole numbers "
                                ">= 1 (e.g. 1:16)");
  }
  if (*lo > *hi)
    return InvalidArgumentError("'" + text + "' is an empty range (" + std::to_string(*lo) + " > " +
                                std::to_string(*hi) + ")");
  return DimRange(*lo, *hi);
}

CLI::Validator DimRangeCheck() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        auto range = ParseDimRange(value);
        return range.ok() ? "" : range.status().message();
      },
      "N|LO:HI");
}

int RunFilter(const DataArgs& args) {
  if (auto s = text::CheckOutputFile(args.filter_output, "--output", {args.filter_input});
      !s.ok()) {
    return ReportError("data filter", s);
  }
  auto info = InspectDatasetFileChecked(args.filter_input);
  if (!info.ok()) return ReportError("data filter", info.status());
  RowFilter filter;
  // Checked by DimRangeCheck when parsed.
  if (args.m) filter.m = *ParseDimRange(*args.m);
  if (args.n) filter.n = *ParseDimRange(*args.n);
  if (args.k) filter.k = *ParseDimRange(*args.k);
  filter.provider = args.provider;
  filter.run_id = args.run_id;
  filter.dtype = args.dtype;
  filter.layout = args.layout;
  filter.op_type = args.op_type;
  filter.device_kind = args.device_kind;
  filter.arch = args.arch;
  filter.valid_only = args.valid_only;
  filter.peer_picks_only = args.peer_picks_only;
  nlohmann::json options = {{"command", "data filter"},
                            {"input", args.filter_input},
                            {"valid_only", args.valid_only},
                            {"peer_picks_only", args.peer_picks_only}};
  std::optional<CatalogueRows> catalogue;
  RowPredicate keep;
  if (!args.catalogue.empty()) {
    const std::string rules_root = RulesRoot(args.rules_dir);
    catalogue.emplace(args.catalogue, rules_root);
    keep = [&catalogue](const DatasetRow& row) { return catalogue->Keep(row); };
    options["catalogue"] = args.catalogue;
    options["rules_dir"] = rules_root;
  }
  auto add = [&options](const char* name, const auto& value) {
    if (value) options[name] = *value;
  };
  // A single value is recorded as a number (as before ranges), a range as its text.
  auto add_range = [&options](const char* name, const std::optional<std::string>& value,
                              const std::optional<DimRange>& range) {
    if (!value || !range) return;
    options[name] = range->min == range->max ? nlohmann::json(range->min) : nlohmann::json(*value);
  };
  add_range("m", args.m, filter.m);
  add_range("n", args.n, filter.n);
  add_range("k", args.k, filter.k);
  add("provider", args.provider);
  add("run_id", args.run_id);
  add("dtype", args.dtype);
  add("layout", args.layout);
  add("op_type", args.op_type);
  add("device_kind", args.device_kind);
  add("arch", args.arch);
  auto metadata = [&]() {
    if (catalogue) options["rules_fingerprints"] = catalogue->fingerprints();
    std::map<std::string, std::string> out = info->metadata;
    out[std::string(kMetaOptions)] = options.dump();
    out.erase(std::string(kMetaCreatedAt));
    out.erase(std::string(kMetaTool));
    return out;
  };
  auto kept =
      FilterDatasetFileChecked(args.filter_input, args.filter_output, filter, keep, metadata);
  if (!kept.ok()) return ReportError("data filter", kept.status());
  if (*kept == 0) {
    // An empty dataset is never what was meant: say so, and leave no file behind.
    std::error_code ignored;
    std::filesystem::remove(args.filter_output, ignored);
    std::string criteria;
    for (const auto& [key, value] : options.items()) {
      if (key == "command" || key == "input" || value == false) continue;
      criteria += (criteria.empty() ? "" : ", ") + key + " " +
                  (value.is_string() ? value.get<std::string>() : value.dump());
    }
    return ReportError(
        "data filter",
        NotFoundError("no row of " + args.filter_input + " (" + std::to_string(info->rows) +
                      " rows) matches " + criteria + "; nothing written (kselect data info " +
                      args.filter_input + " lists its shapes, dtypes, layouts and runs)"));
  }
  std::cout << "wrote " << args.filter_output << ": " << *kept << " of " << info->rows << " rows\n";
  return kExitOk;
}

int RunSchema(const DataArgs& args) {
  if (args.markdown) {
    std::cout << DatasetSchemaMarkdown();
  } else if (args.json) {
    nlohmann::json columns = nlohmann::json::array();
    for (const auto& c : DatasetColumns()) {
      columns.push_back({{"name", c.name},
                         {"type", ColumnTypeName(c.type)},
                         {"group", c.group},
                         {"description", c.description}});
    }
    std::cout << nlohmann::json{{"schema_version", std::to_string(kDatasetSchemaMajor) + "." +
                                                       std::to_string(kDatasetSchemaMinor)},
                                {"columns", columns}}
                     .dump(2)
              << "\n";
  } else {
    for (const auto& c : DatasetColumns()) {
      std::cout << c.name << "\t" << ColumnTypeName(c.type) << "\t" << c.description << "\n";
    }
  }
  return kExitOk;
}

// A report input's providers (its summary's), refusing a file without rows.
StatusOr<std::set<std::string>> ReportInputProviders(const std::string& path) {
  auto summary = SummarizeDatasetFileChecked(path, nullptr);
  if (!summary.ok()) return summary.status();
  if (summary->rows == 0) {
    return InvalidArgumentError(path + " holds no rows: nothing to report on");
  }
  std::set<std::string> providers;
  for (const auto& [provider, rows] : summary->providers) providers.insert(provider);
  return providers;
}

int RunReport(const DataArgs& args) {
  std::vector<std::string> all_inputs = args.report_inputs;
  all_inputs.insert(all_inputs.end(), args.full_sample.begin(), args.full_sample.end());
  if (!args.json_output.empty() && args.json_output != "-") {
    if (auto s = text::CheckOutputFile(args.json_output, "--json-output", all_inputs); !s.ok()) {
      return ReportError("data report", s);
    }
  }
  if (!args.markdown_output.empty()) {
    std::vector<std::string> others = all_inputs;
    if (!args.json_output.empty() && args.json_output != "-") others.push_back(args.json_output);
    if (auto s = text::CheckOutputFile(args.markdown_output, "--markdown-output", others);
        !s.ok()) {
      return ReportError("data report", s);
    }
  }
  // The files are streamed into the report (it keeps a few figures per (problem, config)), after
  // a pass over their provider columns for the rule sets the loss needs.
  BaselineRowSources inputs;
  ReportSources sources;
  std::set<std::string> data_providers, sample_providers;
  for (const std::string& path : args.report_inputs) {
    auto providers = ReportInputProviders(path);
    if (!providers.ok()) return ReportError("data report", providers.status());
    data_providers.insert(providers->begin(), providers->end());
    inputs.data.push_back(RowsOfFileChecked(path));
    sources.data.push_back(path);
  }
  for (const std::string& path : args.full_sample) {
    auto providers = ReportInputProviders(path);
    if (!providers.ok()) return ReportError("data report", providers.status());
    // A rule set per provider the sample and the data share: only those losses are computed.
    for (const std::string& provider : *providers) {
      if (data_providers.contains(provider)) sample_providers.insert(provider);
    }
    inputs.full_sample.push_back(RowsOfFileChecked(path));
    sources.full_sample.push_back(path);
  }
  const std::string rules_root = RulesRoot(args.rules_dir);
  for (const std::string& name : sample_providers) {
    auto provider = ParseProvider(name);
    if (!provider.ok()) return ReportError("data report", provider.status());
    auto rules = FindRuleSet(rules_root, *provider, args.rules);
    if (!rules.ok()) {
      return ReportError("data report",
                         rules.status().WithContext("rule set '" + args.rules + "' for " + name +
                                                    " under " + rules_root));
    }
    sources.rule_set_paths.push_back(rules_root + "/" + name + "/" + args.rules + ".json (" +
                                     FingerprintText(rules->fingerprint) + ")");
    inputs.rule_sets.push_back(std::move(*rules));
  }

  auto report = BuildBaselineReport(inputs);
  if (!report.ok()) return ReportError("data report", report.status());
  const std::string markdown = BaselineReportToMarkdown(*report, sources);
  // Both files or neither: a report half-written would disagree with itself.
  std::vector<text::OutputFile> files;
  if (!args.json_output.empty()) {
    std::string json = BaselineReportToJson(*report, sources) + "\n";
    if (args.json_output == "-") {
      std::cout << json;
    } else {
      files.push_back({args.json_output, std::move(json)});
    }
  }
  if (!args.markdown_output.empty()) {
    files.push_back({args.markdown_output, markdown});
  } else if (args.json_output != "-") {
    std::cout << markdown;
  }
  if (auto s = text::WriteFilesAtomically(files); !s.ok()) return ReportError("data report", s);
  return kExitOk;
}

}  // namespace

Command DataCommand() {
  return {"data",
          "inspect, merge and filter canonical datasets; print the schema; the baselines report",
          [](CLI::App& app) -> RunFunction {
            auto args = std::make_shared<DataArgs>();
            app.require_subcommand(1);
            CLI::App* info = app.add_subcommand("info", "rows, shapes, configs, devices, runs");
            info->add_option("input", args->info_input, "dataset (.parquet)")
                ->required()
                ->check(CLI::ExistingFile);
            info->add_flag("--json", args->json, "print JSON");

            CLI::App* merge = app.add_subcommand(
                "merge", "concatenate datasets, merging repeated (run, problem, config) rows");
            merge->add_option("inputs", args->merge_inputs, "datasets")
                ->required()
                ->check(CLI::ExistingFile);
            merge->add_option("-o,--output", args->merge_output, "output dataset")->required();
            merge->add_flag("--allow-mixed", args->allow_mixed,
                            "allow rows from several device kinds");
            merge->add_flag("--across-runs", args->across_runs,
                            "also merge repeats of a (problem, config) from different runs (one "
                            "device kind's independent collections) into their median");
            merge->add_flag("--allow-duplicates", args->allow_duplicates,
                            "accept the same input file more than once (its rows merge with "
                            "themselves)");

            CLI::App* filter = app.add_subcommand("filter", "keep rows matching every criterion");
            filter->add_option("input", args->filter_input, "dataset")
                ->required()
                ->check(CLI::ExistingFile);
            filter->add_option("-o,--output", args->filter_output, "output dataset")->required();
            filter->add_option("--m", args->m, "GEMM m: N, or a range LO:HI, LO: or :HI (1:16)")
                ->check(DimRangeCheck());
            filter->add_option("--n", args->n, "GEMM n: N or a range (e.g. --n 1:16 for decode)")
                ->check(DimRangeCheck());
            filter->add_option("--k", args->k, "GEMM k: N or a range")->check(DimRangeCheck());
            filter->add_option("--provider", args->provider, "cublaslt, tile, cudnn, ck_tile, ...");
            filter->add_option("--run-id", args->run_id, "collection run");
            filter->add_option("--dtype", args->dtype, "input dtype (bf16, fp16, fp8, ...)");
            filter->add_option("--layout", args->layout, "GEMM layout (rcr, rcc, ...)");
            filter->add_option("--op-type", args->op_type, "operation (gemm, grouped_conv, ...)");
            filter->add_option("--device-kind", args->device_kind, "device kind (nvidia-h200)");
            filter->add_option("--arch", args->arch, "architecture (sm_90, gfx950)");
            filter->add_flag("--valid-only", args->valid_only, "drop invalid rows");
            filter->add_flag("--peer-picks-only", args->peer_picks_only,
                             "keep only the heuristics' picks (rows with a peer_rank or "
                             "peer_rank_b)");
            filter->add_option("--catalogue", args->catalogue,
                               "keep rows whose config the named rule set keeps for the row's "
                               "problem (rules/<provider>/<name>.json), and the heuristic's picks");
            filter->add_option("--rules-dir", args->rules_dir,
                               "folder of rule sets for --catalogue (default: "
                               "$KSELECT_RULES_DIR, else the install's or source tree's rules/)");

            CLI::App* schema = app.add_subcommand("schema", "print the canonical column list");
            schema->add_flag("--markdown", args->markdown, "as docs/dataset_schema.md");
            schema->add_flag("--json", args->json, "as JSON");

            CLI::App* report = app.add_subcommand(
                "report",
                "baselines per provider/dtype/layout: data quality, the heuristic's top-1 and "
                "best of top 8 vs the oracle, and a rule set's loss against a full-space sample "
                "(docs/data_report.md)");
            report->add_option("inputs", args->report_inputs, "datasets (.parquet)")
                ->required()
                ->check(CLI::ExistingFile);
            report
                ->add_option("--full-sample", args->full_sample,
                             "datasets measured over a random sample of the full config space "
                             "(for the rule set's loss)")
                ->check(CLI::ExistingFile);
            report->add_option("--rules", args->rules, "rule set whose loss is reported")
                ->capture_default_str();
            report->add_option("--rules-dir", args->rules_dir,
                               "folder of rule sets (<provider>/<name>.json); default "
                               "$KSELECT_RULES_DIR, else the install's or source tree's rules/");
            report->add_option("--json-output", args->json_output,
                               "also write JSON here ('-': stdout)");
            report->add_option("--markdown-output", args->markdown_output,
                               "write the Markdown here instead of stdout");
            AddHiddenAlias(*report, "--json", args->json_output);
            AddHiddenAlias(*report, "--markdown", args->markdown_output);

            return [args, info, merge, filter, schema, report]() {
              if (info->parsed()) return RunDataInfo(*args);
              if (merge->parsed()) return RunMerge(*args);
              if (filter->parsed()) return RunFilter(*args);
              if (schema->parsed()) return RunSchema(*args);
              if (report->parsed()) return RunReport(*args);
              return kExitUsage;
            };
          }};
}

}  // namespace kselect::cli
