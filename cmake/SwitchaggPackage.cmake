# Installing switchagg beyond `cmake --install`:
#
# 1. The CMake package (both layouts): find_package(switchagg) gives
#    switchagg::ctlclient and switchagg::dataclient (with the static
#    libraries they stand on) and their public headers.
# 2. Debian packages (scripts/package.sh runs CPack's DEB generator): the
#    same build installed a second time in Debian's layout, through install
#    components deb_* that a plain `cmake --install` leaves out
#    (EXCLUDE_FROM_ALL). Binaries in /usr/bin, the coll component in Open
#    MPI's own component directory (so Open MPI loads it with no
#    mca_base_component_path), the SPANK plugin in Slurm's plugin directory,
#    the unit in /lib/systemd/system, examples in /etc as conffiles.

include(CMakePackageConfigHelpers)

# ---------------------------------------------------------------------------
# 1. CMake package
set(_sa_client_targets switchagg_common switchagg_ucx switchagg_wire switchagg_ctlclient
    switchagg_clientcore switchagg_dataclient)
set_target_properties(switchagg_clientcore PROPERTIES EXPORT_NAME clientcore)
set_target_properties(switchagg_ctlclient PROPERTIES EXPORT_NAME ctlclient)
set_target_properties(switchagg_dataclient PROPERTIES EXPORT_NAME dataclient)
set_target_properties(switchagg_common PROPERTIES EXPORT_NAME common)
set_target_properties(switchagg_ucx PROPERTIES EXPORT_NAME ucx)
set_target_properties(switchagg_wire PROPERTIES EXPORT_NAME wire)
set(_sa_headers
  ${PROJECT_SOURCE_DIR}/common/include/switchagg
  ${PROJECT_SOURCE_DIR}/ucx_module/include/switchagg
  ${PROJECT_SOURCE_DIR}/switchagent/include/switchagg
  ${CMAKE_BINARY_DIR}/common/include/switchagg)  # version.h
write_basic_package_version_file(${CMAKE_BINARY_DIR}/switchaggConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)

# switchagg_client_package(<export set> <libdir> <component args...>):
# the libraries, headers and config files of the CMake package, with the
# libraries in <libdir> and the config in <libdir>/cmake/switchagg.
function(switchagg_client_package export libdir)
  install(TARGETS ${_sa_client_targets} EXPORT ${export}
    ARCHIVE DESTINATION ${libdir} ${ARGN}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(DIRECTORY ${_sa_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} ${ARGN}
    FILES_MATCHING PATTERN "*.h")
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/switchaggConfig.cmake.in
    ${CMAKE_BINARY_DIR}/${export}/switchaggConfig.cmake
    INSTALL_DESTINATION ${libdir}/cmake/switchagg)
  install(EXPORT ${export} NAMESPACE switchagg:: FILE switchaggTargets.cmake
    DESTINATION ${libdir}/cmake/switchagg ${ARGN})
  install(FILES ${CMAKE_BINARY_DIR}/${export}/switchaggConfig.cmake
                ${CMAKE_BINARY_DIR}/switchaggConfigVersion.cmake
    DESTINATION ${libdir}/cmake/switchagg ${ARGN})
endfunction()
switchagg_client_package(switchaggTargets ${SWITCHAGG_INSTALL_LIBDIR})

# ---------------------------------------------------------------------------
# 2. Debian packages
option(SWITCHAGG_DEB "Debian packages with CPack (scripts/package.sh)" ON)
if(NOT SWITCHAGG_DEB)
  return()
endif()
if(NOT CMAKE_LIBRARY_ARCHITECTURE)
  message(STATUS "switchagg: no multiarch triplet known: no Debian packages")
  return()
endif()
set(_arch ${CMAKE_LIBRARY_ARCHITECTURE})
set(_deb_libdir lib/${_arch})
set(SWITCHAGG_DEB_MAINTAINER "switchagg maintainers <maintainers@users.noreply.a-seed-120a3b15.example>"
  CACHE STRING "Maintainer field of the Debian packages")

