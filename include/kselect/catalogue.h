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
//
// A rule may hold only on some problems: "when": {"mn": {"min": 4194304}, "align": {"min": 8}}
// applies it where every named problem quantity lies inside its inclusive bounds, and elsewhere
// the rule passes. Quantities: m, n, k, batch, mn (m*n) and align (the largest power of two, at
// most 256, dividing m, n and k). So a catalogue is a function of the problem: a kernel family
// that is measured hopeless on large outputs (split-K, 8-32-wide tiles) need not be timed there.
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

// One problem quantity's inclusive bounds in a rule's "when" clause.
struct ProblemCondition {
  std::string quantity;  // "m", "n", "k", "batch", "mn" or "align"
  std::optional<int64_t> min, max;
};

struct ConfigRule {
  enum class Op { kKeep, kDrop, kMin, kMax };
  std::string name;
  std::string comment;
  std::string field;
  Op op = Op::kKeep;
  std::vector<int64_t> values;  // kKeep/kDrop: the set; kMin/kMax: one bound
  // The rule holds only on problems meeting every condition (empty: on every problem).
  std::vector<ProblemCondition> when;
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
// The problem quantities a rule's "when" may name.
std::vector<std::string> ProblemQuantities();
// A problem quantity by name; nullopt for an unknown name or a problem that lacks it (a
// convolution has no m, n, k), where a conditioned rule does not apply.
std::optional<int64_t> ProblemQuantity(const Problem& problem, std::string_view quantity);
// Whether `rule` holds on `problem` (its "when" conditions are all met).
bool RuleAppliesTo(const ConfigRule& rule, const Problem& problem);

// The first rule `config` fails on `problem` ("" when it passes every rule). Rules on the fields
// named in `ignored` are skipped.
std::string RejectingRule(const RuleSet& rules, const Problem& problem, const KernelConfig& config,
                          std::span<const std::string_view> ignored = {});
// The rule set as a provider's enumeration filter for `problem` (keep and may_keep). The filter
// keeps references to both: they must outlive it.
ConfigFilter RuleSetFilter(const RuleSet& rules, const Problem& problem);
// `base` narrowed to a deterministic random sample: a config is kept with probability
// `fraction`, decided by a hash of its ConfigKey and `seed`, so every problem gets the same
// sample and a rerun the same configs.
ConfigFilter SampledFilter(ConfigFilter base, double fraction, uint64_t seed);
// `configs` that pass every rule on `problem`, order kept.
std::vector<KernelConfig> ApplyRules(const RuleSet& rules, const Problem& problem,
                                     const std::vector<KernelConfig>& configs);

// "0x" + 16 hex digits.
std::string FingerprintText(uint64_t fingerprint);

}  // namespace kselect
