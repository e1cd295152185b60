#include "io/hdf5_ordered_driver.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "io/hdf5_util.h"

namespace pairmd::h5 {
namespace {

constexpr haddr_t kPage = 4096;
constexpr size_t kSuperblockHead = 96;  // enough of a version 0 or 1 superblock to find its EOA

// A metadata write HDF5 made since the last flush ended, not yet in the file.
struct Pending {
  H5FD_mem_t type;
  std::vector<unsigned char> bytes;
};

// What H5Fget_vfd_handle gives: a POSIX file descriptor first (as HDF5's own driver gives one),
// and the EOA the superblock on disk records (0: no superblock on disk yet).
struct PosixHandle {
  int fd = -1;
  haddr_t disk_eoa = 0;
};

// HDF5 sees the file as its H5FD_t base (the library fills it in after open()).
struct OrderedFile : H5FD_t {
  OrderedFile() : H5FD_t() {}
  PosixHandle handle;
  int& fd = handle.fd;
  haddr_t& disk_eoa = handle.disk_eoa;
  dev_t device = 0;
  ino_t inode = 0;
  haddr_t eoa = 0;
  haddr_t eof = 0;                     // as HDF5's POSIX driver counts it: the size at open, and writes since
  long eoa_field = -1;                 // where the superblock at address 0 keeps its EOA (-1: not known)
  bool failed = false;                 // a flush failed: nothing more is written, the file stays as it was
  std::map<haddr_t, Pending> pending;  // by address, not overlapping
};

OrderedFile* as_file(H5FD_t* f) { return static_cast<OrderedFile*>(f); }
const OrderedFile* as_file(const H5FD_t* f) { return static_cast<const OrderedFile*>(f); }

herr_t fail(hid_t minor, const std::string& what) {
  H5Epush2(H5E_DEFAULT, __FILE__, "ordered file driver", __LINE__, H5E_ERR_CLS, H5E_VFL, minor, "%s", what.c_str());
  return -1;
}

herr_t write_all(int fd, const unsigned char* p, haddr_t size, haddr_t addr) {
  while (size > 0) {
    const ssize_t n = pwrite(fd, p, size, static_cast<off_t>(addr));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = n < 0 ? errno : EIO;
      return fail(H5E_WRITEERROR, std::string("cannot write the file: ") + std::strerror(e));
    }
    p += n;
    addr += static_cast<haddr_t>(n);
    size -= static_cast<haddr_t>(n);
  }
  return 0;
}

// A write over what the file on disk refers to: a page at a time from the end backwards, so that
// a write cut at a page boundary has changed an object's later bytes (entries) and not its
// first ones (signature, counts).
herr_t write_backwards_by_page(int fd, const unsigned char* p, haddr_t size, haddr_t addr) {
  haddr_t hi = addr + size;
  while (hi > addr) {
    const haddr_t lo = std::max(addr, (hi - 1) / kPage * kPage);
    if (write_all(fd, p + (lo - addr), hi - lo, lo) < 0) return -1;
    hi = lo;
  }
  return 0;
}

uint64_t read_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int k = 7; k >= 0; --k) v = (v << 8) | p[k];
  return v;
}

// The offset of the EOA field of a superblock image at address 0 (versions 0 and 1 with 8-byte
// addresses; -1 for anything else), and the EOA it records.
long eoa_field_of(const unsigned char* sb, size_t n, haddr_t* eoa) {
  static const unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (n < kSuperblockHead || std::memcmp(sb, kSignature, 8) != 0 || sb[13] != 8) return -1;
  const long field = sb[8] == 0 ? 40 : sb[8] == 1 ? 44 : -1;
  if (field >= 0) *eoa = read_le64(sb + field);
  return field;
}

// Removes [addr, addr + size) from the pending writes (a newer write replaces those bytes).
void forget_range(OrderedFile& f, haddr_t addr, haddr_t size) {
  const haddr_t end = addr + size;
  auto it = f.pending.lower_bound(addr);
  if (it != f.pending.begin()) --it;
  while (it != f.pending.end() && it->first < end) {
    const haddr_t a = it->first, b = a + it->second.bytes.size();
    if (b <= addr) {
      ++it;
      continue;
    }
    Pending old = std::move(it->second);
    it = f.pending.erase(it);
    if (a < addr) f.pending[a] = {old.type, {old.bytes.begin(), old.bytes.begin() + (addr - a)}};
    if (b > end) f.pending[end] = {old.type, {old.bytes.begin() + (end - a), old.bytes.end()}};
  }
}

