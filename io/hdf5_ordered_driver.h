// An HDF5 file driver (VFD) for a file that a kill of the writing process must never break at
// any moment: the trajectory (io/h5md_writer.cpp; docs/output.md, "Flush policy").
//
// HDF5's own POSIX driver writes a flush's metadata in address order and the superblock, which
// records the end of the allocated space (EOA), last. A kill in between leaves metadata that
// points past the recorded end ("addr overflow ... eoa" on reading), an extent written before
// the chunk index that fills it (a frame of zeros), or a B-tree node split whose parent was
// written before its new children. This driver keeps metadata in memory until HDF5 ends a flush,
// then writes it in an order where every prefix is a file HDF5 reads:
//   1. the file grows to the EOA, and the EOA is written into the superblock on disk (one
//      8-byte write in the first page; superblock versions 0 and 1, which are what pairmd writes);
//   2. metadata in space the file on disk does not refer to yet (new objects, nodes, heaps);
//   3. metadata rewritten in place, parts before what refers to them: heaps, then B-tree nodes
//      (higher levels first: a split's parent before the node that gave up half its entries),
//      then symbol-table nodes, then object headers (extents, attributes) last. Each is written a
//      page at a time from its end to its start, so that a write the kernel cuts at a page
//      boundary changes a node's entries before its header counts them.
// Raw data goes to the file as HDF5 writes it (a chunk is written before the flush that refers
// to it). Metadata aggregation is off, so new metadata lies past the EOA on disk; space HDF5
// frees and reuses within one flush interval (a deleted object) is treated as in place.
//
// The files are ordinary HDF5 files (no driver information is stored): any reader opens them
// with its default driver.
#pragma once

#include <hdf5.h>

namespace pairmd::h5 {

// The driver's identifier (registered on first use), for H5Pset_driver(fapl, id, nullptr).
// Call with the library lock held (io/hdf5_util.h).
hid_t ordered_driver();

// The end of the allocated space that the superblock on disk of `file` (open with this driver)
// records, 0 for a file of another driver: the file must not be cut shorter than this.
haddr_t recorded_eoa(hid_t file);

}  // namespace pairmd::h5
