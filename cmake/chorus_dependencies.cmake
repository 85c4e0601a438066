# The packages chorus's link interface needs, in one list for the build (CMakeLists.txt)
# and for the installed package config (chorus-config.cmake), so the two cannot drift.
# `command` is find_package or find_dependency; extra arguments (REQUIRED) are forwarded.
macro(chorus_find_dependencies command)
  cmake_language(CALL ${command} OpenMP ${ARGN})
  cmake_language(CALL ${command} dnnl CONFIG ${ARGN})           # matmul kernels (needs OpenCL's CMake files)
  cmake_language(CALL ${command} fmt CONFIG ${ARGN})
  cmake_language(CALL ${command} nlohmann_json CONFIG ${ARGN})
  cmake_language(CALL ${command} CURL ${ARGN})                  # dataset downloads
  cmake_language(CALL ${command} LibArchive ${ARGN})            # dataset archive extraction
  cmake_language(CALL ${command} ZLIB ${ARGN})                  # gzipped IDX files
  cmake_language(CALL ${command} OpenSSL ${ARGN})               # libcrypto: SHA-256 of downloads
  cmake_language(CALL ${command} Gloo CONFIG ${ARGN})           # multi-worker collectives (target gloo)
  cmake_language(CALL ${command} ICU COMPONENTS uc i18n ${ARGN}) # text: normalisation, categories, case folding
  cmake_language(CALL ${command} PkgConfig ${ARGN})
  pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)           # text: regular expressions (no CMake config in Debian)
  pkg_check_modules(LIBDEFLATE REQUIRED IMPORTED_TARGET libdeflate) # gzipped IDX files inflated whole (no CMake config in 1.14)
  cmake_language(CALL ${command} Protobuf ${ARGN})              # TensorBoard event files (protobuf::libprotobuf)
  # FarmHash's Fingerprint64 (the Hashing layer, OOV buckets): Debian's libfarmhash-dev ships
  # neither a CMake config nor a pkg-config file, so the imported target is made here.
  find_library(CHORUS_FARMHASH_LIBRARY farmhash ${ARGN})
  find_path(CHORUS_FARMHASH_INCLUDE_DIR farmhash.h ${ARGN})
  if(NOT CHORUS_FARMHASH_LIBRARY OR NOT CHORUS_FARMHASH_INCLUDE_DIR)
    set(${CMAKE_FIND_PACKAGE_NAME}_NOT_FOUND_MESSAGE "libfarmhash (Debian's libfarmhash-dev) was not found")
    set(${CMAKE_FIND_PACKAGE_NAME}_FOUND FALSE)
    return()
  endif()
  if(NOT TARGET Farmhash::farmhash)
    add_library(Farmhash::farmhash UNKNOWN IMPORTED)
    set_target_properties(Farmhash::farmhash PROPERTIES IMPORTED_LOCATION ${CHORUS_FARMHASH_LIBRARY}
                          INTERFACE_INCLUDE_DIRECTORIES ${CHORUS_FARMHASH_INCLUDE_DIR})
  endif()
endmacro()
