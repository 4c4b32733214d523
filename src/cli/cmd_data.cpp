// kselect data info | merge | filter | schema: inspecting and reshaping canonical datasets.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/dataset_io.h"

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
  // filter
  std::string filter_input;
  std::string filter_output;
  std::optional<int64_t> m, n, k;
  std::optional<std::string> provider, run_id, dtype, layout, op_type, device_kind, arch;
  bool valid_only = false;
  // schema
  bool markdown = false;
};

int RunDataInfo(const DataArgs& args) {
  auto dataset = ReadDatasetChecked(args.info_input);
  if (!dataset.ok()) return ReportError("data info", dataset.status());
  const DatasetSummary summary = SummarizeDataset(*dataset);
  std::cout << (args.json ? SummaryToJson(summary, *dataset) + "\n"
                          : SummaryToText(summary, *dataset));
  return kExitOk;
}

int RunMerge(const DataArgs& args) {
  std::vector<Dataset> inputs;
  nlohmann::json sources = nlohmann::json::array();
  for (const std::string& path : args.merge_inputs) {
    auto dataset = ReadDatasetChecked(path);
    if (!dataset.ok()) return ReportError("data merge", dataset.status());
    sources.push_back({{"path", path}, {"rows", dataset->rows.size()}});
    inputs.push_back(std::move(*dataset));
  }
  auto merged = MergeDatasets(inputs, args.allow_mixed);
  if (!merged.ok()) return ReportError("data merge", merged.status());
  merged->metadata[std::string(kMetaSources)] = sources.dump();
  merged->metadata[std::string(kMetaOptions)] =
      nlohmann::json{{"command", "data merge"}, {"allow_mixed", args.allow_mixed}}.dump();
  if (auto s = WriteDatasetChecked(*merged, args.merge_output); !s.ok()) {
    return ReportError("data merge", s);
  }
  size_t total = 0;
  for (const Dataset& d : inputs) total += d.rows.size();
  std::cout << "wrote " << args.merge_output << ": " << merged->rows.size() << " rows from "
            << total << " rows in " << inputs.size() << " file(s)\n";
  return kExitOk;
}

int RunFilter(const DataArgs& args) {
  auto dataset = ReadDatasetChecked(args.filter_input);
  if (!dataset.ok()) return ReportError("data filter", dataset.status());
  RowFilter filter;
  filter.m = args.m;
  filter.n = args.n;
  filter.k = args.k;
  filter.provider = args.provider;
  filter.run_id = args.run_id;
  filter.dtype = args.dtype;
  filter.layout = args.layout;
  filter.op_type = args.op_type;
  filter.device_kind = args.device_kind;
  filter.arch = args.arch;
  filter.valid_only = args.valid_only;
  Dataset out = FilterDataset(*dataset, filter);
  nlohmann::json options = {
      {"command", "data filter"}, {"input", args.filter_input}, {"valid_only", args.valid_only}};
  auto add = [&options](const char* name, const auto& value) {
    if (value) options[name] = *value;
  };
  add("m", args.m);
  add("n", args.n);
  add("k", args.k);
  add("provider", args.provider);
  add("run_id", args.run_id);
  add("dtype", args.dtype);
  add("layout", args.layout);
  add("op_type", args.op_type);
  add("device_kind", args.device_kind);
  add("arch", args.arch);
  out.metadata[std::string(kMetaOptions)] = options.dump();
  out.metadata.erase(std::string(kMetaCreatedAt));
  out.metadata.erase(std::string(kMetaTool));
  if (auto s = WriteDatasetChecked(out, args.filter_output); !s.ok()) {
    return ReportError("data filter", s);
  }
  std::cout << "wrote " << args.filter_output << ": " << out.rows.size() << " of "
            << dataset->rows.size() << " rows\n";
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

}  // namespace

Command DataCommand() {
  return {"data", "inspect, merge and filter canonical datasets; print the schema",
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

            CLI::App* filter = app.add_subcommand("filter", "keep rows matching every criterion");
            filter->add_option("input", args->filter_input, "dataset")
                ->required()
                ->check(CLI::ExistingFile);
            filter->add_option("-o,--output", args->filter_output, "output dataset")->required();
            filter->add_option("--m", args->m, "GEMM m");
            filter->add_option("--n", args->n, "GEMM n");
            filter->add_option("--k", args->k, "GEMM k");
            filter->add_option("--provider", args->provider, "cublaslt, tile, cudnn, ck_tile, ...");
            filter->add_option("--run-id", args->run_id, "collection run");
            filter->add_option("--dtype", args->dtype, "input dtype (bf16, fp16, fp8, ...)");
            filter->add_option("--layout", args->layout, "GEMM layout (rcr, rcc, ...)");
            filter->add_option("--op-type", args->op_type, "operation (gemm, grouped_conv, ...)");
            filter->add_option("--device-kind", args->device_kind, "device kind (nvidia-h200)");
            filter->add_option("--arch", args->arch, "architecture (sm_90, gfx950)");
            filter->add_flag("--valid-only", args->valid_only, "drop invalid rows");

            CLI::App* schema = app.add_subcommand("schema", "print the canonical column list");
            schema->add_flag("--markdown", args->markdown, "as docs/dataset_schema.md");
            schema->add_flag("--json", args->json, "as JSON");

            return [args, info, merge, filter, schema]() {
              if (info->parsed()) return RunDataInfo(*args);
              if (merge->parsed()) return RunMerge(*args);
              if (filter->parsed()) return RunFilter(*args);
              if (schema->parsed()) return RunSchema(*args);
              return kExitUsage;
            };
          }};
}

}  // namespace kselect::cli
