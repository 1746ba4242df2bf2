# `cmake --install build --prefix P` puts attn and attn-gui in P/bin, the web playground (a WebAssembly
# build's site, its threaded build in mt/) in P/share/attnlab/web and attn-playground (serves that site
# cross-origin isolated) in P/bin; `cpack -G DEB` in the build folder makes attnlab_*.deb of the same.
include(GNUInstallDirs)
install(TARGETS attn RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
if(TARGET attn-gui)
  install(TARGETS attn-gui RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()
set(ATTN_WEB_SITE "${PROJECT_SOURCE_DIR}/build-web/web/site" CACHE PATH "the web playground to install")
set(ATTN_WEB_SITE_THREADED "${PROJECT_SOURCE_DIR}/build-web-mt/web/site" CACHE PATH
    "the threaded web playground to install (as mt/ of the site)")
set(web "${CMAKE_INSTALL_DATADIR}/attnlab/web")
install(DIRECTORY "${ATTN_WEB_SITE}/" DESTINATION "${web}" OPTIONAL)
install(DIRECTORY "${ATTN_WEB_SITE_THREADED}/" DESTINATION "${web}/mt" OPTIONAL)
install(PROGRAMS "${PROJECT_SOURCE_DIR}/scripts/serve.py" DESTINATION "${CMAKE_INSTALL_DATADIR}/attnlab")
configure_file("${CMAKE_CURRENT_LIST_DIR}/attn-playground.in" "${CMAKE_CURRENT_BINARY_DIR}/attn-playground" @ONLY)
install(PROGRAMS "${CMAKE_CURRENT_BINARY_DIR}/attn-playground" DESTINATION "${CMAKE_INSTALL_BINDIR}")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME attnlab)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "transformer attention computed step by step, with PyTorch's numbers")
set(CPACK_PACKAGE_CONTACT "attnlab maintainers")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # the libraries the binaries link (libglfw3, libgl1, …), by dpkg-shlibdeps
set(CPACK_DEBIAN_PACKAGE_DEPENDS "fonts-nanum, python3, python3-numpy")  # attn-gui's Hangul font; attn-playground's server; the Python module
include(CPack)
