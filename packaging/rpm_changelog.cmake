# WriteRpmChangelog(IN OUT): converts the Debian changelog IN into the body of an RPM
# %changelog at OUT, newest entry first, so the two packages carry the same history:
#   jobctl (0.1.0-1) unstable; urgency=medium        * Sun Nov 22 2026 A <a@b> - 0.1.0-1
#     * Text                                    ->   - Text
#       more text                                      more text
#    -- A <a@b>  Sun, 22 Nov 2026 04:52:55 +0000
function(WriteRpmChangelog in out)
  file(READ "${in}" text)
  # Keep semicolons out of CMake's list splitting.
  string(REPLACE ";" "<semicolon>" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(result "")
  set(version "")
  set(body "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[a-z0-9.+-]+ \\(([^)]+)\\)")
      set(version "${CMAKE_MATCH_1}")
      set(body "")
    elseif(line MATCHES "^  \\* (.*)$")
      string(APPEND body "- ${CMAKE_MATCH_1}\n")
    elseif(line MATCHES "^    (.*)$")
      string(APPEND body "  ${CMAKE_MATCH_1}\n")
    elseif(line MATCHES "^ -- (.+)  ([A-Z][a-z][a-z]), ([0-9]+) ([A-Z][a-z][a-z]) ([0-9]+) ")
      set(who "${CMAKE_MATCH_1}")
      set(date "${CMAKE_MATCH_2} ${CMAKE_MATCH_4} ${CMAKE_MATCH_3} ${CMAKE_MATCH_5}")
      string(APPEND result "* ${date} ${who} - ${version}\n${body}\n")
    endif()
  endforeach()
  string(REPLACE "<semicolon>" ";" result "${result}")
  file(WRITE "${out}" "${result}")
endfunction()
