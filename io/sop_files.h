// The files of a SOP system (engine/sop_model.h) as `pairmd sop-build` writes them: OUT.yaml
// (the config), OUT.start.h5 (the beads, one H5MD frame), OUT.backbone.pairs (covalent bonds) and
// OUT.native.pairs (the pair lists, engine/pair_list_file.h). The tests build their SOP systems
// with it too.
#pragma once

#include <string>
#include <vector>

#include "engine/sop_model.h"

namespace pairmd {

// OUT.yaml -> the names of the other files (OUT.start.h5, ...), as the config names them.
SopFiles sop_file_names(const std::string& out_yaml);

// Writes the four files (existing ones are replaced). Throws std::runtime_error naming a file
// that cannot be written. Returns the config's text.
std::string write_sop_system(const SopModel& m, const SopParameters& p, const std::string& out_yaml,
                             const std::string& title, const std::vector<std::string>& header,
                             const std::string& source);

}  // namespace pairmd
