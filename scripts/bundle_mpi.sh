#!/usr/bin/env bash
# Copies Debian's Open MPI (mpirun, its libraries, plugins, help texts and settings) into DEST/mpi
# so that a machine without MPI can run `mpirun -np K pairmd run ...` from the bundle (the device
# machine has no MPI and no network: scripts/build_device_bundle.sh calls this). DEST/mpi/env.sh
# points Open MPI at the copy (OPAL_PREFIX and the OPAL_*DIR variables, Open MPI's documented
# way to move an installation) and puts mpirun on PATH and the libraries on LD_LIBRARY_PATH.
#   scripts/bundle_mpi.sh DEST [EXTRA_BINARY...]   (the libraries EXTRA_BINARY needs come along)
set -euo pipefail
dest=${1:?usage: bundle_mpi.sh DEST [BINARY...]}
shift
mpi=$dest/mpi
libdir=/usr/lib/x86_64-linux-gnu/openmpi/lib
[[ -d $libdir/openmpi3 ]] || { echo "bundle_mpi: no Open MPI in $libdir (apt-get install libopenmpi-dev openmpi-bin)" >&2; exit 1; }
rm -rf "$mpi" && mkdir -p "$mpi/bin" "$mpi/lib" "$mpi/share" "$mpi/etc"
cp -L "$(readlink -f /usr/bin/mpirun)" "$mpi/bin/mpirun"
[[ -x /usr/bin/orted ]] && cp -L /usr/bin/orted "$mpi/bin/"
cp -rL "$libdir/openmpi3" "$mpi/lib/openmpi3"
# Network fabrics (InfiniBand verbs, libfabric, UCX, PSM) and OpenSHMEM are not for one machine:
# their plugins and the libraries behind them stay out (shared memory and TCP remain).
rm -f "$mpi"/lib/openmpi3/*{ucx,ofi,openib,psm,verbs,spml,sshmem,memheap,scoll,atomic_,monitoring}*.so
cp -rL /usr/share/openmpi "$mpi/share/openmpi"
cp -L /etc/openmpi/* "$mpi/etc/" 2>/dev/null || true
# PMIx (Debian builds Open MPI against the system's libpmix2): its plugins and help texts.
if [[ -d /usr/lib/x86_64-linux-gnu/pmix2 ]]; then
  mkdir -p "$mpi/pmix" && cp -rL /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix "$mpi/pmix/lib" && cp -rL /usr/lib/x86_64-linux-gnu/pmix2/share "$mpi/pmix/share"
fi
# Every shared library mpirun, the plugins and the extra binaries need, but the C library's own
# (the machine has those, and they must match its loader) and the C++ runtime and zlib: the
# machine has newer ones, and DEST/mpi/lib is on LD_LIBRARY_PATH of every device stage (pairmd
# links libmpi; scripts/device_run.sh), where Debian's copies would shadow them for Python too.
skip='^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libresolv|libutil|libstdc\+\+|libgcc_s|libz)\.so'
for f in "$mpi/bin/"* "$mpi/lib/openmpi3/"*.so "$@"; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
  base=$(basename "$lib")
  [[ $base =~ $skip ]] && continue
  [[ -e $mpi/lib/$base ]] || cp -L "$lib" "$mpi/lib/$base"
done
cat > "$mpi/env.sh" <<'ENV'
# source DEST/mpi/env.sh: Open MPI from this directory (scripts/bundle_mpi.sh).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX=$here OPAL_EXEC_PREFIX=$here OPAL_BINDIR=$here/bin OPAL_LIBDIR=$here/lib
export OPAL_PKGLIBDIR=$here/lib/openmpi3 OPAL_DATAROOTDIR=$here/share OPAL_DATADIR=$here/share
export OPAL_PKGDATADIR=$here/share/openmpi OPAL_SYSCONFDIR=$here/etc
export PMIX_INSTALL_PREFIX=$here/pmix
export PATH=$here/bin:$PATH LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# The bundle leaves out the network-fabric plugins; one machine needs none: shared memory (vader)
# and self.
export OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
ENV
du -sh "$mpi"
