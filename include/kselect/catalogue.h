// Named catalogues: what a provider generates or enumerates for a problem, filtered by a rule set
// kept as data (rules/<provider>/<name>.json, each rule named and commented). cuBLASLt enumerates
// on the device (AlgoCheck needs a GPU); the tile engine generates from the rule set's own
// "generator" (device independent). Either way the catalogue is "what the provider yields for a
// problem, filtered by the rules", and committed snapshots (kselect.catalogue_snapshot) record it.
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
// A provider that generates its configs reads them from the rule set too: "generator" is an
// object that provider interprets (the tile engine: {"variants": [...], "groups": [...]}, see
// src/providers/tile/tile_engine.h). One file per name keeps what is generated and what is
// filtered away together, under one fingerprint. Enumerating providers have none.
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
#include "kselect/provenance.h"
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
  // The "generator" object as compact JSON ("" when the file has none): the provider that
  // generates its configs parses it.
  std::string generator;
  std::string path;  // the file it was read from ("" when parsed from text)
  // FNV-1a 64 of the rule set's canonical JSON (names, fields, ops, values, the generator;
  // comments excluded): snapshots record it, and a test fails when rules and snapshot drift apart.
  uint64_t fingerprint = 0;
};

StatusOr<RuleSet> ParseRuleSet(std::string_view text, std::string_view source);
StatusOr<RuleSet> LoadRuleSet(const std::string& path);
// rules_dir/<provider>/<name>.json, e.g. rules/cublaslt/default.json; kNotFound names the file.
StatusOr<RuleSet> FindRuleSet(const std::string& rules_dir, Provider provider,
                              std::string_view name);
// A rule set given by name (looked up with FindRuleSet) or by path (contains '/' or ends in
// .json); a path's rule set must be `provider`'s.
StatusOr<RuleSet> FindRuleSetByNameOrPath(const std::string& rules_dir, Provider provider,
                                          std::string_view name_or_path);

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
// The first rule without a "when" condition that `config` fails ("" when it passes them all):
// the problem-independent part of a catalogue (the tile engine's snapshots, `kselect tile list`).
std::string RejectingUnconditionedRule(const RuleSet& rules, const KernelConfig& config);

// "0x" + 16 hex digits.
std::string FingerprintText(uint64_t fingerprint);

// A catalogue recorded as data, format kselect.catalogue_snapshot version 1: cuBLASLt's for one
// reference problem on one device (rules/cublaslt/snapshots/<name>.bf16_tn_4096.json, written by
// `kselect catalogue --snapshot` on a GPU), the tile engine's device and problem independent
// (rules/tile/snapshots/<name>.json, written by `kselect tile list --snapshot`). Fields that do
// not apply are left out of the file.
struct CatalogueSnapshot {
  Provider provider = Provider::kCublasLt;
  std::string rule_set;
  uint64_t rules_fingerprint = 0;
  std::optional<Problem> problem;  // the problem the catalogue is for
  // The device and libraries that enumerated it (cuBLASLt's; the tile engine's names none). Its
  // known fields are written, so a snapshot recorded before the record held more reads and writes
  // back as it was.
  std::optional<Provenance> provenance;
  std::optional<int64_t> max_workspace_bytes;
  std::optional<int64_t> enumerated;  // configs the provider yielded before the rules
  std::string tool;                   // ToolDescription() of the writer
  std::vector<KernelConfig> configs;  // the catalogue, in the provider's order
};
// The snapshot's file text: sorted keys, one config a line (reviewable diffs on regeneration).
std::string CatalogueSnapshotToJson(const CatalogueSnapshot& snapshot);
// kSchemaMismatch for another format or an unknown version; kParseError naming the field else.
StatusOr<CatalogueSnapshot> ParseCatalogueSnapshot(std::string_view text, std::string_view source);

}  // namespace kselect