// The place of an in-place write in a flush: what is referred to before what refers to it.
int in_place_rank(haddr_t addr, const Pending& p, bool new_file) {
  const auto& b = p.bytes;
  switch (p.type) {
    case H5FD_MEM_SUPER:
      return addr == 0 ? (new_file ? 1000 : 0) : 600;
    case H5FD_MEM_LHEAP:
    case H5FD_MEM_GHEAP:
      return 100;
    case H5FD_MEM_BTREE:
      // Version 1 B-tree nodes ("TREE", type, level): higher levels first. Then symbol-table
      // nodes ("SNOD"), the leaves of a group's B-tree.
      if (b.size() > 6 && std::memcmp(b.data(), "TREE", 4) == 0) return 200 + (255 - b[5]);
      return 500;
    case H5FD_MEM_OHDR:
      return 700;
    default:
      return 800;
  }
}

// Makes the file at least `size` bytes long (so that an EOA written into the superblock never
// points past the end of the file).
herr_t grow_to(OrderedFile& f, haddr_t size) {
  struct stat st;
  if (fstat(f.fd, &st) != 0) return fail(H5E_WRITEERROR, std::string("cannot stat the file: ") + std::strerror(errno));
  if (static_cast<haddr_t>(st.st_size) >= size) return 0;
  if (ftruncate(f.fd, static_cast<off_t>(size)) != 0)
    return fail(H5E_WRITEERROR, std::string("cannot extend the file: ") + std::strerror(errno));
  return 0;
}

// Step 1 of a flush: the superblock on disk is told the new EOA before anything refers to
// space below it.
herr_t advance_disk_eoa(OrderedFile& f) {
  if (f.disk_eoa == 0 || f.eoa <= f.disk_eoa || f.eoa_field < 0) return 0;
  if (grow_to(f, f.eoa) < 0) return -1;
  unsigned char le[8];
  for (int k = 0; k < 8; ++k) le[k] = static_cast<unsigned char>(f.eoa >> (8 * k));
  if (write_all(f.fd, le, 8, static_cast<haddr_t>(f.eoa_field)) < 0) return -1;
  f.disk_eoa = f.eoa;
  return 0;
}

// Writes the pending metadata in the order of the file comment (io/hdf5_ordered_driver.h).
herr_t commit(OrderedFile& f, bool closing) {
  if (f.pending.empty()) return 0;
  // HDF5 flushes a new file's superblock before the root group it points to: hold it back until
  // the first flush that writes more (or the close), which then writes it last.
  const bool superblock_only = f.pending.size() == 1 && f.pending.begin()->first == 0;
  if (f.disk_eoa == 0 && superblock_only && !closing) return 0;
  if (f.failed) return fail(H5E_WRITEERROR, "an earlier flush of this file failed");
  const auto super = f.pending.find(0);
  if (f.eoa_field < 0 && super != f.pending.end() && super->second.type == H5FD_MEM_SUPER) {
    haddr_t ignored = 0;
    f.eoa_field = eoa_field_of(super->second.bytes.data(), super->second.bytes.size(), &ignored);
  }
  const bool new_file = f.disk_eoa == 0;
  const haddr_t referred = f.disk_eoa;  // the file on disk refers to nothing at or past this
  if (advance_disk_eoa(f) < 0) {
    f.failed = true;
    return -1;
  }
  struct Item {
    haddr_t addr;
    const Pending* p;
    bool fresh;  // in space the file on disk refers to nothing in: any order will do
    int rank;
  };
  std::vector<Item> items;
  for (const auto& [addr, p] : f.pending) {
    const bool superblock = addr == 0 && p.type == H5FD_MEM_SUPER;
    const bool fresh = new_file ? !superblock : addr >= referred;
    items.push_back({addr, &p, fresh, in_place_rank(addr, p, new_file)});
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    if (a.fresh != b.fresh) return a.fresh;
    return !a.fresh && a.rank < b.rank;
  });
  for (const Item& it : items) {
    const haddr_t n = it.p->bytes.size();
    const herr_t rc = it.fresh ? write_all(f.fd, it.p->bytes.data(), n, it.addr)
                               : write_backwards_by_page(f.fd, it.p->bytes.data(), n, it.addr);
    if (rc < 0) {
      f.failed = true;
      return -1;
    }
    haddr_t eoa = 0;
    if (it.addr == 0 && it.p->type == H5FD_MEM_SUPER && eoa_field_of(it.p->bytes.data(), n, &eoa) >= 0)
      f.disk_eoa = eoa;
  }
  if (new_file && f.disk_eoa == 0) f.disk_eoa = f.eoa;
  f.pending.clear();
  return 0;
}

