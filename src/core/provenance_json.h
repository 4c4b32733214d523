// Provenance in and out of nlohmann JSON objects, for the artifacts that hold it beside their own
// keys (a solution library's "identity", a report's top level). The public text forms are in
// kselect/provenance.h; both walk the one field list in provenance.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include "core/json_codec.h"
#include "kselect/provenance.h"

namespace kselect::json_codec {

// Adds the keys of `fields` to `object` (which holds the artifact's other keys).
void WriteProvenance(const Provenance& provenance, nlohmann::json& object,
                     ProvenanceFields fields = ProvenanceFields::All());

// Reads the provenance keys of `reader`'s object, marking them read (the caller's Finish() then
// refuses only keys that are neither its own nor provenance). Absent keys read as unknown; the keys
// found are returned in `present` when given.
Provenance ReadProvenance(ObjectReader& reader, ProvenanceFields* present = nullptr);

}  // namespace kselect::json_codec
