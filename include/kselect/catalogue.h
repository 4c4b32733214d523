// Named catalogues: a provider's enumerated config space filtered by a rule set kept as data
// (rules/<provider>/<name>.json, each rule named and commented). The enumerated space depends on
// the device (cuBLASLt's AlgoCheck needs a GPU), so a catalogue is "what the device enumerates for
// a problem, filtered by the rules"; committed snapshots record it for one reference problem.
//
// Rule-set JSON:
//   {"format": "kselect.rules", "format_version": 1, "name": "tiny", "provider": "cublaslt",
//    "comment": "...", "rules": [
//      {"name": "hopper_algos", "comment": "why", "field": "algo_id", "keep": [66, 67]},
//      {"name": "small_split_k", "comment": "why", "field": "split_k", "max": 4}, ...]}
// Each rule names one integer field of the provider's config and one of "keep" (values to keep),
// "drop" (values to drop), "min" or "max" (inclusive bounds). A config is in the catalogue when
// every rule passes. An empty rule list keeps everything (the `full` set).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kselect/kernel_config.h"
#include "kselect/provider.h"
#include "kselect/status.h"

namespace kselect {

struct ConfigRule {
  enum class Op { kKeep, kDrop, kMin, kMax };
  std::string name;
  std::string comment;
  std::string field;
  Op op = Op::kKeep;
  std::vector<int64_t> values;  // kKeep/kDrop: the set; kMin/kMax: one bound
};

struct RuleSet {
  std::string name;
  std::string comment;
  Provider provider = Provider::kCublasLt;
  std::vector<ConfigRule> rules;
  // FNV-1a 64 of the rule set's canonical JSON (names, fields, ops, values; comments excluded):
  // snapshots record it, and a test fails when rules and snapshot drift apart.
  uint64_t fingerprint = 0;
};

StatusOr<RuleSet> ParseRuleSet(std::string_view text, std::string_view source);
StatusOr<RuleSet> LoadRuleSet(const std::string& path);
// rules_dir/<provider>/<name>.json, e.g. rules/cublaslt/default.json.
StatusOr<RuleSet> FindRuleSet(const std::string& rules_dir, Provider provider,
                              std::string_view name);

// The integer config fields rules may name for `provider` ("algo_id", "tile_m", ...).
std::vector<std::string> RuleFields(Provider provider);

// The first rule `config` fails ("" when it passes every rule). Rules on the fields named in
// `ignored` are skipped.
std::string RejectingRule(const RuleSet& rules, const KernelConfig& config,
                          std::span<const std::string_view> ignored = {});
// The rule set as a provider's enumeration filter (keep and may_keep).
ConfigFilter RuleSetFilter(const RuleSet& rules);
// `base` narrowed to a deterministic random sample: a config is kept with probability
// `fraction`, decided by a hash of its ConfigKey and `seed`, so every problem gets the same
// sample and a rerun the same configs.
ConfigFilter SampledFilter(ConfigFilter base, double fraction, uint64_t seed);
// `configs` that pass every rule, order kept.
std::vector<KernelConfig> ApplyRules(const RuleSet& rules,
                                     const std::vector<KernelConfig>& configs);

// "0x" + 16 hex digits.
std::string FingerprintText(uint64_t fingerprint);

}  // namespace kselect