// ---- the driver's callbacks ----------------------------------------------------------------

H5FD_t* open_file(const char* name, unsigned flags, hid_t, haddr_t maxaddr) {
  if (!name || !*name || maxaddr == 0 || maxaddr == HADDR_UNDEF) {
    fail(H5E_CANTOPENFILE, "invalid file name or maximum address");
    return nullptr;
  }
  int o = (flags & H5F_ACC_RDWR) ? O_RDWR : O_RDONLY;
  if (flags & H5F_ACC_TRUNC) o |= O_TRUNC;
  if (flags & H5F_ACC_CREAT) o |= O_CREAT;
  if (flags & H5F_ACC_EXCL) o |= O_EXCL;
  const int fd = ::open(name, o | O_CLOEXEC, 0666);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    fail(H5E_CANTOPENFILE, std::string("unable to open file: name = '") + name + "', errno = " + std::to_string(e) +
                               ", error message = '" + std::strerror(e) + "'");
    return nullptr;
  }
  auto* f = new OrderedFile();
  f->fd = fd;
  f->device = st.st_dev;
  f->inode = st.st_ino;
  f->eof = static_cast<haddr_t>(st.st_size);
  unsigned char sb[kSuperblockHead];
  if (st.st_size >= static_cast<off_t>(kSuperblockHead) && pread(fd, sb, sizeof sb, 0) == sizeof sb)
    f->eoa_field = eoa_field_of(sb, sizeof sb, &f->disk_eoa);
  if (f->eoa_field < 0) f->disk_eoa = f->eof;  // an existing file of another layout: all of it is in use
  return f;
}

herr_t close_file(H5FD_t* file) {
  OrderedFile* f = as_file(file);
  const herr_t rc = commit(*f, true);
  ::close(f->fd);
  delete f;
  return rc;
}

int compare_files(const H5FD_t* a, const H5FD_t* b) {
  const OrderedFile *x = as_file(a), *y = as_file(b);
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->inode != y->inode) return x->inode < y->inode ? -1 : 1;
  return 0;
}

herr_t query(const H5FD_t*, unsigned long* flags) {
  // No metadata aggregation or accumulation: each metadata object is its own write, with its
  // type, and new metadata lies past the EOA of the last flush. "SWMR I/O" only lets H5Fget_eoa
  // work (the trajectory writer reserves disk space from there); nobody opens these for SWMR.
  if (flags) *flags = H5FD_FEAT_DATA_SIEVE | H5FD_FEAT_POSIX_COMPAT_HANDLE | H5FD_FEAT_SUPPORTS_SWMR_IO;
  return 0;
}

haddr_t get_eoa(const H5FD_t* file, H5FD_mem_t) { return as_file(file)->eoa; }

herr_t set_eoa(H5FD_t* file, H5FD_mem_t, haddr_t addr) {
  as_file(file)->eoa = addr;
  return 0;
}

haddr_t get_eof(const H5FD_t* file, H5FD_mem_t) { return as_file(file)->eof; }

herr_t get_handle(H5FD_t* file, hid_t, void** handle) {
  if (!handle) return fail(H5E_CANTOPENFILE, "no place for the file handle");
  *handle = &as_file(file)->handle;
  return 0;
}

