# Runs inside cpack once per generator, after the files are staged and before they are
# packed (CPACK_PRE_BUILD_SCRIPTS). It makes the only differences between .deb and .rpm:
# - .deb: no /var/lib/jobctl or /var/lib/agentd; the postinst creates them with their owner
#   and mode, and the postrm removes them on purge (dpkg cannot own a directory as jobctl).
# - .rpm: the zsh completion goes to site-functions, which Fedora's zsh reads (Debian's reads
#   vendor-completions); no changelog.Debian.gz (the history is in %changelog) and no
#   lintian overrides.
# For both it strips the .comment section (compiler versions) from the binaries, as dh_strip
# does (lintian: binary-has-unneeded-section).
find_program(strip_tool strip)
file(GLOB_RECURSE staged LIST_DIRECTORIES true "${CPACK_TEMPORARY_DIRECTORY}/*")
foreach(path IN LISTS staged)
  if(NOT EXISTS "${path}")
    continue()  # under a directory removed earlier in this loop
  endif()
  if(path MATCHES "/usr/s?bin/[^/]+$" AND strip_tool)
    execute_process(COMMAND "${strip_tool}" --remove-section=.comment --remove-section=.note
                            "${path}" COMMAND_ERROR_IS_FATAL ANY)
  elseif(CPACK_GENERATOR STREQUAL "DEB" AND path MATCHES "/var/lib/(jobctl|agentd)$")
    file(REMOVE_RECURSE "${path}")
    # And the then empty /var/lib and /var (lintian: package-contains-empty-directory).
    string(REGEX REPLACE "/lib/[a-z]+$" "" var "${path}")
    file(GLOB left "${var}/lib/*")
    if(NOT left)
      file(REMOVE_RECURSE "${var}")
    endif()
  elseif(CPACK_GENERATOR STREQUAL "RPM" AND path MATCHES "/usr/share/doc/[^/]+/changelog\\.Debian\\.gz$")
    file(REMOVE "${path}")
  elseif(CPACK_GENERATOR STREQUAL "RPM" AND path MATCHES "/usr/share/lintian$")
    file(REMOVE_RECURSE "${path}")
  elseif(CPACK_GENERATOR STREQUAL "RPM" AND path MATCHES "^(.*/usr/share/zsh)/vendor-completions/_jobctl$")
    set(zsh "${CMAKE_MATCH_1}")
    file(MAKE_DIRECTORY "${zsh}/site-functions")
    file(RENAME "${path}" "${zsh}/site-functions/_jobctl")
    file(REMOVE_RECURSE "${zsh}/vendor-completions")
  endif()
endforeach()
