# `cmake --install` and `cpack`: the library, its headers and a CMake package
# (find_package(chorus CONFIG) → chorus::chorus), and a Debian package libchorus-dev whose
# Depends are the -dev packages of chorus_dependencies.cmake.
include(GNUInstallDirs)

# `cmake --install` and `cpack` package the library as built and do not first build every
# target: the README's demo build (library + demo) is enough to package, with no tests.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
include(CMakePackageConfigHelpers)

set(CHORUS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/chorus)
install(TARGETS chorus EXPORT chorus-targets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/chorus/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/chorus
        FILES_MATCHING PATTERN "*.h")
install(EXPORT chorus-targets NAMESPACE chorus:: DESTINATION ${CHORUS_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/chorus-config.cmake.in
                              ${PROJECT_BINARY_DIR}/chorus-config.cmake INSTALL_DESTINATION ${CHORUS_CMAKE_DIR})
# 0.x: every minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/chorus-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/chorus-config.cmake ${PROJECT_BINARY_DIR}/chorus-config-version.cmake
              ${PROJECT_SOURCE_DIR}/cmake/chorus_dependencies.cmake
        DESTINATION ${CHORUS_CMAKE_DIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME libchorus-dev)
set(CPACK_PACKAGE_VENDOR "chorus")
set(CPACK_PACKAGE_CONTACT "chorus developers <chorus@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
# The -dev packages whose CMake configs chorus-config.cmake finds, plus g++ for OpenMP.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "g++, libdnnl-dev, ocl-icd-opencl-dev, libfmt-dev, nlohmann-json3-dev, libcurl4-openssl-dev, libarchive-dev, zlib1g-dev, libdeflate-dev, libssl-dev, libgloo-dev, libicu-dev, libre2-dev, libfarmhash-dev, pkg-config, libprotobuf-dev")
include(CPack)