herr_t read_file(H5FD_t* file, H5FD_mem_t, hid_t, haddr_t addr, size_t size, void* buf) {
  OrderedFile* f = as_file(file);
  auto* out = static_cast<unsigned char*>(buf);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pread(f->fd, out + done, size - done, static_cast<off_t>(addr + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(H5E_READERROR, std::string("cannot read the file: ") + std::strerror(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  std::memset(out + done, 0, size - done);  // past the end of the file: zeros, as HDF5 expects
  // What HDF5 wrote and this driver holds back is what HDF5 reads.
  const haddr_t end = addr + size;
  auto it = f->pending.lower_bound(addr);
  if (it != f->pending.begin()) --it;
  for (; it != f->pending.end() && it->first < end; ++it) {
    const haddr_t a = std::max(addr, it->first), b = std::min(end, it->first + it->second.bytes.size());
    if (a < b) std::memcpy(out + (a - addr), it->second.bytes.data() + (a - it->first), b - a);
  }
  return 0;
}

herr_t write_file(H5FD_t* file, H5FD_mem_t type, hid_t, haddr_t addr, size_t size, const void* buf) {
  OrderedFile* f = as_file(file);
  if (f->failed) return fail(H5E_WRITEERROR, "an earlier flush of this file failed");
  const auto* p = static_cast<const unsigned char*>(buf);
  forget_range(*f, addr, size);
  if (type == H5FD_MEM_DRAW) {
    if (write_all(f->fd, p, size, addr) < 0) return -1;
  } else {
    f->pending[addr] = {type, std::vector<unsigned char>(p, p + size)};
  }
  f->eof = std::max(f->eof, addr + size);
  return 0;
}

herr_t flush_file(H5FD_t* file, hid_t, hbool_t) { return commit(*as_file(file), false); }

herr_t truncate_file(H5FD_t* file, hid_t, hbool_t closing) {
  OrderedFile* f = as_file(file);
  if (f->eoa == f->eof) return 0;
  if (commit(*f, closing) < 0) return -1;
  // Never below the EOA the superblock on disk records (it may still be the larger one).
  const haddr_t size = std::max(f->eoa, f->disk_eoa);
  if (ftruncate(f->fd, static_cast<off_t>(size)) != 0)
    return fail(H5E_WRITEERROR, std::string("cannot truncate the file: ") + std::strerror(errno));
  f->eof = size;
  return 0;
}

herr_t lock_file(H5FD_t* file, hbool_t rw) {
  if (flock(as_file(file)->fd, (rw ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0 || errno == ENOSYS) return 0;
  const int e = errno;
  return fail(H5E_CANTLOCKFILE,
              "unable to lock file, errno = " + std::to_string(e) + ", error message = '" + std::strerror(e) + "'");
}

herr_t unlock_file(H5FD_t* file) {
  if (flock(as_file(file)->fd, LOCK_UN) == 0 || errno == ENOSYS) return 0;
  return fail(H5E_CANTLOCKFILE, std::string("unable to unlock file: ") + std::strerror(errno));
}

H5FD_class_t make_class() {
  H5FD_class_t c;
  std::memset(&c, 0, sizeof c);
#if H5_VERSION_GE(1, 13, 2)
  // Written against HDF5 1.10's class (Debian 12); newer libraries also ask for these.
  c.version = H5FD_CLASS_VERSION;
  c.value = static_cast<H5FD_class_value_t>(509);  // 256..511: drivers outside the library
#endif
  c.name = "pairmd_ordered";
  c.maxaddr = (haddr_t(1) << 63) - 1;
  c.fc_degree = H5F_CLOSE_WEAK;
  c.open = open_file;
  c.close = close_file;
  c.cmp = compare_files;
  c.query = query;
  c.get_eoa = get_eoa;
  c.set_eoa = set_eoa;
  c.get_eof = get_eof;
  c.get_handle = get_handle;
  c.read = read_file;
  c.write = write_file;
  c.flush = flush_file;
  c.truncate = truncate_file;
  c.lock = lock_file;
  c.unlock = unlock_file;
  const H5FD_mem_t map[] = H5FD_FLMAP_DICHOTOMY;
  std::copy(std::begin(map), std::end(map), c.fl_map);
  return c;
}

}  // namespace

haddr_t recorded_eoa(hid_t file) {
  Handle fapl(H5Fget_access_plist(file));
  void* handle = nullptr;
  if (!fapl.valid() || H5Pget_driver(fapl) != ordered_driver() || H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0 ||
      !handle) {
    H5Eclear2(H5E_DEFAULT);
    return 0;
  }
  return static_cast<const PosixHandle*>(handle)->disk_eoa;
}

hid_t ordered_driver() {
  static const H5FD_class_t cls = make_class();
  static hid_t id = H5I_INVALID_HID;
  if (id < 0 || H5Iis_valid(id) <= 0) id = check_id(H5FDregister(&cls), "cannot register the ordered file driver");
  return id;
}

}  // namespace pairmd::h5
