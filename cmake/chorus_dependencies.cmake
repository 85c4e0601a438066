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
  cmake_language(CALL ${command} Protobuf ${ARGN})              # TensorBoard event files (protobuf::libprotobuf)
endmacro()
