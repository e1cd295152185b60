#include "io/h5md_run_info.h"

#include <stdexcept>

#include "io/hdf5_util.h"

namespace pairmd {

using h5::Handle;

namespace {

// /parameters/units (a string dataset), else the first word of h5md/modules/units' `system`.
std::string stored_units(hid_t f) {
  if (h5::exists(f, "parameters/units")) {
    Handle d(h5::check_id(H5Dopen2(f, "parameters/units", H5P_DEFAULT), "cannot open parameters/units"));
    return h5::read_string(d, false, "parameters/units");
  }
  if (!h5::exists(f, "h5md/modules/units")) return "";
  Handle g = h5::open_group(f, "h5md/modules/units");
  if (H5Aexists(g, "system") <= 0) return "";
  Handle a(h5::check_id(H5Aopen(g, "system", H5P_DEFAULT), "cannot open h5md/modules/units/system"));
  const std::string system = h5::read_string(a, true, "h5md/modules/units/system");
  return system.substr(0, system.find(' '));
}

}  // namespace

H5mdRunInfo read_h5md_run_info(const std::string& path) {
  h5::LibraryLock lock(h5::library_mutex());
  h5::quiet();
  const hid_t fid = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (fid < 0) throw std::runtime_error("cannot open '" + path + "' as HDF5 (" + h5::last_error() + ")");
  Handle f(fid);
  H5mdRunInfo info;
  try {
    info.units = stored_units(f);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("'" + path + "': " + e.what());
  }
  if (!info.units.empty() && info.units != "lj" && info.units != "real")
    throw std::runtime_error("'" + path + "': its units are '" + info.units + "', which pairmd does not know");
  return info;
}

}  // namespace pairmd
