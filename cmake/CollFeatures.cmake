# Detect optional parts and remember each one for the closing report.
include(CheckLanguage)
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(spdlog REQUIRED)

# Lines are kept in a global property so any folder can add one.
function(coll_feature name enabled detail howto)
  if(enabled)
    set(line "  [x] ${name}: ${detail}")
  else()
    set(line "  [ ] ${name}: NOT built - ${howto}")
  endif()
  set_property(GLOBAL APPEND PROPERTY COLL_FEATURE_LINES "${line}")
endfunction()

# hwloc: topology (CPUs, NUMA, PCI).  COLL_USE_HWLOC=OFF builds the sysfs
# reader alone, as on a machine without hwloc.
option(COLL_USE_HWLOC "Read the topology with hwloc where it is found" ON)
if(COLL_USE_HWLOC)
  pkg_check_modules(HWLOC IMPORTED_TARGET hwloc)
  set(hwloc_howto "apt-get install libhwloc-dev (topology from sysfs only, COLL_TOPO_FILE needs hwloc)")
else()
  set(HWLOC_FOUND OFF)
  set(hwloc_howto "COLL_USE_HWLOC=OFF (topology from sysfs only, COLL_TOPO_FILE needs hwloc)")
endif()
coll_feature("hwloc" "${HWLOC_FOUND}" "hwloc ${HWLOC_VERSION} found: topology from hwloc (NUMA nodes, PCI GPUs and network ports), COLL_TOPO_FILE"
             "${hwloc_howto}")
set(COLL_HAVE_HWLOC ${HWLOC_FOUND})

# libibverbs: the InfiniBand/RoCE transport (transports/ib).  Only the
# header is needed to build: the library is dlopened at run time
# (transports/ib/verbs_api.h), so the binaries run where rdma-core is absent
# and COLL_IBVERBS_LIB can name another provider (the emulation in tests).
include(CheckIncludeFileCXX)
check_include_file_cxx(infiniband/verbs.h COLL_HAVE_IBVERBS)
coll_feature("ibverbs" "${COLL_HAVE_IBVERBS}"
             "IB transport (COLL_NET; verbs loaded at run time, COLL_IBVERBS_LIB), RDMA devices in colltopo, the emulated verbs provider for tests"
             "apt-get install libibverbs-dev (no IB transport: infiniband/verbs.h not found)")

# CUDA: kernels and collectives on device buffers.  check_language never needs a GPU.
# COLL_CUDA_EMULATION=ON builds the same CUDA code for the host instead
# (kernels/cuda/emulation: the .cu files through the C++ compiler, an
# emulated runtime for libcudart), to run the device path where no GPU is.
option(COLL_CUDA_EMULATION "Build the CUDA code for the host, on an emulated CUDA runtime (tests; no GPU code)" OFF)
check_language(CUDA)
if(COLL_CUDA_EMULATION)
  find_package(CUDAToolkit QUIET)  # the headers only
endif()
if(COLL_CUDA_EMULATION AND NOT CUDAToolkit_FOUND)
  set(COLL_HAVE_CUDA OFF)
  set(COLL_CUDA_EMULATION OFF)
  coll_feature("CUDA" OFF "" "COLL_CUDA_EMULATION=ON needs the CUDA toolkit's headers (CUDAToolkit_ROOT), none found")
elseif(COLL_CUDA_EMULATION)
  set(COLL_HAVE_CUDA ON)
  coll_feature("CUDA" ON "EMULATED on the host (COLL_CUDA_EMULATION=ON): the device code built by ${CMAKE_CXX_COMPILER_ID} against kernels/cuda/emulation's runtime, CUDA ${CUDAToolkit_VERSION} headers (no GPU code: tests/gpu runs on host threads)" "")
elseif(CMAKE_CUDA_COMPILER)
  set(COLL_HAVE_CUDA ON)
  coll_feature("CUDA" ON "nvcc at ${CMAKE_CUDA_COMPILER}: device kernels, P2P transport over CUDA IPC (transports/p2p), collectives on device buffers (coll::device), tests/gpu, perf/device_perf" "")
else()
  set(COLL_HAVE_CUDA OFF)
  coll_feature("CUDA" OFF "" "install the CUDA toolkit (nvcc on PATH or CUDACXX)")
endif()

# Catch2 2.x for the unit tests.
find_package(Catch2 QUIET)
coll_feature("Catch2 tests" "${Catch2_FOUND}" "Catch2 ${Catch2_VERSION}"
             "apt-get install catch2")

coll_feature("spdlog logging" ON "spdlog ${spdlog_VERSION}" "")


function(coll_feature_report)
  message(STATUS "")
  message(STATUS "libcoll ${PROJECT_VERSION} configuration (${CMAKE_BUILD_TYPE}, sanitizers: ${COLL_SANITIZE}):")
  get_property(lines GLOBAL PROPERTY COLL_FEATURE_LINES)
  foreach(l IN LISTS lines)
    message(STATUS "${l}")
  endforeach()
  message(STATUS "")
endfunction()
