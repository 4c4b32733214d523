// What `kselect predict` and `kselect conv select` share: the printed or JSON form of a
// selector's decision, and the heuristic's picks a dataset recorded for a problem (the peer
// features of a model trained with them, on a host that cannot ask the library).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kselect/dataset.h"
#include "kselect/selector.h"

namespace kselect::cli {

struct SelectionReport {
  int top = 10;                 // ranked configs to print
  bool json = false;            // one JSON object instead of the table
  bool several_models = false;  // per-device models were given: say which one ranked
  bool can_implement = false;   // the candidates were filtered by the provider's CanImplement
};

// Prints `selection` (made by `selector`) over `candidates` configs, `not_implementable` of
// them dropped by CanImplement; `peer_source` says where the heuristic's picks came from ("" =
// none were used).
void PrintSelection(const SelectionReport& args, const Selector& selector,
                    const Selection& selection, size_t candidates, size_t not_implementable,
                    const std::string& peer_source);

// The heuristics' picks `dataset` recorded for `problem` (its rows' peer_rank and, for a library
// with a second heuristic such as cuDNN's mode B, peer_rank_b), each list best first; nullopt
// when the dataset did not measure the problem.
StatusOr<std::optional<std::vector<PeerPick>>> RecordedPeerPicks(const Dataset& dataset,
                                                                 Provider provider,
                                                                 const Problem& problem);

}  // namespace kselect::cli
