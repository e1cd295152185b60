// pairmd.compare and pairmd.potential_map: what `pairmd compare` and `pairmd potential-map`
// compute (session/compare.h, analysis/potential_map.h), returned as NumPy data.
#pragma once

#include <pybind11/pybind11.h>

namespace pairmd::python {

namespace py = pybind11;

void define_analysis(py::module_& m);

}  // namespace pairmd::python