# Where Debian's Open MPI looks for components without being told
# (ompi_info --path pkglibdir); the packages install under /usr.
set(_ompi_pkglibdir "")
find_program(SWITCHAGG_OMPI_INFO ompi_info)
if(SWITCHAGG_OMPI_INFO AND TARGET mca_coll_switchagg)
  execute_process(COMMAND ${SWITCHAGG_OMPI_INFO} --path pkglibdir --parsable
    OUTPUT_VARIABLE _ompi_out OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  string(REGEX REPLACE "^path:pkglibdir:" "" _ompi_pkglibdir "${_ompi_out}")
endif()
# The MCA ABI is not stable across minor releases: the component package
# depends on the Debian package holding the libmpi it was built against, at
# this major.minor.
set(_ompi_pkg "")
if(TARGET mca_coll_switchagg)
  get_filename_component(_ompi_libmpi "${MPI_mpi_LIBRARY}" REALPATH)
  execute_process(COMMAND dpkg-query -S ${_ompi_libmpi} OUTPUT_VARIABLE _ompi_owner
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  string(REGEX MATCH "^[^:,]+" _ompi_pkg "${_ompi_owner}")
  if(NOT _ompi_pkglibdir MATCHES "^/usr/lib/" OR NOT _ompi_pkg)
    message(STATUS "switchagg: Open MPI is not Debian's (pkglibdir '${_ompi_pkglibdir}', "
                   "${_ompi_libmpi} in package '${_ompi_pkg}'): no Debian package for the coll component")
  endif()
endif()

set(_deb_docs ${CMAKE_BINARY_DIR}/deb)
file(MAKE_DIRECTORY ${_deb_docs})
# Debian's per-package copyright and changelog (native package: changelog.gz).
string(TIMESTAMP _deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
file(WRITE ${_deb_docs}/changelog
  "switchagg (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
  "  * Packages built from the switchagg source tree (scripts/package.sh).\n\n"
  " -- ${SWITCHAGG_DEB_MAINTAINER}  ${_deb_date}\n")
execute_process(COMMAND gzip -9nf ${_deb_docs}/changelog RESULT_VARIABLE _gz_rc)
if(NOT _gz_rc EQUAL 0)
  message(FATAL_ERROR "gzip failed on ${_deb_docs}/changelog")
endif()

set(_deb_components "")
# switchagg_deb_package(<component> <package name> SECTION s SUMMARY line
#   DESCRIPTION text [DEPENDS d] [RECOMMENDS r] [CONFFILES f...] [SCRIPTS s...])
function(switchagg_deb_package comp name)
  cmake_parse_arguments(P "" "SECTION;SUMMARY;DESCRIPTION;DEPENDS;RECOMMENDS"
    "CONFFILES;SCRIPTS" ${ARGN})
  string(TOUPPER ${comp} C)
  set(CPACK_DEBIAN_${C}_PACKAGE_NAME ${name} PARENT_SCOPE)
  set(CPACK_DEBIAN_${C}_PACKAGE_SECTION ${P_SECTION} PARENT_SCOPE)
  set(CPACK_COMPONENT_${C}_DESCRIPTION "${P_SUMMARY}\n${P_DESCRIPTION}" PARENT_SCOPE)
  set(CPACK_DEBIAN_${C}_PACKAGE_DEPENDS "${P_DEPENDS}" PARENT_SCOPE)
  set(CPACK_DEBIAN_${C}_PACKAGE_RECOMMENDS "${P_RECOMMENDS}" PARENT_SCOPE)
  set(extra "")
  if(P_CONFFILES)
    string(REPLACE ";" "\n" lines "${P_CONFFILES}")
    file(WRITE ${_deb_docs}/${name}/conffiles "${lines}\n")
    list(APPEND extra ${_deb_docs}/${name}/conffiles)
  endif()
  foreach(s IN LISTS P_SCRIPTS)
    configure_file(${PROJECT_SOURCE_DIR}/config/debian/${name}.${s} ${_deb_docs}/${name}/${s}
      COPYONLY)
    list(APPEND extra ${_deb_docs}/${name}/${s})
  endforeach()
  set(CPACK_DEBIAN_${C}_PACKAGE_CONTROL_EXTRA "${extra}" PARENT_SCOPE)
  install(FILES ${PROJECT_SOURCE_DIR}/config/debian/copyright ${_deb_docs}/changelog.gz
    DESTINATION share/doc/${name} COMPONENT ${comp} EXCLUDE_FROM_ALL)
  set(_deb_components ${_deb_components} ${comp} PARENT_SCOPE)
endfunction()

# switchagg_deb_install(<component> <dir> <targets...>): the targets into
# <dir> (relative to /usr), without the build's RUNPATH (Debian's loader
# paths find everything they link).
function(switchagg_deb_install comp dir)
  foreach(t IN LISTS ARGN)
    install(TARGETS ${t}
      RUNTIME DESTINATION ${dir} COMPONENT ${comp} EXCLUDE_FROM_ALL
      LIBRARY DESTINATION ${dir} COMPONENT ${comp} EXCLUDE_FROM_ALL)
    install(CODE "file(RPATH_REMOVE FILE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${dir}/$<TARGET_FILE_NAME:${t}>\")"
      COMPONENT ${comp} EXCLUDE_FROM_ALL)
  endforeach()
endfunction()

# The systemd unit with this layout's paths.
file(READ ${PROJECT_SOURCE_DIR}/config/switchagg-agent.service _unit)
string(REPLACE "/usr/local/bin/" "/usr/bin/" _unit "${_unit}")
string(REGEX REPLACE "^[^[]*\n\\[Unit\\]" "# switchagg-agent.service of the switchagg-agent package: the agent as\n# systemd runs it (docs/admin.md in the source tree). Set the addresses in\n# /etc/switchagg/agent.toml, then `systemctl enable --now switchagg-agent`.\n[Unit]"
  _unit "${_unit}")
file(WRITE ${_deb_docs}/switchagg-agent.service "${_unit}")

# switchagg-agent: the daemon, the admin CLI, the unit, the policy file.
switchagg_deb_install(deb_agent bin switchagg-agent switchagg-ctl switchagg-ucx-bench)
install(FILES ${_deb_docs}/switchagg-agent.service DESTINATION /lib/systemd/system
  COMPONENT deb_agent EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/config/agent.toml DESTINATION /etc/switchagg
  COMPONENT deb_agent EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/config/fabric.toml ${PROJECT_SOURCE_DIR}/config/fabric-pool.toml
  DESTINATION share/doc/switchagg-agent/examples
  COMPONENT deb_agent EXCLUDE_FROM_ALL)
switchagg_deb_package(deb_agent switchagg-agent SECTION net
  SUMMARY "switch aggregation agent for offloaded MPI allreduce"
  DESCRIPTION "The switchagg agent owns a switch's pool of aggregation slots: jobs lease
slots through its control API (switchagg-ctl, the Slurm plugin), their ranks
stream vectors to it over UCX, and it reduces them in rank order and sends
every result chunk back. Ships the systemd unit (switchagg-agent.service, not
enabled on install) and the example policy /etc/switchagg/agent.toml."
  DEPENDS "adduser"
  CONFFILES /etc/switchagg/agent.toml
  SCRIPTS postinst postrm)

if(TARGET mca_coll_switchagg AND _ompi_pkglibdir MATCHES "^/usr/lib/" AND _ompi_pkg)
  string(REGEX REPLACE "^/usr/" "" _ompi_dir "${_ompi_pkglibdir}")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _ompi_mm "${SWITCHAGG_OMPI_VERSION}")
  string(REGEX REPLACE "^([0-9]+)\\.([0-9]+)$" "\\1" _ompi_major "${_ompi_mm}")
  string(REGEX REPLACE "^([0-9]+)\\.([0-9]+)$" "\\2" _ompi_minor "${_ompi_mm}")
  math(EXPR _ompi_minor_next "${_ompi_minor} + 1")
  switchagg_deb_install(deb_openmpi ${_ompi_dir} mca_coll_switchagg)
  switchagg_deb_install(deb_openmpi bin switchagg-bench switchagg-info switchagg-train switchagg-cg
    switchagg-mpit)
  install(FILES ${PROJECT_SOURCE_DIR}/config/selection.rules DESTINATION /etc/switchagg
    COMPONENT deb_openmpi EXCLUDE_FROM_ALL)
  # The modulefile (prefix /usr: it sets only SWITCHAGG_PREFIX) where
  # environment-modules looks, and a link where Lmod looks (/etc/lmod/modules
  # in /etc/lmod/modulespath: /usr/share/lmod/lmod is Lmod's own symlink,
  # which a directory of ours there would break).
  file(READ ${PROJECT_SOURCE_DIR}/config/modulefile-switchagg _mf)
  string(REGEX REPLACE "\nset prefix [^\n]*" "\nset prefix /usr" _mf "${_mf}")
  string(REGEX REPLACE "\nset ompi_components [^\n]*" "\nset ompi_components ${_ompi_pkglibdir}"
    _mf "${_mf}")
  file(WRITE ${_deb_docs}/modulefile/${PROJECT_VERSION} "${_mf}")
  install(FILES ${_deb_docs}/modulefile/${PROJECT_VERSION} DESTINATION share/modules/modulefiles/switchagg
    COMPONENT deb_openmpi EXCLUDE_FROM_ALL)
  file(MAKE_DIRECTORY ${_deb_docs}/lmod)
  file(CREATE_LINK /usr/share/modules/modulefiles/switchagg ${_deb_docs}/lmod/switchagg SYMBOLIC)
  install(FILES ${_deb_docs}/lmod/switchagg DESTINATION /etc/lmod/modules
    COMPONENT deb_openmpi EXCLUDE_FROM_ALL)
  switchagg_deb_package(deb_openmpi switchagg-openmpi SECTION net
    SUMMARY "Open MPI collectives component with switch aggregation"
    DESCRIPTION "The coll/switchagg component serves MPI_Allreduce and friends with tuned
host algorithms (ring, recursive doubling, Rabenseifner, hierarchical) over
UCX, or through a switch aggregation agent when the job holds a lease. It is
installed in Open MPI's own component directory, so every mpirun loads it
(opt out per job with --mca coll ^switchagg). Also ships switchagg-bench,
switchagg-info, switchagg-train and switchagg-cg."
    DEPENDS "${_ompi_pkg} (>= ${_ompi_mm}), ${_ompi_pkg} (<< ${_ompi_major}.${_ompi_minor_next})"
    RECOMMENDS "openmpi-bin"
    CONFFILES /etc/switchagg/selection.rules)
endif()

if(TARGET switchagg_spank)
  set(SWITCHAGG_DEB_SLURM_PLUGINDIR ${_deb_libdir}/slurm-wlm CACHE STRING
      "Slurm's plugin directory (PluginDir) relative to /usr, for the Debian package")
  file(STRINGS ${SLURM_SPANK_INCLUDE_DIR}/slurm/slurm_version.h _slurm_v
    REGEX "^#define SLURM_VERSION_NUMBER ")
  string(REGEX MATCH "0x([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])" _m "${_slurm_v}")
  math(EXPR _slurm_major "0x${CMAKE_MATCH_1}")
  math(EXPR _slurm_minor "0x${CMAKE_MATCH_2}")
  math(EXPR _slurm_minor_next "${_slurm_minor} + 1")
  if(_slurm_minor LESS 10)
    set(_slurm_minor "0${_slurm_minor}")
  endif()
  if(_slurm_minor_next LESS 10)
    set(_slurm_minor_next "0${_slurm_minor_next}")
  endif()
  switchagg_deb_install(deb_slurm ${SWITCHAGG_DEB_SLURM_PLUGINDIR} switchagg_spank)
  # The plugstack line, as an example next to where Debian's plugstack.conf
  # includes *.conf from; the admin copies it to switchagg.conf to enable it.
  file(READ ${PROJECT_SOURCE_DIR}/config/plugstack.conf _plugstack)
  string(REPLACE "/usr/local/lib/slurm/" "/usr/${SWITCHAGG_DEB_SLURM_PLUGINDIR}/" _plugstack
    "${_plugstack}")
  file(WRITE ${_deb_docs}/switchagg.conf.example "${_plugstack}")
  install(FILES ${_deb_docs}/switchagg.conf.example DESTINATION /etc/slurm/plugstack.conf.d
    COMPONENT deb_slurm EXCLUDE_FROM_ALL)
  # Slurm loads only plugins built for its own major.minor release.
  switchagg_deb_package(deb_slurm switchagg-slurm SECTION admin
    SUMMARY "Slurm SPANK plugin reserving switch aggregation per job"
    DESCRIPTION "Adds --switch-agg=off|auto|require and --switch-agg-slots=N to srun, sbatch
and salloc: the plugin creates a lease on the switchagg agent for the job and
hands it to the job's tasks. Enable it by copying
/etc/slurm/plugstack.conf.d/switchagg.conf.example to switchagg.conf."
    DEPENDS "slurm-wlm-basic-plugins (>= ${_slurm_major}.${_slurm_minor}), slurm-wlm-basic-plugins (<< ${_slurm_major}.${_slurm_minor_next})"
    CONFFILES /etc/slurm/plugstack.conf.d/switchagg.conf.example)
endif()

if(TARGET switchagg_pmpi)
  # A preloaded interposer, not a library to link: private directory, no SONAME.
  switchagg_deb_install(deb_pmpi ${_deb_libdir}/switchagg switchagg_pmpi)
  switchagg_deb_package(deb_pmpi switchagg-pmpi SECTION net
    SUMMARY "switchagg collectives for MPICH through the profiling interface"
    DESCRIPTION "libswitchagg_pmpi.so gives MPICH-family jobs the switchagg collectives
(host algorithms and switch aggregation): preload
/usr/${_deb_libdir}/switchagg/libswitchagg_pmpi.so into
the job's processes."
    DEPENDS "libmpich12")
endif()

# switchagg-dev: the CMake package and headers.
switchagg_client_package(switchaggDebTargets ${_deb_libdir} COMPONENT deb_dev EXCLUDE_FROM_ALL)
set(_dev_depends "libucx-dev, nlohmann-json3-dev, libibverbs-dev, pkg-config")
if(MUNGE_LIBRARY)
  string(APPEND _dev_depends ", libmunge-dev")
endif()
switchagg_deb_package(deb_dev switchagg-dev SECTION libdevel
  SUMMARY "switchagg agent client libraries (CMake package and headers)"
  DESCRIPTION "Static libraries and headers of the switchagg agent's control client and
data-plane client, with a CMake package: find_package(switchagg) gives the
imported targets switchagg::ctlclient and switchagg::dataclient."
  DEPENDS "${_dev_depends}")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME switchagg)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "${SWITCHAGG_DEB_MAINTAINER}")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${_deb_components})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
include(CPack)
